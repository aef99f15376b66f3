// Package wire is distbench's byte-level protocol between ranks: the fixed
// frame header every message carries, and the handshake that opens each
// connection of a job (mesh, store and parameter server alike). It does no
// I/O of its own beyond the handshake; the TCP mesh in internal/transport
// reads and writes frames with it.
//
// # Frames
//
// A frame is a [HeaderSize]-byte header, Length payload bytes, and [PadLen]
// zero bytes up to the next multiple of [FrameAlign] (64). All integers are
// little-endian:
//
//	offset size field
//	0      2    magic   0xDB5C: catches a stray client and a stream out of sync
//	2      1    version [Version]
//	3      1    kind    data, abort, close, heartbeat, wait query or reply ([Kind])
//	4      4    reserved, zero (a later version may give them a meaning)
//	8      8    tag     the message tag (data frames), the query id (wait frames)
//	16     8    length  payload bytes that follow
//	24     40   reserved, zero
//
// Why the padding: every payload then starts at a multiple of 64 bytes in the
// stream, so the kernel's copies into and out of socket buffers see source
// and destination at the same offset within a cache line. Misaligned, those
// copies can run an order of magnitude slower (on AMD Zen 3, whose kernel
// copies with rep movsb), and with 24-byte unpadded headers a fixed subset of
// a rank's messages did, iteration after iteration. The padding costs at most
// 103 bytes a frame. docs/tuning.md (frame alignment) has the measurements.
//
// [Header.Encode] and [DecodeHeader] work on a caller-provided array, so the
// hot path allocates nothing. DecodeHeader checks the length against the
// caller's limit (and an abort frame's against [MaxAbortText]) before the
// caller allocates anything for the payload, so that a corrupt or hostile
// header cannot make a rank allocate gigabytes.
//
// A wait query asks a peer what it is blocked in, to explain a timeout; the
// reply carries up to [MaxWaits] fixed-size [Wait] records (the peer waited
// for, the tag, how long), which [DecodeWaits] validates as strictly as
// DecodeHeader does a header.
//
// # Handshake
//
// Every connection that carries a job's data starts with this handshake:
// the mesh between ranks, a client's connection to the rendezvous store, a
// worker's to a parameter server. It is made of small length-prefixed
// records (at most 512 bytes each). The dialing side is the client:
//
//	client → server  hello  {rank, world size, service, job id, nonce_c}
//	server → client  hello  {rank, world size, service, job id, nonce_s}
//	server → client  auth   HMAC-SHA256(token, "server" ‖ transcript)
//	client → server  auth   HMAC-SHA256(token, "client" ‖ transcript)
//	server → client  accept
//
// where the transcript is the service, the job id, both ranks, the world
// size and both nonces. Each side proves that it holds the job token without
// sending it, over a nonce the other side has just drawn, so a peer without
// the token is refused and a recorded handshake cannot be replayed; the role
// label stops a MAC from being reflected back, and the [Service] stops a
// handshake made for one service (a mesh connection) from being accepted by
// another that shares the token (the store). Either side may answer a
// reject record with a reason instead; [HandshakeError] then says what was
// wrong (service, job id, world size, rank, MAC, version) and with whom, and
// errors.Is matches the sentinels ([ErrJobMismatch], [ErrAuth], …) on both
// sides. All handshake I/O runs under a deadline.
//
// # Usage
//
//	// dialing side, which expects to reach rank 0
//	err := wire.ClientHandshake(ctx, conn, wire.HandshakeConfig{JobID: job, Token: tok, Rank: 3, Size: 4}, 0)
//
//	// accepting side
//	peer, err := wire.ServerHandshake(ctx, conn, cfg, func(rank int) error { ... })
//
//	// frames
//	var b [wire.HeaderSize]byte
//	wire.Header{Kind: wire.KindData, Tag: 7, Length: uint64(len(p))}.Encode(&b)
//	h, err := wire.DecodeHeader(&b, maxMessage)
package wire
