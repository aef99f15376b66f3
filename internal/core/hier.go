package core

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

// Hierarchy is how a group's ranks sit on hosts, for a hierarchical
// allreduce (Horovod's and NCCL's): reduce-scatter within each host, an
// allreduce of each shard across hosts by one rank per host, all-gather
// within each host. Only the middle phase crosses a NIC, and each host's
// NIC carries 2(m−1)/m of the buffer for m hosts however many ranks it
// has, where a flat ring across all the ranks makes it carry 2(N−1)/N × S
// for every ring edge that leaves the host (1.5 S at 2 hosts × 2 ranks, S
// with hierarchy).
//
// # Shards, for any layout
//
// The buffer is cut into K shards, K the largest number of ranks on one
// host. A host of k ranks gives local rank j the contiguous run of shards
// Block(K, k, j): one shard each on the largest hosts, several on smaller
// ones. Shard s is then reduced within every host by its owner there, and
// the owners of s, one per host, allreduce it across hosts. Every host's
// NIC carries every shard once in each direction of that allreduce, so a
// host of 1 rank beside a host of 3 carries what each host of 2 would; in
// the even case each rank carries its own shard, in parallel with the
// others of its host. Consecutive shards with the same owners go across
// as one allreduce, so hosts of equal size run exactly K of them.
//
// Within a host, ranks exchange directly (every rank sends every other its
// region; k−1 messages each way per rank, the same bytes as a ring, with
// no step waiting on another): within a host the links are memory, not a
// shared NIC.
type Hierarchy struct {
	hosts [][]int // group ranks per host, hosts ordered by their lowest rank
	host  int     // this rank's host
	local int     // this rank's index in hosts[host]
	k     int     // shards: the most ranks on one host
}

// Hierarchy returns the group's hosts as the transport knows them
// (driver.Topology), or nil when a hierarchical algorithm has nothing to
// gain: the transport does not say, every rank is on one host, or every
// rank is on its own. The strategy then runs its flat algorithm. It is
// computed once per group.
func (c *Call) Hierarchy() *Hierarchy {
	g := c.g
	g.hierOnce.Do(func() { g.hier = hierarchyOf(g.shared.tr, g.ranks, g.rank) })
	return g.hier
}

// hierarchyOf groups ranks (global) by host; me is this rank's index.
func hierarchyOf(tr driver.Transport, ranks []int, me int) *Hierarchy {
	topo, ok := tr.(driver.Topology)
	if !ok {
		return nil
	}
	byName := map[string]int{}
	h := &Hierarchy{}
	for r, global := range ranks {
		name := topo.HostOf(global)
		if name == "" {
			return nil // unknown: no two ranks may be taken to share a host
		}
		i, seen := byName[name]
		if !seen {
			i = len(h.hosts)
			byName[name] = i
			h.hosts = append(h.hosts, nil)
		}
		h.hosts[i] = append(h.hosts[i], r)
		if r == me {
			h.host, h.local = i, len(h.hosts[i])-1
		}
		h.k = max(h.k, len(h.hosts[i]))
	}
	if len(h.hosts) < 2 || h.k < 2 {
		return nil
	}
	return h
}

// Hosts is the number of hosts.
func (h *Hierarchy) Hosts() int { return len(h.hosts) }

// String describes the layout as host sizes, "3+1".
func (h *Hierarchy) String() string {
	var b strings.Builder
	for i, host := range h.hosts {
		if i > 0 {
			b.WriteByte('+')
		}
		fmt.Fprint(&b, len(host))
	}
	return b.String()
}

// shards returns the run of shards [lo, hi) that local rank j of host owns.
func (h *Hierarchy) shards(host, j int) (lo, hi int) {
	return Block(h.k, len(h.hosts[host]), j)
}

// owner is the local rank of host that owns shard s.
func (h *Hierarchy) owner(host, s int) int {
	n := len(h.hosts[host])
	for j := range n {
		if _, hi := Block(h.k, n, j); s < hi {
			return j
		}
	}
	return n - 1
}

// region is the byte range of the buffer that local rank j of host owns:
// its shards, of count elements of elem bytes.
func (h *Hierarchy) region(host, j, count, elem int) (lo, hi int) {
	s0, s1 := h.shards(host, j)
	lo, _ = Block(count, h.k, s0)
	hi, _ = Block(count, h.k, s1) // Block(count, k, k) starts at count
	return lo * elem, hi * elem
}

