//go:build cgo

package nccl

import (
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// algorithms maps the engine's collectives onto one NCCL communicator,
// staging host tensors through device memory and passing device tensors
// as they are (device.go). The engine has checked the arguments, rewritten
// Avg as Sum and a division for host tensors (device tensors get ncclAvg),
// and kept groups of one rank away.
type algorithms struct {
	c *ncomm
}

var _ core.Algorithms = (*algorithms)(nil)

// ncclType is NCCL's ncclDataType_t for dt (nccl.h: ncclInt8 0, ncclUint8
// 1, ncclInt32 2, ncclUint32 3, ncclInt64 4, ncclUint64 5, ncclFloat16 6,
// ncclFloat32 7, ncclFloat64 8, ncclBfloat16 9, and from NCCL 2.24
// ncclFloat8e4m3 10, ncclFloat8e5m2 11).
func ncclType(dt collective.DType) int {
	switch dt {
	case collective.Int8:
		return 0
	case collective.Uint8:
		return 1
	case collective.Uint32:
		return 3
	case collective.Uint64:
		return 5
	case collective.Float8E4M3:
		return 10
	case collective.Float8E5M2:
		return 11
	case collective.Int32:
		return 2
	case collective.Int64:
		return 4
	case collective.Float16:
		return 6
	case collective.Float32:
		return 7
	case collective.Float64:
		return 8
	case collective.BFloat16:
		return 9
	}
	return -1
}

// ncclOp is NCCL's ncclRedOp_t for op (ncclSum 0, ncclProd 1, ncclMax 2,
// ncclMin 3, ncclAvg 4). MulSum has no fixed number (NCCL creates a
// pre-multiplying op per scalar); the engine rewrites it as Sum first.
func ncclOp(op collective.Op) int {
	switch op {
	case collective.Sum:
		return 0
	case collective.Prod:
		return 1
	case collective.Max:
		return 2
	case collective.Min:
		return 3
	case collective.Avg:
		return 4
	}
	return -1
}

const ncclUint8 = 1

func (a *algorithms) collective(call *core.Call, what string, kind int, send, recv uintptr, count int, dt collective.DType, op collective.Op, root int) error {
	c := a.c
	rc := collectiveCall(c.dev, kind, send, recv, count, ncclType(dt), max(ncclOp(op), 0), root, c.h, c.stream)
	return c.issued(call.Ctx(), what, rc)
}

func (a *algorithms) AllReduce(call *core.Call, t collective.Tensor, op collective.Op) error {
	defer a.c.hold()()
	d, err := a.c.src(0, t)
	if err != nil {
		return err
	}
	if err := a.collective(call, "allreduce", opAllReduce, d, d, t.Count(), t.DType, op, 0); err != nil {
		return err
	}
	return a.c.result(t, d)
}

func (a *algorithms) Reduce(call *core.Call, t collective.Tensor, root int, op collective.Op) error {
	defer a.c.hold()()
	d, err := a.c.src(0, t)
	if err != nil {
		return err
	}
	if err := a.collective(call, "reduce", opReduce, d, d, t.Count(), t.DType, op, root); err != nil {
		return err
	}
	if call.Rank() != root {
		return nil
	}
	return a.c.result(t, d)
}

func (a *algorithms) Broadcast(call *core.Call, t collective.Tensor, root int) error {
	defer a.c.hold()()
	var d uintptr
	var err error
	if call.Rank() == root {
		d, err = a.c.src(0, t)
	} else {
		d, err = a.c.dst(0, t)
	}
	if err != nil {
		return err
	}
	if err := a.collective(call, "broadcast", opBroadcast, d, d, t.Count(), t.DType, 0, root); err != nil {
		return err
	}
	if call.Rank() == root {
		return nil
	}
	return a.c.result(t, d)
}

func (a *algorithms) AllGather(call *core.Call, out, in collective.Tensor) error {
	return a.outOfPlace(call, "allgather", opAllGather, out, in, in.Count(), 0)
}

func (a *algorithms) ReduceScatter(call *core.Call, out, in collective.Tensor, op collective.Op) error {
	return a.outOfPlace(call, "reducescatter", opReduceScatter, out, in, out.Count(), op)
}

// outOfPlace runs a collective from in to out, each in device memory of
// its own; count is the element count NCCL takes for it.
func (a *algorithms) outOfPlace(call *core.Call, what string, code int, out, in collective.Tensor, count int, op collective.Op) error {
	defer a.c.hold()()
	din, err := a.c.srcApart(0, in, out)
	if err != nil {
		return err
	}
	dout, err := a.c.dst(1, out)
	if err != nil {
		return err
	}
	if err := a.collective(call, what, code, din, dout, count, in.DType, op, 0); err != nil {
		return err
	}
	return a.c.result(out, dout)
}

// group issues sends and receives of bytes as one NCCL group and waits.
func (a *algorithms) group(call *core.Call, what string, ops []p2p) error {
	c := a.c
	return c.issued(call.Ctx(), what, groupCall(c.dev, ops, ncclUint8, c.h, c.stream))
}

func (a *algorithms) Gather(call *core.Call, out, in collective.Tensor, root int) error {
	defer a.c.hold()()
	pb := in.Bytes()
	if call.Rank() != root {
		din, err := a.c.src(0, in)
		if err != nil {
			return err
		}
		return a.group(call, "gather", []p2p{{send: true, peer: root, buf: din, count: pb}})
	}
	dout, err := a.c.dst(1, out)
	if err != nil {
		return err
	}
	var ops []p2p
	for r := range call.Size() {
		if r != root {
			ops = append(ops, p2p{peer: r, buf: dout + uintptr(r*pb), count: pb})
		}
	}
	if err := a.group(call, "gather", ops); err != nil {
		return err
	}
	if err := a.c.ownFrom(out, root*pb, in); err != nil {
		return err
	}
	if out.Mem != nil {
		return nil
	}
	for r := range call.Size() {
		if r != root {
			if err := a.c.download(out.Data[r*pb:(r+1)*pb], dout+uintptr(r*pb)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *algorithms) Scatter(call *core.Call, out, in collective.Tensor, root int) error {
	defer a.c.hold()()
	pb := out.Bytes()
	if call.Rank() != root {
		dout, err := a.c.dst(1, out)
		if err != nil {
			return err
		}
		if err := a.group(call, "scatter", []p2p{{peer: root, buf: dout, count: pb}}); err != nil {
			return err
		}
		return a.c.result(out, dout)
	}
	din, err := a.c.src(0, in)
	if err != nil {
		return err
	}
	var ops []p2p
	for r := range call.Size() {
		if r != root {
			ops = append(ops, p2p{send: true, peer: r, buf: din + uintptr(r*pb), count: pb})
		}
	}
	if err := a.group(call, "scatter", ops); err != nil {
		return err
	}
	if out.Mem != nil {
		if err := a.c.mine(out); err != nil {
			return err
		}
	}
	return a.c.copyOwn(out, 0, din+uintptr(root*pb), pb)
}

func (a *algorithms) AllToAll(call *core.Call, out, in collective.Tensor) error {
	defer a.c.hold()()
	n, me := call.Size(), call.Rank()
	pb := in.Bytes() / n
	din, err := a.c.srcApart(0, in, out)
	if err != nil {
		return err
	}
	dout, err := a.c.dst(1, out)
	if err != nil {
		return err
	}
	var ops []p2p
	for r := range n {
		if r != me {
			ops = append(ops, p2p{send: true, peer: r, buf: din + uintptr(r*pb), count: pb},
				p2p{peer: r, buf: dout + uintptr(r*pb), count: pb})
		}
	}
	if err := a.group(call, "alltoall", ops); err != nil {
		return err
	}
	// in's own block, from the device: in may share out's memory.
	if err := a.c.copyOwn(out, me*pb, din+uintptr(me*pb), pb); err != nil {
		return err
	}
	if out.Mem != nil {
		return nil
	}
	for r := range n {
		if r != me {
			if err := a.c.download(out.Data[r*pb:(r+1)*pb], dout+uintptr(r*pb)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Barrier is a one-element allreduce.
func (a *algorithms) Barrier(call *core.Call) error {
	defer a.c.hold()()
	d, err := a.c.staged(0, 4)
	if err != nil {
		return err
	}
	return a.collective(call, "barrier", opAllReduce, d, d, 1, collective.Float32, collective.Sum, 0)
}
