// Package collective is distbench's one collective-communication API, modelled
// on torch.distributed so that its users feel at home.
//
// Everything above it (the harness, the training workloads) is written against
// [Comm]; everything below it (transport, rendezvous) is shared by the
// strategies that implement it, and what those implement (a transport, the
// rendezvous store, a strategy's server processes) is declared apart, in
// package [github.com/distbench/distbench/collective/driver], as
// database/sql keeps its drivers' contract in database/sql/driver. Strategies
// register themselves from init, as database/sql drivers do:
//
//	import _ "github.com/distbench/distbench/strategies/all"
//
//	comm, err := collective.New(ctx, "ring", cfg)
//	...
//	err = comm.AllReduce(ctx, collective.FromFloat32(grad), collective.Sum)
//
// # Semantics
//
// Collectives are issued in the same order on every rank of a communicator and
// run one at a time in that order; the I-prefixed forms (IAllReduce, ISend, …)
// return a [Work] at once, as torch's async_op=True does. Point-to-point
// messages are matched by (source, tag) in FIFO order and never wait behind a
// collective, so exchanges written as isend+irecv on both sides do not deadlock.
//
// Tensors are typed views of host memory, or of device memory ([DeviceMemory]):
// strategies that are not [DeviceNative] get device tensors staged through
// pinned host memory around each operation, as gloo does. Reductions of float16 and bfloat16
// are computed in float32 and rounded once per step. [Avg] is a sum divided by
// the group size at the end; on integer types that division truncates.
//
// A strategy that cannot do an operation answers [ErrUnsupported]; it never
// fakes one. Failures name where they happened: a [PeerError] carries the
// peer's rank and address, and an [OpError] the operation and its sequence
// number. A [TimeoutError] also says, where the transport can tell (a
// [driver.Diagnoser]), why what it waited for did not come: the chain of waits
// from the peer it waited for to the rank that stalls the job.
package collective
