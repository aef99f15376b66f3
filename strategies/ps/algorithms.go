package ps

import (
	"context"
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// algorithms are the collectives of one group, each a round on the
// servers: every member pushes its part of a virtual tensor, the servers
// reduce (or place) the parts, and members pull what they need of the
// result. Every collective goes through the servers (none falls back to
// core.Simple); point-to-point send and receive stay on the transport mesh.
type algorithms struct {
	w  *world
	id uint64 // the group's identity on the servers
}

var _ core.Algorithms = (*algorithms)(nil)

// plan describes one collective as a round: a virtual tensor of count
// elements, reduced with op (0: each element is assigned by exactly one
// push), which this worker pushes from and pulls into at byte regions.
type plan struct {
	name    string // "allreduce", for errors
	dt      collective.DType
	op      collective.Op
	count   int
	contrib int // pushes per element: the group's size to reduce, 1 to assign
	pullers int // pulls per element, summed over the group's members
	push    []region
	pull    []region
	// inPlace: push and pull are the same memory (allreduce), so over the
	// mesh a colocated server may accumulate in it (server.lendLocal).
	inPlace bool
}

// run carries out a plan: for each server holding a piece of the virtual
// tensor, a push stream of this worker's pieces (split at the chunk grid)
// and a pull of the range it needs, all concurrently, so that a server
// streams back each chunk of the result as soon as every push has brought
// it, while later chunks are still arriving.
func (a *algorithms) run(c *core.Call, p plan) error {
	w := a.w
	es := p.dt.Size()
	chunk := w.chunk(p.dt)
	rotate := int((a.id + uint64(c.Seq())) % uint64(w.k))
	var jobs []job
	for _, sh := range layout(p.count, es, w.k, rotate, w.o.partition) {
		conn := w.conns[sh.server]
		h := header{
			kind: kindPush, dtype: p.dt, op: p.op, rank: uint32(w.cfg.Rank),
			contrib: uint32(p.contrib), chunk: uint32(chunk),
			group: a.id, seq: int64(c.Seq()),
			shard: uint64(sh.len()), pull: uint64(p.pullers * sh.len()),
		}
		pieces := cut(p.push, sh, chunk)
		var pulls []pullReq
		for _, r := range p.pull {
			if off, dst, ok := within(r, sh); ok {
				req := h
				req.kind, req.offset, req.length = kindPull, uint64(off), uint64(len(dst))
				pulls = append(pulls, pullReq{req, dst})
			}
		}
		switch {
		case w.tr != nil && conn.local != nil && p.inPlace && p.op != 0:
			mem := p.push[0].data[sh.lo-p.push[0].off : sh.hi-p.push[0].off]
			jobs = append(jobs, job{sh.server, func(ctx context.Context) error {
				return conn.errorf("push", conn.local.lendLocal(ctx, h, mem))
			}})
		case conn.mesh != nil: // one request stream: the push, then the pulls
			var push *header
			if len(pieces) > 0 {
				push = &h
			}
			jobs = append(jobs, job{sh.server, func(ctx context.Context) error {
				return conn.meshErr("push and pull", conn.mesh.exchange(ctx, push, pieces, pulls))
			}})
		default:
			if len(pieces) > 0 {
				jobs = append(jobs, job{sh.server, func(ctx context.Context) error { return conn.push(ctx, h, pieces) }})
			}
			for _, r := range pulls {
				jobs = append(jobs, job{sh.server, func(ctx context.Context) error { return conn.pull(ctx, r.h, r.dst) }})
			}
		}
	}
	return w.exchange(c.Ctx(), fmt.Sprintf("%s #%d", p.name, c.Seq()), jobs)
}

// block is the byte region of block i of n-element blocks of dt.
func block(dt collective.DType, per, i int, data []byte) region {
	return region{off: i * per * dt.Size(), data: data}
}
