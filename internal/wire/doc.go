// Package wire is distbench's byte-level protocol between ranks: the fixed
// frame header every message carries, and the handshake that opens each
// connection. It does no I/O of its own beyond the handshake; the TCP mesh in
// internal/transport reads and writes frames with it.
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
// stream. A sender writes a frame with one writev, and the kernel copies the
// payload into pages it fills in stream order; a receiver reads a payload
// into its own (aligned) buffer. When every frame is a multiple of 64 bytes,
// source and destination of those copies sit at the same offset within a
// cache line. Where they do not, the copy can be an order of magnitude
// slower: on AMD Zen 3 (EPYC Milan), whose kernel copies with rep movsb, a
// 64 KiB copy runs at 27–43 GB/s with the destination 0, 32, 40, 48 or 56
// bytes past the source modulo 64, and at 3 GB/s with it 8, 16 or 24 bytes
// past. With 24-byte headers and no padding, the offset of each payload
// shifted by 24 bytes per frame, so that a fixed subset of a rank's
// messages, kept iteration after iteration, copied at a tenth of the speed:
// a 64 MiB ring allreduce at np 2 alternated between 21 and 33 ms per
// iteration for seconds at a time. The padding costs at most 103 bytes a
// frame. (Strictly, the kernel fills a per-thread page fragment, so a
// sender's payloads are aligned when everything that thread writes to TCP
// is a multiple of 64 bytes. Handshake records are not; an offset they
// leave lasts until the kernel recycles the fragment's page, which in
// measurements happened before it mattered.)
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
// Every connection starts with a handshake of small length-prefixed records
// (at most 512 bytes each). The dialing side is the client:
//
//	client → server  hello  {rank, world size, job id, nonce_c}
//	server → client  hello  {rank, world size, job id, nonce_s}
//	server → client  auth   HMAC-SHA256(token, "server" ‖ transcript)
//	client → server  auth   HMAC-SHA256(token, "client" ‖ transcript)
//	server → client  accept
//
// where the transcript is the job id, both ranks, the world size and both
// nonces. Each side proves that it holds the job token without sending it,
// over a nonce the other side has just drawn, so a peer without the token is
// refused and a recorded handshake cannot be replayed; the role label stops a
// MAC from being reflected back. Either side may answer a reject record with
// a reason instead; [HandshakeError] then says what was wrong (job id, world
// size, rank, MAC, version) and with whom, and errors.Is matches the
// sentinels ([ErrJobMismatch], [ErrAuth], …) on both sides. All handshake I/O
// runs under a deadline.
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
