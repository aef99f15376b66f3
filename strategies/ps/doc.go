// Package ps is the parameter-server strategy: k servers hold shards of
// every tensor, workers push to them and pull from them, and the servers do
// the reduction, as in the parameter servers of DistBelief, MXNet's KVStore
// and BytePS. Its data travels over the job's own transport mesh (option
// transport=mesh, the default) or over gRPC (transport=grpc), so that what
// gRPC costs a parameter server is itself a benchmark.
//
// # Transports
//
// Over the mesh, pushes and pulls are tagged messages of the project's
// transport (tags with bit 62 set, which the engine's never are; mesh.go),
// with everything the ring has: aligned frames, receives posted ahead,
// link shaping, heartbeats, the handshake and the abort. A server posts
// each pushed piece as a reducing receive, so the connection's reader
// reduces it straight into the round's accumulator a few kilobytes at a
// time; the first arrival at each byte is copied there instead (a per-chunk
// high-water mark says where something has arrived), with no staging
// buffer either way. Pulls are sent from the accumulator. A colocated
// worker's own part of an in-place reduction (allreduce) costs no copy at
// all: it lends its tensor as the accumulator of its shard, the other
// workers' pushes are reduced into it and their pulls sent from it, and it
// returns once they have pulled (round_lend.go). At np 2 such an allreduce
// moves, copies and reduces exactly what a ring's does.
//
// Nothing of the control plane needs gRPC over the mesh either: the mesh's
// handshake already proves every peer's rank and job, its heartbeats
// already tell a stopped peer from a starved one, and its abort already
// reaches every rank, servers included; hello, abort and goodbye are
// therefore a header each, or nothing. Keeping gRPC for them would mean a
// second set of connections, a second liveness regime and a second abort
// path to keep in agreement with the first, for messages the mesh carries
// anyway. gRPC carries everything for transport=grpc, as described below.
//
// # Roles and placement
//
// Servers are either colocated (the default: worker i < k also runs server
// i, in-process, a goroutine started by New) or dedicated (k extra
// processes beside the np workers, as BytePS's CPU servers: a launcher asks
// ServerProcesses how many, starts them and calls Serve in each). Over the
// mesh, dedicated servers are ranks of the job's mesh after the workers
// (server i is rank np+i; driver.ServerConfig.Transport), which a launcher
// builds for workers and servers alike; a colocated server is its worker's
// rank. Over gRPC, servers publish host:port under "ps/server/<i>" in the
// job's rendezvous store; workers read them there, dial, and check with a
// hello that each server is the one they expect, of a job of their size.
// New never waits for another process: connections are made in the
// background and operations wait for the ones they need. A colocated worker
// reaches its own server by direct calls rather than through the loopback
// network stack, as BytePS uses shared memory for its local server.
//
// # Collectives
//
// Every collective is a round on the servers, keyed by the communicator's
// identity (a hash of its members and of how many groups with those
// members were made before) and the collective's sequence number, the same
// on every worker. The round's virtual tensor is cut into at most k
// contiguous element ranges, one per server, balanced in bytes (small
// tensors into fewer pieces, see "partition"); which server gets the first
// piece rotates with the round, so small tensors spread over all servers.
// Each piece is streamed in chunks. Allreduce is push + pull: every worker
// pushes each piece to its server while pulling the result; a server
// copies the first arrival of each chunk into a preallocated (pooled)
// accumulator and reduces later ones into it with kernels.Reduce,
// straight from gRPC's receive buffers, and streams each chunk back to the
// pullers as soon as every worker's contribution to it has arrived, while
// later chunks are still coming in. A chunk is never pulled into a worker's
// tensor before that worker's own push of it has arrived, which is what
// makes in-place operation safe. Reduce, broadcast, allgather,
// reduce-scatter, gather, scatter and alltoall are the same machinery with
// different push and pull ranges (pieces that are copied instead of
// reduced for the gathers and scatters); barrier is an allreduce of one
// byte. Send and receive stay on the transport mesh. Floating-point
// reductions are taken in arrival order, so their last bits may vary from
// run to run, but every worker receives the same bits.
//
// # Training
//
// collective.ParamServer, reached from a ps world communicator by type assertion, holds
// parameters on the servers, which apply SGD with momentum to the gradients
// workers push; the option "staleness" selects synchronous (0) or
// asynchronous, bounded-staleness training. See collective.ParamServer.
// Synchronously, a step's gradients are summed in rank order once all have
// arrived, so a seed gives the same parameters, bit for bit, over either
// transport and whatever order the pushes arrive in. Over the mesh, a
// training push is acknowledged once applied (or refused, and why), as a
// gRPC push is.
//
// # Who may connect
//
// Over the mesh, the mesh's handshake admits only the job's ranks, and a
// request's header must carry its sender's rank. Over gRPC, every
// connection to a server opens with the project's one handshake
// (internal/wire, HMAC over the job token, as the mesh's and the store's,
// for the ps service, so that no other service's handshake passes), run by
// gRPC transport credentials before HTTP/2 starts: a process without the
// job's token (Config.Token, ServerConfig.Token, which every worker and
// server must have) is refused before it can send an RPC, and the token
// never crosses the wire. The handshake proves a worker's rank; a message
// that claims another is refused. A message that breaks the protocol (a
// header that does not decode, a range outside its shard, more
// contributions than workers, a shard larger than the machine's memory) is
// refused with an error naming its sender, and fails the job only if the
// stream that carried it had already changed the server's state.
//
// # Failure
//
// Over the mesh, a server that finds a request broken, or a pull it cannot
// answer by the operation's deadline, fails and aborts the mesh with why;
// a worker whose pull runs into its own deadline asks the server what it
// waited for (a why), and names it as stopped or stuck if it does not
// answer within the diagnosis budget; a dead peer is the mesh's to find,
// with its rank and address. The rest of this section is gRPC's.
//
// Every RPC runs under the operation's deadline (Config.Timeout). A server
// that dies fails the RPCs in flight to it at once (its connections reset)
// and later ones as soon as a connection is refused, with a *ServerError
// naming the server's index and host:port. A worker whose operation fails
// first tells every other server why (an Abort RPC), then cancels its
// streams; a server that learns of a failure — an abort, a stream broken
// mid-way, a round whose workers disagree, a worker's connection that ends
// before its goodbye — latches it and fails everything waiting on it and
// everything asked of it later, so every worker fails promptly with an
// error that leads back to the cause, as core's transport abort does for
// the mesh. Servers stop once every worker has said goodbye (Close), or
// for colocated servers one operation timeout after their own worker
// closed at the latest.
//
// A wait that reaches the deadline says what it waited for: which ranks
// have pushed the round and, for a reduction over every worker, which
// have not, with their addresses. A server answers so just before the
// deadline; if that answer cannot reach the worker in time (a request that
// arrived late), the worker asks the server (a Why RPC) within half the
// timeout, at most 1 s, and a server that does not answer then is named as
// stopped or stuck.
//
// # Liveness
//
// Over the mesh, liveness is the mesh's (internal/transport). Over gRPC: a
// stopped process (SIGSTOP, a hung host) and a starved one (a saturated
// CPU) look alike to TCP, whose kernel acknowledges data for both. They
// differ in gRPC's HTTP/2 pings, which user-space goroutines answer: late
// when starved, never when stopped. Both ends ping a connection silent for
// 10 s and declare the peer dead once nothing, not even the ack, has come
// for the peer timeout (option peer-timeout, default 60 s, at least 20 s),
// which leaves a starved process 50 s (10 s at least) to answer. Bounds:
//
//   - a stopped or vanished server: every worker with a call to it fails
//     within the peer timeout of the server's last frame, with an error
//     naming the server and its address; the others learn it through the
//     abort of the first. Within the operation's timeout instead, plus the
//     why's second, where that is shorter.
//   - a stopped worker: each server closes its connection within the peer
//     timeout of its last frame (and the second or two gRPC gives a
//     connection to drain before it closes it) and fails the job naming
//     the worker's rank and address, whether or not one of its calls was
//     in flight; within
//     the operation's timeout where that is shorter, naming it as a rank
//     the round still waits for where the round is a reduction over every
//     worker.
//
// # Wire format and gRPC settings
//
// The service (service.go) is declared by hand, as protoc-gen-go-grpc would
// generate it, with one message type: a fixed 80-byte little-endian header
// (header.go) and raw tensor bytes, through a codec registered as
// "distbench-ps-raw" (codec.go). Marshal hands gRPC the caller's memory
// without a copy, Unmarshal keeps references to gRPC's receive buffers
// instead of copying out, and no protobuf or 4 MiB default limit applies.
// Headers are checked against limits before anything is allocated or
// indexed with them (fuzz-tested). The gRPC settings are deliberate
// (grpcopts.go):
//
//   - Message size: MaxRecvMsgSize and MaxSendMsgSize are one chunk at its
//     largest (16 MiB, the chunk option's limit) plus a header, on both
//     sides: no legitimate message is larger, and a peer cannot make the
//     other allocate more.
//   - Flow control: static windows of 64 MiB per stream and 256 MiB per
//     connection, instead of 64 KiB grown by bandwidth-delay estimation,
//     which stalls a multi-megabyte push on loopback every few frames; a
//     whole 32 MiB shard can be in flight. The receiver's memory is bounded
//     by the same figures.
//   - Buffers: 1 MiB write buffers (HTTP/2 frames are 16 KiB; gRPC's default
//     32 KiB costs a system call every two), released between bursts, and
//     512 KiB read buffers per connection. Received frames land in a pool
//     that, unlike gRPC's default, does not zero buffers it hands out
//     (gRPC fills each one from the wire before anyone reads it): zeroing
//     cost a tenth of the CPU time of a large allreduce.
//   - Keepalive: see Liveness. Servers allow pings every 5 s, so they never
//     answer with GOAWAY "too_many_pings"; a client channel never idles
//     (gRPC's default closes an idle connection after 30 minutes, which a
//     server would take for its worker's death).
//   - At most 1024 concurrent streams per connection; retries are off (a
//     collective cannot be retried by one rank alone, and a retry would
//     replay a payload gRPC had to keep a copy of).
//   - Credentials: the handshake (see Who may connect), no TLS: like the
//     TCP transport, the servers are meant for the job's own network,
//     whose traffic the handshake authenticates but does not encrypt;
//     bind them to it (host option, ServerConfig.ListenHost).
//
// Chunks of 1 MiB (option "chunk") keep per-message costs small against
// the copy while a large tensor still pipelines in dozens of chunks.
//
// # Options
//
//	transport     mesh (default) or grpc: what the servers' data travels over
//	servers       number of servers k; default: one per worker
//	placement     colocated (default) or dedicated
//	staleness     training: 0 synchronous (default), s > 0 bounded staleness
//	chunk         streaming unit, 64B to 16MiB; default 1MiB
//	partition     smallest piece a tensor is split into across servers; default 256KiB
//	host          gRPC: address colocated servers listen on; default 127.0.0.1
//	peer-timeout  gRPC: a peer silent this long, keepalive acks included, is dead; default 60s
//	local_agg     1: allreduce reduces within each host before the push, as BytePS
//	              does (core.Hierarchy: only a host's owner of each shard
//	              pushes and pulls it); 0 (default): every worker pushes
package ps
