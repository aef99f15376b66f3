package collective

// WireCounter is an optional Comm interface, as CloseWaiter is: what the
// process behind this rank has really sent and received on behalf of the
// communicator's job, to set beside busbw, which is a formula that assumes
// a ring's traffic. The communicators of the built-in strategies implement
// it (those of ring, tree and ps, and the groups they make):
//
//	if wc, ok := comm.(collective.WireCounter); ok { before := wc.WireBytes() … }
//
// The counts are cumulative over the whole job (every group made from the
// world shares them); take differences around what is measured.
type WireCounter interface {
	WireBytes() WireBytes
}

// WireBytes is a count of payload bytes: message data, without framing,
// headers or control traffic (heartbeats, probes, acknowledgements). A
// strategy's own channels are counted with its transport's (a parameter
// server's gRPC streams); calls within the process move no bytes and are
// not counted.
type WireBytes struct {
	Sent, Recv int64
	// Servers is, for a strategy with dedicated server processes, the bytes
	// each server exchanged with this rank, from the server's side: Sent is
	// what server i sent this rank (its pulls), Recv what it received from
	// it (its pushes). Summed over the ranks, it is each server's traffic
	// with the workers. Nil without dedicated servers; colocated servers'
	// traffic is part of their host rank's Sent and Recv.
	Servers []WireBytes
}
