package ps

import (
	"fmt"
	"hash/fnv"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

// AllReduce is push + pull: every worker pushes its pieces of t to the
// servers holding them, each server reduces the pushes of a chunk into its
// accumulator as they arrive, and every worker pulls the reduced pieces back
// into t, chunk by chunk as they complete. A chunk is pulled into t only
// after this worker's own push of it has arrived, so t is safe to overwrite.
//
// With local_agg=1 a host's ranks first reduce among themselves, as BytePS
// does, so that only one contribution per host crosses its NIC to each
// server: core.Hierarchy reduce-scatters within the host, the owners of
// each shard (one per host) push and pull it, as a round of their own,
// and the host all-gathers. Where there are no hosts to tell apart, it is
// the plain push and pull.
func (a *algorithms) AllReduce(c *core.Call, t collective.Tensor, op collective.Op) error {
	if a.w.o.localAgg {
		if h := c.Hierarchy(); h != nil {
			return h.AllReduce(c, t, op, a.w.chunk(t.DType), a.acrossHosts)
		}
	}
	return a.pushPull(c, t, op)
}

// acrossHosts is the push and pull of one part of a hierarchical
// allreduce by its owners: a round of a group of its own on the servers,
// named by its members and part, so that the parts of one operation, which
// share its sequence number, do not meet in one round.
func (a *algorithms) acrossHosts(c *core.Call, t collective.Tensor, op collective.Op) error {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/hier", a.id)
	for i := range c.Size() {
		fmt.Fprintf(h, "/%d", c.GlobalRank(i))
	}
	fmt.Fprintf(h, "/part %d", c.Part())
	return (&algorithms{w: a.w, id: h.Sum64()}).pushPull(c, t, op)
}

func (a *algorithms) pushPull(c *core.Call, t collective.Tensor, op collective.Op) error {
	return a.run(c, plan{
		name: "allreduce", dt: t.DType, op: op, count: t.Count(),
		contrib: c.Size(), pullers: c.Size(),
		push:    []region{{0, t.Data}},
		pull:    []region{{0, t.Data}},
		inPlace: true,
	})
}