// AllReduce runs the hierarchical allreduce of t with op: reduce-scatter
// within the host, inter on each run of this rank's shards across hosts
// (called with a Call over the shard's owners, one per host, in host
// order), all-gather within the host. chunk is the size in bytes of the
// pieces the phases within a host pipeline.
//
// A large buffer goes through the phases in slices, as a pipeline of three
// stages: while slice i crosses the network, slice i+1 is reduced within
// the host and slice i−1 gathered, so that the phases within a host, which
// cost memory bandwidth and CPU, hide behind the one that waits on the NIC.
// Two slices cross at once, in two lanes (alternate slices). The stages
// run concurrently on streams of their own: the two within a host on
// channels 0 and 1, between ranks of one host; the lanes across on the
// inter algorithm's channels, moved up by laneChannels for the second
// lane, between ranks of different hosts. Each stage takes its slices in
// order, on every rank alike, so every stream's messages come in the
// order its receives are posted.
func (h *Hierarchy) AllReduce(c *Call, t collective.Tensor, op collective.Op, chunk int,
	inter func(c *Call, t collective.Tensor, op collective.Op) error) error {
	chunk = ChunkBytes(chunk, t.DType)
	n := hierSlices(len(t.Data))
	slice := func(i int) collective.Tensor {
		lo, hi := Block(t.Count(), n, i)
		return collective.Tensor{DType: t.DType, Data: t.Data[lo*t.DType.Size() : hi*t.DType.Size()]}
	}
	where := func(phase string, i int, err error) error {
		if n > 1 {
			phase = fmt.Sprintf("%s, slice %d of %d", phase, i+1, n)
		}
		return fmt.Errorf("hier %s: %s: %w", h, phase, err)
	}
	reduced, across := make([]chan struct{}, n), make([]chan struct{}, n)
	for i := range n {
		reduced[i], across[i] = make(chan struct{}), make(chan struct{})
	}
	stop := make(chan struct{}) // closed when a stage fails, after failure is set
	var once sync.Once
	var failure error
	// stage runs phase on slices first, first+step, ..., each once in[i]
	// is closed (nil: at once), closing out[i] after.
	stage := func(first, step int, in, out []chan struct{}, phase string, run func(c *Call, i int, t collective.Tensor) error) func(*Call) error {
		return func(c *Call) error {
			for i := first; i < n; i += step {
				if in != nil {
					select {
					case <-in[i]:
					case <-stop:
						return errStageStopped
					}
				}
				if err := run(c, i, slice(i)); err != nil {
					err = where(phase, i, err)
					once.Do(func() { failure = err; close(stop) })
					return err
				}
				if out != nil {
					close(out[i])
				}
			}
			return nil
		}
	}
	stages := []func(*Call) error{
		stage(0, 1, nil, reduced, fmt.Sprintf("reduce-scatter within host %d", h.host),
			func(c *Call, _ int, t collective.Tensor) error { return h.within(c, t, op, chunk, 0, true) }),
		stage(0, 1, across, nil, fmt.Sprintf("all-gather within host %d", h.host),
			func(c *Call, _ int, t collective.Tensor) error { return h.within(c, t, op, chunk, 1, false) }),
	}
	// Across hosts, two lanes take alternate slices, so that one's
	// allreduce fills the links while the other's drains: one lane alone
	// would leave them idle at the end of each slice, while its last
	// chunk makes its way back.
	lanes := min(n, hierLanes)
	for l := range lanes {
		stages = append(stages, stage(l, lanes, reduced, across, "across hosts",
			func(c *Call, i int, t collective.Tensor) error { return h.across(c.inLane(l), i, t, op, inter) }))
	}
	if n == 1 { // one slice: the stages one after another, on this goroutine
		for _, st := range []func(*Call) error{stages[0], stages[2], stages[1]} {
			if err := st(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := c.Parallel(stages...); err != nil {
		if err == errStageStopped { // a stage that stopped may report first
			return failure
		}
		return err
	}
	return nil
}

// errStageStopped ends a stage of the pipeline because another failed; the
// other's error is the operation's.
var errStageStopped = errors.New("hier: stopped: another stage failed")

// hierSlice is the size of a slice of the pipeline of AllReduce, and
// hierMaxSlices the most slices: a buffer of several slices pays their
// phases within a host only for its first and last. Fewer, larger slices
// cost fewer messages and wake-ups.
const (
	hierSlice     = 4 << 20
	hierMaxSlices = 8
)

// hierLanes is how many slices cross hosts at once, and laneChannels the
// channels each lane's inter algorithm may use (channel + lane ×
// laneChannels tags its messages).
const (
	hierLanes    = 2
	laneChannels = 8
)

// hierSlices is how many slices AllReduce cuts a buffer of size bytes into.
func hierSlices(size int) int { return min(max(1, size/hierSlice), hierMaxSlices) }

// across allreduces this rank's shards of t, slice i, across hosts with
// inter, each run of shards with the same owners as one allreduce, in
// shard order.
func (h *Hierarchy) across(c *Call, i int, t collective.Tensor, op collective.Op,
	inter func(c *Call, t collective.Tensor, op collective.Op) error) error {
	elem, count := t.DType.Size(), t.Count()
	lo, hi := h.shards(h.host, h.local)
	for s := lo; s < hi; {
		members := h.owners(s)
		e := s + 1
		for e < hi && slices.Equal(h.owners(e), members) {
			e++
		}
		b0, _ := Block(count, h.k, s)
		b1, _ := Block(count, h.k, e)
		if b1 > b0 {
			part := collective.Tensor{DType: t.DType, Data: t.Data[b0*elem : b1*elem]}
			sub := c.Sub(members)
			sub.part = i*h.k + s
			if err := inter(sub, part, op); err != nil {
				return fmt.Errorf("shards %d..%d: %w", s, e-1, err)
			}
		}
		s = e
	}
	return nil
}

// owners lists the group ranks that own shard s, one per host.
func (h *Hierarchy) owners(s int) []int {
	m := make([]int, len(h.hosts))
	for i, host := range h.hosts {
		m[i] = host[h.owner(i, s)]
	}
	return m
}

// within is one phase inside this rank's host, as one schedule: with
// reduce, every rank sends each other rank its copy of that rank's region
// and reduces what it receives into its own (peers in local order, one
// after another per chunk, so that two receives never reduce into the same
// bytes at once, and the order, and with it every bit, is fixed); without,
// every rank sends its region, reduced by now, to every other rank and
// receives theirs into place.
func (h *Hierarchy) within(c *Call, t collective.Tensor, op collective.Op, chunk int, channel uint8, reduce bool) error {
	host := h.hosts[h.host]
	k := len(host)
	if k == 1 {
		return nil
	}
	elem, count := t.DType.Size(), t.Count()
	s := c.Schedule(t.DType, op)
	region := func(j int) []byte {
		lo, hi := h.region(h.host, j, count, elem)
		return t.Data[lo:hi]
	}
	mine := pieces(region(h.local), chunk)
	last := make([]Step, len(mine)) // per chunk: the last reduction into it
	for i := range last {
		last[i] = None
	}
	// Peers from the next local rank on, so that not every rank sends to
	// local rank 0 first: their regions to reduce, or this rank's, reduced.
	for d := 1; d < k; d++ {
		j := (h.local + d) % k
		send := mine
		if reduce {
			send = pieces(region(j), chunk)
		}
		for _, p := range send {
			s.Send(host[j], channel, p)
		}
	}
	for j := range k {
		if j == h.local {
			continue
		}
		if reduce {
			for i, p := range mine {
				last[i] = s.RecvReduce(host[j], channel, p, last[i])
			}
		} else {
			for _, p := range pieces(region(j), chunk) {
				s.Recv(host[j], channel, p)
			}
		}
	}
	return c.Run(s)
}

// pieces cuts b into pieces of at most chunk bytes; none when b is empty.
func pieces(b []byte, chunk int) [][]byte {
	var out [][]byte
	for lo := 0; lo < len(b); lo += chunk {
		out = append(out, b[lo:min(lo+chunk, len(b))])
	}
	return out
}

// Sub returns a Call over members (group ranks of c's group, in the order
// the sub-call numbers them; this rank must be one), for an algorithm that
// runs a phase on part of its group: the same operation, sequence number,
// deadline and tag space, so its messages and errors are the operation's.
// Messages between two ranks on one channel keep the order they were sent
// in, so phases that run one after another may share channels; phases
// that run at once take lanes of their own (inLane). The view, and its
// scratch buffers, are kept for later operations.
func (c *Call) Sub(members []int) *Call {
	g := c.g
	// A view per lane too: lanes run at once, and a view's scratch
	// buffers serve one operation at a time.
	key := fmt.Sprint(c.lane, members)
	g.viewsMu.Lock()
	defer g.viewsMu.Unlock()
	v := g.views[key]
	if v == nil {
		global := make([]int, len(members))
		me := -1
		for i, r := range members {
			global[i] = g.ranks[r]
			if r == g.rank {
				me = i
			}
		}
		if me < 0 {
			panic(fmt.Sprintf("core: Call.Sub(%v) without this rank (%d)", members, g.rank))
		}
		v = &Group{shared: g.shared, ranks: global, rank: me, id: g.id}
		if g.views == nil {
			g.views = map[string]*Group{}
		}
		g.views[key] = v
	}
	return &Call{ctx: c.ctx, g: v, seq: c.seq, op: c.op, lane: c.lane}
}

// inLane returns c with its channels moved up by lane × laneChannels.
func (c *Call) inLane(lane int) *Call {
	l := *c
	l.lane += uint8(lane * laneChannels)
	return &l
}
