package costmodel

import (
	"slices"
	"strconv"

	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/shapes"
)

// The hierarchical allreduce (ring and tree algo=hier), built by the rules
// of internal/core/hier.go; schedule_hier_test.go checks it message for
// message against the real code's recorded schedules.

// Constants of internal/core/hier.go: its slices and lanes.
const (
	hierSlice        = 4 << 20
	hierMaxSlices    = 8
	hierLanes        = 2
	hierLaneChannels = 8
)

func hierSlices(size int) int { return min(max(1, size/hierSlice), hierMaxSlices) }

// Hier is the hierarchical allreduce of bytes in elements of es bytes on
// hosts of the given sizes (ranks numbered host by host: host 0's first),
// with within-host chunk chunk (bytes, > 0) and inter the flat allreduce
// across hosts (m ranks, one per host, of b bytes). With one host, or a
// rank per host, it is inter over all the ranks, as the strategies run it.
func Hier(hosts []int, bytes int64, es, chunk int, inter func(m int, b int64) Program) Program {
	n, k := hostsSize(hosts)
	if len(hosts) < 2 || k < 2 {
		return inter(n, bytes)
	}
	return hierWith(hosts, bytes, es, chunk, 0, true, func(members []int, _ int, _, b int64) (Program, []int) {
		return inter(len(members), b), members
	})
}

// hostsSize returns the ranks on hosts and the most on one.
func hostsSize(hosts []int) (n, k int) {
	for _, h := range hosts {
		n += h
		k = max(k, h)
	}
	return n, k
}

// hierAcross is one part of the allreduce across hosts (core's part
// number: slice × shards + first shard), of b bytes from byte off of the
// tensor, by members (one rank per host): its program, rank i run by
// ranks[i]. Ranks that are not members (ps's servers) run their part as
// its messages come, not after anything of their own.
type hierAcross func(members []int, part int, off, b int64) (Program, []int)

// hierWith is Hier on hosts of several ranks with across for the phase
// across hosts, on a world of the hosts' ranks and extra more (dedicated
// servers), numbered after them. laned: the across phase's messages go on
// the call's channels, which lane 1 moves up by hierLaneChannels (ring,
// tree); ps's go on its own mesh tags, the same in both lanes.
func hierWith(hosts []int, bytes int64, es, chunk, extra int, laned bool, across hierAcross) Program {
	n, k := hostsSize(hosts)
	chunk = chunkBytes(chunk, es)
	b := &hierBuilder{p: newRanks(n + extra), recvd: map[[3]int]int{}}
	first := make([]int, len(hosts)) // each host's first rank
	for i := 1; i < len(hosts); i++ {
		first[i] = first[i-1] + hosts[i-1]
	}
	members := func(h int) []int {
		m := make([]int, hosts[h])
		for j := range m {
			m[j] = first[h] + j
		}
		return m
	}
	owner := func(h, s int) int { // internal/core Hierarchy.owner
		for j := range hosts[h] {
			if _, hi := core.Block(k, hosts[h], j); s < hi {
				return first[h] + j
			}
		}
		return first[h] + hosts[h] - 1
	}
	owners := func(s int) []int {
		m := make([]int, len(hosts))
		for h := range hosts {
			m[h] = owner(h, s)
		}
		return m
	}
	count := int(bytes) / es
	ns := hierSlices(int(bytes))
	none := func() []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = -1
		}
		return s
	}
	reduceDone, gatherDone := none(), none()
	laneDone := [hierLanes][]int32{none(), none()}
	for i := range ns {
		lo, hi := core.Block(count, ns, i)
		off, cnt := int64(lo*es), hi-lo
		// Reduce-scatter within each host, after the slice before.
		for h := range hosts {
			ms := members(h)
			st := b.sub(hierWithin(hosts[h], k, cnt, es, chunk, true), ms, 0, off, pick(reduceDone, ms))
			for j, r := range ms {
				reduceDone[r] = st[j]
			}
		}
		// Across hosts in lane i mod 2, after this slice's reduction and
		// the lane's slice before; each rank's runs of shards in order.
		l := i % hierLanes
		at := make([]int32, n)
		for r := range n {
			at[r] = b.join(r, reduceDone[r], laneDone[l][r])
		}
		for s := 0; s < k; {
			ms := owners(s)
			e := s + 1
			for e < k && slices.Equal(owners(e), ms) {
				e++
			}
			b0, _ := core.Block(cnt, k, s)
			b1, _ := core.Block(cnt, k, e)
			if b1 > b0 {
				prog, rs := across(ms, i*k+s, off+int64(b0*es), int64((b1-b0)*es))
				start := make([]int32, len(rs))
				for j, r := range rs {
					start[j] = -1
					if slices.Contains(ms, r) {
						start[j] = at[r]
					}
				}
				lane := uint8(0)
				if laned {
					lane = uint8(l * hierLaneChannels)
				}
				st := b.sub(prog, rs, lane, off+int64(b0*es), start)
				for j, r := range rs {
					if slices.Contains(ms, r) {
						at[r] = st[j]
					}
				}
			}
			s = e
		}
		copy(laneDone[l], at)
		// All-gather within each host, after this slice crossed and the
		// slice before was gathered.
		for h := range hosts {
			ms := members(h)
			start := make([]int32, len(ms))
			for j, r := range ms {
				start[j] = b.join(r, at[r], gatherDone[r])
			}
			st := b.sub(hierWithin(hosts[h], k, cnt, es, chunk, false), ms, 1, off, start)
			for j, r := range ms {
				gatherDone[r] = st[j]
			}
		}
	}
	return b.p
}

