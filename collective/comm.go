package collective

import "context"

// Comm is a communicator: a group of ranks that exchange tensors.
//
// Every collective must be called by every rank of the communicator, in the
// same order, with matching arguments. The I-prefixed forms start the
// operation and return at once; the plain forms are the I-forms followed by
// Wait. Out-of-place operations take distinct out and in tensors; passing the
// same memory is allowed where the shapes agree (in-place).
type Comm interface {
	// Rank is this process's index in the communicator, from 0 to Size()-1.
	Rank() int
	// Size is the number of ranks in the communicator.
	Size() int
	// Strategy is the registered name of the strategy that implements it.
	Strategy() string

	// Send delivers t to rank dst, to be matched by a Recv with the same tag.
	Send(ctx context.Context, t Tensor, dst, tag int) error
	// Recv receives a message from rank src with the given tag into t, whose
	// size must equal the message's.
	Recv(ctx context.Context, t Tensor, src, tag int) error
	ISend(ctx context.Context, t Tensor, dst, tag int) Work
	IRecv(ctx context.Context, t Tensor, src, tag int) Work

	// AllReduce reduces t across all ranks with op and leaves the result in t on every rank.
	AllReduce(ctx context.Context, t Tensor, op Op) error
	// Reduce reduces t across all ranks into t on root; other ranks' t is left unspecified.
	Reduce(ctx context.Context, t Tensor, root int, op Op) error
	// Broadcast copies root's t into t on every rank.
	Broadcast(ctx context.Context, t Tensor, root int) error
	// AllGather concatenates every rank's in, in rank order, into out (Size()×in.Count()).
	AllGather(ctx context.Context, out, in Tensor) error
	// ReduceScatter reduces in (Size()×out.Count()) across ranks and leaves block Rank() in out.
	ReduceScatter(ctx context.Context, out, in Tensor, op Op) error
	// Gather concatenates every rank's in into out on root; out is ignored elsewhere.
	Gather(ctx context.Context, out, in Tensor, root int) error
	// Scatter sends block i of root's in to rank i's out; in is ignored elsewhere.
	Scatter(ctx context.Context, out, in Tensor, root int) error
	// AllToAll sends block j of in to rank j, which stores it as block Rank() of out.
	AllToAll(ctx context.Context, out, in Tensor) error
	// Barrier returns once every rank has entered it.
	Barrier(ctx context.Context) error

	IAllReduce(ctx context.Context, t Tensor, op Op) Work
	IReduce(ctx context.Context, t Tensor, root int, op Op) Work
	IBroadcast(ctx context.Context, t Tensor, root int) Work
	IAllGather(ctx context.Context, out, in Tensor) Work
	IReduceScatter(ctx context.Context, out, in Tensor, op Op) Work
	IGather(ctx context.Context, out, in Tensor, root int) Work
	IScatter(ctx context.Context, out, in Tensor, root int) Work
	IAllToAll(ctx context.Context, out, in Tensor) Work
	IBarrier(ctx context.Context) Work

	// NewGroup returns a communicator over a subset of this one's ranks,
	// given as ranks of this communicator; the new group's rank i is ranks[i].
	// Every member must call it with the same list, in the same order
	// relative to its other NewGroup calls; non-members need not call it.
	NewGroup(ranks []int) (Comm, error)

	// Close releases the communicator. Closing the top-level communicator
	// closes its transport; closing a group does not.
	Close() error
}

// Work is an operation in flight.
type Work interface {
	// Wait blocks until the operation completes, or ctx ends. A ctx that
	// ends first does not cancel the operation; only its own deadline does.
	Wait(ctx context.Context) error
	// Done is closed when the operation has completed.
	Done() <-chan struct{}
}

// CloseWaiter is an optional Comm interface for communicators that serve the
// other ranks after this one is done with them (a colocated parameter
// server). A process calls CloseAndWait instead of Close before it exits, so
// that it does not take the service away from ranks still using it.
type CloseWaiter interface {
	CloseAndWait(ctx context.Context) error
}
