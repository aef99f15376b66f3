// Package transport moves tagged messages between the ranks of one job. It
// implements driver.Transport twice: over TCP between processes ([TCP],
// the mesh distbench measures, with shared memory for ranks on one host
// when asked), and in memory between goroutines ([Mem], for unit tests,
// with seeded delays to shake out ordering bugs).
//
// Both share one matching engine, [Mailbox]: per source rank, messages are
// matched to receives by tag in FIFO order. A receive posted before its
// message arrives is filled in place by the connection's reader, with no
// intermediate copy; a message that arrives first waits in the unexpected
// queue, as in MPI's eager protocol.
//
// # The TCP mesh
//
// [NewTCP] builds a full mesh: each rank listens on TCPOptions.ListenHost
// (127.0.0.1 by default, port chosen by the system), publishes host:port in
// the job's rendezvous store under "transport/addr/<rank>", and then the
// higher rank of each pair dials the lower one, retrying until
// ConnectTimeout. Every connection opens with the handshake of
// internal/wire (for the mesh service), which proves that both ends hold
// the job's token and agree on job id, world size and ranks; a stray or hostile connection is refused
// and logged without disturbing the mesh. Handshakes run concurrently, at
// most 64 at once: a new connection closes the oldest not yet admitted, and
// a dialer whose handshake was closed retries, so a flood of silent
// connections delays a rank by a round trip, not a handshake timeout.
// Sockets run with TCP_NODELAY and 4 MiB buffers.
//
// Each message is one frame (a 64-byte header, the payload, and zero
// padding to a multiple of 64 bytes: see internal/wire for why) written
// with writev under a per-connection write lock, so the payload is never
// copied on the way out. One reader goroutine per connection reads each
// header, checks its length against MaxMessage before allocating anything,
// and reads the payload straight into the posted receive's buffer when
// there is one.
//
// # Failures
//
// Every blocking call has a deadline: sends take theirs from the context,
// and receives return a *collective.TimeoutError naming the peer ("rank 2
// (10.0.0.3:4123)"). A dead peer (connection closed, reset or silent) fails
// the receives waiting on it, and later sends to it, with a
// *collective.PeerError naming its rank and address.
//
// Silence alone does not make a peer dead. A stopped process (SIGSTOP, a
// hung host) and one starved of CPU (a loaded machine, a long pause) look
// alike on the wire, since the kernel acknowledges TCP for both; but a
// starved process answers late, and a stopped one never. So a peer that has
// sent nothing for PeerTimeout (30s by default), not even the heartbeat an
// idle connection sends every HeartbeatInterval, is probed with a frame its
// reader answers at once, and declared dead only if nothing at all arrives
// for ProbeTimeout (twice PeerTimeout by default) more. The bound: a
// stopped peer is declared dead PeerTimeout + ProbeTimeout (90s by default)
// after the last frame it sent, and a live one is never declared dead if
// its process runs long enough, within ProbeTimeout of the probe, to
// answer it (or to send anything else). A deadline that finds bytes
// waiting in the socket means that this rank ran late (it was starved or
// stopped itself), not the peer, and counts for nothing. An operation's own
// deadline, when shorter, fails it first, and a diagnosis (below) names the
// rank that does not answer.
//
// [TCP.Abort] sends every peer an abort frame carrying the reason; each
// peer then fails all its pending and later operations, from every source,
// with a PeerError naming the aborting rank and "aborted: <reason>", so the
// whole job learns of a failure within a round trip rather than at its
// deadlines. [TCP.Close] says goodbye instead: messages already sent are
// still delivered, and the peer's later receives from this rank fail at
// once with [ErrPeerClosed], without any error being logged.
//
// A stalled peer (alive, but stuck in compute, deadlocked, or stopped) is
// harder: every rank then times out at about the same time, each on its own
// neighbour. So both transports implement driver.Diagnoser: a rank
// that timed out asks the peer it waited for what that peer is blocked in,
// then the rank it names, and so on, until a rank blocked in nothing, one
// that does not answer, or a cycle. A rank's answer (its wait state) lists
// the receives its goroutines are blocked in, one per peer, the one that
// timed out first (a rank keeps reporting that one, so that it is not
// mistaken for a rank waiting for nothing while the others diagnose), and
// over TCP the sends in progress. A posted receive that nobody waits for
// yet (by Wait, or by Done, which a caller asks for as it blocks) does not
// count. Over TCP a wait query is a frame like any other; the
// connection's reader answers it from the mailboxes at once, even while its
// rank is busy, and a goroutine per connection writes the reply, so that
// the reader never waits for the write lock. The message path pays for this
// with a clock reading it makes anyway and a few atomic stores, no lock nor
// allocation.
//
// # Shared memory within a host
//
// With TCPOptions.Transport "auto" (or "shm", which fails the mesh when a
// pair cannot share memory), ranks that published the same host identity
// (driver.Topology) carry their payloads through shared memory, beside TCP
// in the same mesh. Once the mesh has formed, the lower rank of each such
// pair creates a segment in /dev/shm and publishes its name in the store;
// the higher maps it and unlinks it at once, and the lower unlinks it too,
// so that nothing stays in /dev/shm however either process ends later,
// kill -9 included. (A process killed in the moment between creating a
// segment and its peer's mapping it leaves that one behind; segment names
// carry the creator's pid, and the next job on the host removes those of
// dead creators.) A pair that cannot map the segment stays on TCP.
//
// A segment holds two single-producer single-consumer rings, one per
// direction, each a byte stream of 64-byte frame headers and payloads,
// with head and tail counters on cache lines of their own. A sender copies
// its message into the ring and publishes it a piece at a time, so the
// receiver starts before the sender has finished, and returns as soon as
// the message is in the ring (a message larger than the ring streams
// through it). One reader goroutine per peer matches frames to receives
// through the same Mailbox as TCP's readers: into a posted receive's
// buffer, reduced straight out of the ring for PostRecvReduce, or into the
// unexpected queue. A receiver that waits for a message from a peer over
// shared memory takes whole frames out of the ring itself while it spins,
// sharing the consumer end with the reader through a flag, so that a small
// message reaches it with no hand-off between goroutines (the hand-off
// was half of a 4 KiB allreduce; docs/design/shm.md). Waiters poll without
// system calls while
// TCPOptions.Spin allows (the launcher sets it only when every process has
// a core), then park on a futex on the counter they wait for; the other
// end wakes them only when a flag says one is parked. A single-copy path,
// the receiver reading a large message out of the sender's memory with
// process_vm_readv as Open MPI's vader does, is there but off unless
// DISTBENCH_SHM_CMA names a threshold: it measured slower than the ring
// here (see shmEnvCMA).
//
// The pair's TCP connection stays, for control: heartbeats and liveness,
// wait queries, goodbye and abort. A peer that dies (its connection ends)
// or says goodbye fails its receives once its ring is drained, so that
// messages sent before a Close are still delivered; a send that waits for
// room in the ring honours its deadline and the peer's failure. Link
// shaping applies to TCP pairs only: a shaped link models the network
// between hosts, and "tcp" shapes every pair.
//
// # Link shaping
//
// TCPOptions.Link makes loopback (or a fast network) behave like a slower
// one: a [Link] has a rate, paced by egress and ingress token buckets shared
// by all of a process's connections as a NIC is, and a one-way latency,
// applied by a delay line per connection. [linkspec.ParseLink] reads forms such as
// "10Gbit,25us", "800Mbit", presets ("1g", "10g", "25g", "100g", "lan",
// "wan") and "none"; [linkspec.ParseRankLinks] a job's links with per-rank
// overrides, "10Gbit,25us;rank3=1Gbit", each process shaping its own NIC
// by its rank's. The latency is added to the host's own (tens of
// microseconds on loopback). Waits use nanosleep(2), with the thread's
// timer slack cut from the kernel's 50µs to 1µs, because Go timers may wake
// a millisecond late. A delay is slept to its end, never cut short, and
// never spun: with more ranks than cores a spinning delay line would take
// the core its peer needs. With latency set, received payloads go through
// fresh memory rather than straight into the posted buffer, so that
// matching happens when the message becomes visible, in order.
//
// # Usage
//
//	tr, err := transport.NewTCP(ctx, transport.TCPOptions{
//		Rank: rank, Size: size, Store: store,
//		JobID: jobID, Token: token, // the launcher hands every rank the same
//	})
//	if err != nil {
//		return err
//	}
//	defer tr.Close()
//	cfg := collective.Config{Rank: rank, Size: size, Transport: tr, Store: store}
package transport