func pick(s []int32, ranks []int) []int32 {
	out := make([]int32, len(ranks))
	for i, r := range ranks {
		out[i] = s[r]
	}
	return out
}

// hierWithin is core's Hierarchy.within on a host of kh ranks, K shards,
// count elements: every rank sends every other, from the next local rank
// on, that rank's region (reduce) or its own (gather), in chunks.
func hierWithin(kh, K, count, es, chunk int, reduce bool) Program {
	p := newRanks(kh)
	region := func(j int) (int, int) {
		s0, s1 := core.Block(K, kh, j)
		lo, _ := core.Block(count, K, s0)
		hi, _ := core.Block(count, K, s1)
		return lo * es, hi * es
	}
	for j := range kh {
		for d := 1; d < kh; d++ {
			q := (j + d) % kh
			lo, hi := region(j)
			if reduce {
				lo, hi = region(q)
			}
			for c := lo; c < hi; c += chunk {
				p.send(j, Op{Peer: int32(q), Ch: 0, Bytes: int64(min(c+chunk, hi) - c), Lo: int64(c), Reduce: reduce})
			}
		}
	}
	return p
}

// hierBuilder composes sub-programs (phases on some of the ranks) into one.
type hierBuilder struct {
	p     *ranks
	recvd map[[3]int]int // (dst, src, channel): messages so far
}

// join returns a slot of rank r done when slots a and b (−1: none) are.
func (b *hierBuilder) join(r int, a, c int32) int32 {
	if a < 0 || c < 0 {
		return max(a, c)
	}
	o := Op{Kind: Compute, Slot: b.p.slot(r)}
	o.after(localDep(int(a)))
	o.after(localDep(int(c)))
	b.p.ops[r] = append(b.p.ops[r], o)
	return o.Slot
}

