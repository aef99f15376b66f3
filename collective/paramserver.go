package collective

import "context"

// ParamServer is an optional Comm interface, as CloseWaiter is: the
// training mode only a parameter server has, servers that hold the
// parameters and apply the optimizer, workers that push gradients and pull
// parameters. The world communicator that New returns for the "ps"
// strategy implements it (groups made by NewGroup do not):
//
//	p, ok := comm.(collective.ParamServer)
//
// Keys name parameter tensors (at most 256 bytes); each is sharded over the
// servers like a collective's tensor. Every worker calls InitParams for a
// key once, then, for steps t = 0, 1, 2, …, PushGrad(t) and PullParams(t).
// The optimizer's fixed settings (SGD) come with InitParams, the learning
// rate with every PushGrad, so that a schedule (warm-up, step decay,
// cosine) can change it from one step to the next as a torch scheduler
// changes an optimizer's lr between steps. The option "staleness" (s)
// chooses the consistency:
//
//   - s = 0, synchronous: a server applies step t once every worker's step-t
//     gradient has arrived, as their mean, with the learning rate that came
//     with them; PullParams(t) returns the parameters after step t, the same
//     on every worker. This is what allreduce-averaged data parallelism
//     computes. Every worker's push of a step must carry the same rate: a
//     disagreement fails the job, as inits that disagree do.
//   - s > 0, asynchronous with bounded staleness (stale synchronous
//     parallel): a server applies each worker's gradient as it arrives,
//     divided by the number of workers, with the learning rate that came
//     with it; PullParams(t) waits only until the slowest worker has pushed
//     step t−s, so fast workers run up to s steps ahead on parameters
//     missing up to s steps of others' updates.
//
// The calls are independent of the collectives: they do not take sequence
// numbers and may overlap them, and calls for different keys may overlap
// each other. Each has the communicator's timeout. A failed call fails the
// job on the servers, as a failed collective does.
type ParamServer interface {
	// InitParams registers key on the servers with the optimizer's fixed
	// settings. Rank 0's init values are used; on the other ranks init is
	// overwritten with them when InitParams returns. Every worker must
	// call it with the same length and settings.
	InitParams(ctx context.Context, key string, init []float32, opt SGD) error
	// PushGrad sends this worker's gradient for step (0, 1, 2, … in turn),
	// to be applied with learning rate lr (finite; synchronously, the same
	// on every worker for a step).
	PushGrad(ctx context.Context, key string, grad []float32, step int, lr float32) error
	// PullParams fills dst with the parameters once every worker's
	// gradients through step − staleness are applied; step −1 asks for the
	// initial values.
	PullParams(ctx context.Context, key string, dst []float32, step int) error
}

// SGD is the servers' optimizer: stochastic gradient descent with
// momentum, as torch.optim.SGD (dampening 0, no Nesterov):
// v ← Momentum·v + g; p ← p − lr·v, where lr is the learning rate the
// gradient's PushGrad carried. Its fields are the settings fixed for the
// whole run.
type SGD struct {
	Momentum float32
}
