// Package bridge is the Go half of the C interface (capi/, libdistbench.so):
// a communicator built from the environment a launcher set, as a worker
// of the distbench binary builds its own (internal/rendezvous's Join,
// internal/transport's TCP mesh, collective.New), whose operations are
// issued at once and complete in issue order, each timed and, on the world's
// rank 0 with DISTBENCH_OUT set, recorded.
//
// It is kept apart from package main, which cgo's //export requires, so
// that it builds and tests like any other package, under -race and without
// cgo.
//
// # Usage
//
//	c, err := bridge.Open(ctx, os.Getenv) // RANK, WORLD_SIZE, MASTER_ADDR, DISTBENCH_STRATEGY, ...
//	if err != nil {
//		return err // a bad setting is one line naming it and what is accepted
//	}
//	defer c.Close()
//	op := c.AllReduce(collective.FromFloat32(grads), collective.Sum)
//	// ... more work, more operations ...
//	err = op.Wait(ctx) // names the rank, address and operation if a peer failed
//
// # Environment
//
// DISTBENCH_STRATEGY, DISTBENCH_OPTIONS (key=value,key=value),
// DISTBENCH_TRANSPORT, DISTBENCH_LINK, DISTBENCH_TIMEOUT, DISTBENCH_OUT,
// DISTBENCH_MODEL, DISTBENCH_TORCH_STORE and the launcher's variables; see
// capi/distbench.h. A communicator's keys in the store are under its job id
// (jobStore), so that several communicators (a torch job's groups) share
// one store.
//
// # Records
//
// Each operation's time is how long the communicator spent on it: from its
// issue, or from the completion of the operation before it if that came
// later, to its completion; summed over a step, it is the step's
// communication time, overlapped or not. See recorder for the records.
package bridge