// sub appends prog, its rank i run by members[i], on its channels moved
// up by lane, at byte offset off, each member's ops after its slot
// start[i] (−1: at once). It returns per member a slot recorded when the
// member's part is done: every message to it in, every reduction made.
func (b *hierBuilder) sub(prog Program, members []int, lane uint8, off int64, start []int32) []int32 {
	m := prog.Size()
	global := func(i int, o *Op, p int32) int {
		if o.Rel {
			return members[core.Mod(i+int(p), m)]
		}
		return members[p]
	}
	base := make([]int32, m)
	for i, r := range members {
		base[i] = int32(b.p.slots[r])
		b.p.slots[r] += prog.Slots(i)
	}
	got := map[[3]int]int{} // this phase's messages
	waits := make([][]Dep, m)
	for i, r := range members {
		for _, o := range prog.Ops(i) {
			q := o
			q.Rel, q.NDeps = false, 0
			for _, d := range o.Deps[:o.NDeps] {
				if d.Local {
					q.after(localDep(int(base[i] + d.Seq)))
					continue
				}
				src := global(i, &o, d.Peer)
				ch := d.Ch + lane
				q.after(recvDep(src, int(ch), b.recvd[[3]int{r, src, int(ch)}]+int(d.Seq)))
			}
			if start[i] >= 0 {
				if q.NDeps == uint8(len(q.Deps)) { // full: join the start with the first
					j := Op{Kind: Compute, Slot: b.p.slot(r)}
					j.after(localDep(int(start[i])))
					j.after(q.Deps[0])
					b.p.ops[r] = append(b.p.ops[r], j)
					q.Deps[0] = localDep(int(j.Slot))
				} else {
					q.after(localDep(int(start[i])))
				}
			}
			if o.Kind == Compute {
				if o.Slot >= 0 {
					q.Slot = base[i] + o.Slot
				} else {
					q.Slot = b.p.slot(r)
				}
				b.p.ops[r] = append(b.p.ops[r], q)
				waits[i] = append(waits[i], localDep(int(q.Slot)))
				continue
			}
			if o.Slot >= 0 {
				q.Slot = base[i] + o.Slot
			}
			dst := global(i, &o, o.Peer)
			q.Peer, q.Ch, q.Lo = int32(dst), o.Ch+lane, o.Lo+off
			b.p.send(r, q)
			got[[3]int{dst, r, int(q.Ch)}]++
		}
	}
	keys := make([][3]int, 0, len(got))
	for key := range got {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(x, y [3]int) int { return slices.Compare(x[:], y[:]) })
	index := map[int]int{}
	for i, r := range members {
		index[r] = i
	}
	for _, key := range keys {
		i := index[key[0]]
		waits[i] = append(waits[i], recvDep(key[1], key[2], b.recvd[key]+got[key]-1))
		b.recvd[key] += got[key]
	}
	done := make([]int32, m)
	for i, r := range members {
		done[i] = start[i]
		// A chain of joins, three events at a time (an Op's deps).
		for w := waits[i]; len(w) > 0; {
			o := Op{Kind: Compute, Slot: b.p.slot(r)}
			if done[i] >= 0 {
				o.after(localDep(int(done[i])))
			}
			for o.NDeps < 3 && len(w) > 0 {
				o.after(w[0])
				w = w[1:]
			}
			b.p.ops[r] = append(b.p.ops[r], o)
			done[i] = o.Slot
		}
	}
	return done
}

// ringHier is ring's algo=hier with its options (inter, chunk).
func ringHier(hosts []int, bytes int64, es int, opts map[string]string) Program {
	chunk := 0
	if c, ok := opts["chunk"]; ok {
		chunk, _ = strconv.Atoi(c)
	}
	inter := func(m int, b int64) Program {
		switch opts["inter"] {
		case "whole":
			return RingWhole(m, b)
		case "rsag":
			return RingRSAG(m, b, es, chunk)
		}
		return RingAllReduce(m, b, es, chunk)
	}
	return Hier(hosts, bytes, es, ringChunk(chunk, int(bytes)/2, shapes.RingDefaultChunk, es), inter)
}

// treeHier is tree's algo=hier with its options (inter, chunk).
func treeHier(hosts []int, bytes int64, es int, opts map[string]string) Program {
	chunk := shapes.TreeDefaultChunk
	if c, ok := opts["chunk"]; ok {
		chunk, _ = strconv.Atoi(c)
	}
	inter := func(m int, b int64) Program {
		switch opts["inter"] {
		case "dbtree":
			return DoubleTree(m, b, es, chunk)
		case "rd":
			return RecursiveDoubling(m, b)
		}
		return TreeAllReduce(m, b, es, chunk)
	}
	return Hier(hosts, bytes, es, chunk, inter)
}
