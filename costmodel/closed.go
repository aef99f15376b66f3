package costmodel

import (
	"cmp"
	"math"
	"math/bits"

	"github.com/distbench/distbench/internal/shapes"
)

// Terms is a closed form written as coefficients of the parameters:
// T = Alpha·α + Latency·L + Beta·β + Gamma·γ + Kappa·κ + Steps·Step.
// Written so, calibration is linear least squares; Closed evaluates it.
type Terms struct{ Alpha, Latency, Beta, Gamma, Kappa, Steps float64 }

// At evaluates t at p, in seconds.
func (t Terms) At(p Params) float64 {
	return t.Alpha*p.Alpha + t.Latency*p.Latency + t.Beta*p.Beta + t.Gamma*p.Gamma + t.Kappa*p.Kappa + t.Steps*p.Step
}

// withKappa charges the sender's CPU for every byte the form puts on the
// wire: the closed forms see a flat network of idle hosts, where the two
// add up.
func withKappa(t Terms) Terms {
	t.Kappa = t.Beta
	return t
}

// longest returns whichever of ts takes longest at p: a pipeline's time is
// the longest of its bounds (egress, dependency chain, ingress).
func longest(p Params, ts ...Terms) Terms {
	best := ts[0]
	for _, t := range ts[1:] {
		if t.At(p) > best.At(p) {
			best = t
		}
	}
	return best
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func log2Ceil(n int) int { return bits.Len(uint(n - 1)) }

// The closed forms: derivations in docs/design/costmodel.md, one section each, named
// as the functions. n ranks, S bytes, b a message's bytes, c the chunks
// per segment; m = α + bβ is a message's occupancy of its sender.

// ringRSAGTerms: 2(n−1) steps of c chunks of b = S/(nc). Bounds: egress
// 2(n−1)c·m + L; one chunk's chain 2(n−1)(m+L) + (n−1)bγ + (c−1)m;
// the receiver's NIC α + L + 2(n−1)c·bβ; its reader, which reduces
// while the NIC takes in the next chunk, α + L + bβ + (n−1)c·bγ.
func ringRSAGTerms(p Params, n int, S int64, chunk int) Terms {
	if n < 2 {
		return Terms{}
	}
	seg := S / int64(n)
	c := ringChunk(chunk, int(ceilDiv(S, int64(n))), shapes.RingDefaultChunk, 4)
	k := float64(max(1, ceilDiv(seg, int64(c))))
	b := float64(seg) / k
	G := float64(2 * (n - 1))
	R := float64(n - 1)
	egress := Terms{Alpha: G * k, Beta: G * k * b, Latency: 1, Steps: G}
	if n == 2 {
		// Two steps: chunk ch of step 1 goes out d sends after chunk ch of
		// step 0 (d = the wave's lag), so each waits out whatever of its
		// predecessor's latency and reduction d−1 sends do not cover.
		d := 1.0
		if c < shapes.RingLagOneChunk {
			d = 2
		}
		stall := Terms{Latency: k, Gamma: k * b, Alpha: -k * (d - 1), Beta: -k * (d - 1) * b}
		if stall.At(p) > 0 {
			egress.Alpha += stall.Alpha
			egress.Beta += stall.Beta
			egress.Latency += stall.Latency
			egress.Gamma += stall.Gamma
		}
	}
	chain := Terms{Alpha: G + k - 1, Beta: (G + k - 1) * b, Latency: G, Gamma: R * b, Steps: G}
	wireIn := Terms{Alpha: 1, Beta: G * k * b, Latency: 1, Steps: G}
	reader := Terms{Alpha: 1, Beta: b, Gamma: R * k * b, Latency: 1, Steps: G}
	return longest(p, egress, chain, wireIn, reader)
}

// ringWholeTerms: n−1 steps each forwarding the whole buffer, then n−1
// local reductions of it.
func ringWholeTerms(n int, S int64) Terms {
	R := float64(n - 1)
	return Terms{Alpha: R, Beta: R * float64(S), Latency: R, Gamma: R * float64(S), Steps: R}
}

// chainTerms: a pipelined chain of n ranks, c chunks of b = S/c:
// (n−2+c)·m + (n−1)·L.
func chainTerms(n int, S int64, chunk int) Terms {
	if n < 2 || S == 0 {
		return Terms{}
	}
	c := float64(ceilDiv(S, int64(ringChunk(chunk, int(S), shapes.RingDefaultChunk, 4))))
	b := float64(S) / c
	return Terms{Alpha: float64(n-2) + c, Beta: (float64(n-2) + c) * b, Latency: float64(n - 1), Steps: float64(n - 1)}
}

// rdTerms: log2 p exchanges of the whole buffer, each m(S) + L + Sγ, and,
// when n is not a power of two, a fold before (the same) and an unfold
// after (m(S) + L).
func rdTerms(n int, S int64) Terms {
	pw := 1
	for pw*2 <= n {
		pw *= 2
	}
	k := float64(bits.Len(uint(pw)) - 1)
	s := float64(S)
	t := Terms{Alpha: k, Beta: k * s, Latency: k, Gamma: k * s, Steps: k}
	if pw < n {
		t.Alpha += 2
		t.Beta += 2 * s
		t.Latency += 2
		t.Gamma += s
		t.Steps += 2
	}
	return t
}

// dbtreeTerms: two trees, each half the buffer in c chunks of b = S/(2c).
// Per chunk index the busiest rank sends E messages (one up and one per
// child, over both trees; E = 4 for most ranks of a large world) and takes
// in I; one chunk's chain climbs and descends the trees' depth D. Bounds:
// egress E·c·m + D(m+L); ingress I·c·bβ + c·bγ + D(m+L); chain
// 2D(m+L) + D·bγ + (c−1)·E·m.
func dbtreeTerms(p Params, n int, S int64, chunk int) Terms {
	if n < 2 {
		return Terms{}
	}
	if chunk == 0 {
		chunk = shapes.TreeDefaultChunk
	}
	c4 := chunkBytes(chunk, 4)
	half := S / 2
	c := float64(max(1, ceilDiv(half, int64(c4))))
	b := float64(half) / c
	E, I, D := treeShape(n)
	fill := Terms{Alpha: D, Beta: D * b, Latency: D}
	egress := Terms{Alpha: E*c + fill.Alpha, Beta: E*c*b + fill.Beta, Latency: fill.Latency, Gamma: b, Steps: 2 * D}
	ingress := Terms{Alpha: fill.Alpha, Beta: I*c*b + fill.Beta, Latency: fill.Latency, Gamma: c * b, Steps: 2 * D}
	chain := Terms{Alpha: 2*D + (c-1)*E, Beta: (2*D + (c-1)*E) * b, Latency: 2 * D, Gamma: D * b, Steps: 2 * D}
	return longest(p, egress, ingress, chain)
}

// treeShape returns the double binary tree's busiest sender's messages per
// chunk index (E), busiest receiver's (I), and the trees' depth (D).
func treeShape(n int) (E, I, D float64) {
	for r := range n {
		sends, recvs := 0, 0
		for _, nd := range shapes.DoubleTree(n, r) {
			if nd.Parent >= 0 {
				sends++
				recvs++
			}
			sends += len(nd.Children)
			recvs += len(nd.Children)
		}
		E, I = max(E, float64(sends)), max(I, float64(recvs))
	}
	for r := range n { // depth of tree 0 (tree 1 mirrors it)
		d := 0
		for x := r; x != 0; x = shapes.BinaryTree(n, x).Parent {
			d++
		}
		D = max(D, float64(d))
	}
	return E, I, D
}

// psTerms: m = min(k, ⌈S/partition⌉) shards of S/m. A server's reader
// takes in the n−1 (colocated) or n (dedicated) pushes of its shard and
// reduces them, then its sender returns the shard to as many pullers;
// every worker also pushes and pulls its other shards. Push and pull
// overlap only with dedicated servers (pulls asked first, links full
// duplex): there the bound is the busier of worker and server links.
func psTerms(n int, S int64, k int, dedicated bool) Terms {
	if k <= 0 {
		k = n
	}
	m := float64(min(int64(k), max(1, ceilDiv(S, psDefaultPartition))))
	shard := float64(S) / m
	pieces := math.Max(1, math.Ceil(shard/psDefaultChunk))
	if !dedicated {
		// A server: (n−1) pushes in and reduced, (n−1) replies out, its
		// own m−1 pushes beside them.
		in := float64(n - 1)
		return Terms{
			Alpha:   (m - 1 + in) * (pieces + 2),
			Beta:    (in + m - 1) * shard,
			Gamma:   in * shard,
			Latency: 3,
			Steps:   2,
		}
	}
	in := float64(n)
	link := math.Max(float64(S), in*shard) // a worker's or a server's bytes, each way
	return Terms{
		Alpha:   in * (pieces + 2),
		Beta:    link + shard/pieces,
		Gamma:   in * shard,
		Latency: 3,
		Steps:   2,
	}
}

// ncclRingTerms: NCCL's ring allreduce (simple protocol), 2(n−1) steps of
// S/n on every rank's link: 2(n−1)(α+L) + 2(n−1)/n·Sβ + (n−1)/n·Sγ.
func ncclRingTerms(n int, S int64) Terms {
	G := float64(2 * (n - 1))
	f := float64(n-1) / float64(n)
	return Terms{Alpha: G, Latency: G, Beta: 2 * f * float64(S), Gamma: f * float64(S), Steps: G}
}

// ncclTreeTerms: NCCL's double binary tree allreduce: up and down
// ⌈log2 n⌉ levels, 2⌈log2 n⌉(α+L), and each rank's link carries the
// buffer once each way per tree it is interior in: ≈ 2Sβ at worst, S
// reduced.
func ncclTreeTerms(n int, S int64) Terms {
	D := float64(log2Ceil(n))
	return Terms{Alpha: 2 * D, Latency: 2 * D, Beta: 2 * float64(S), Gamma: float64(S), Steps: 2 * D}
}

// binomialTerms: a binomial tree broadcast of the whole buffer (one
// chunk): a rank sends to its children one after another, the largest
// subtree first, so the i-th child (from 0) has it at (i+1)·m(S) + L after
// its parent did; the time is the longest such path from the root, about
// ⌈log2 n⌉·(m(S) + L). Pipelined chunks the simulator follows.
func binomialTerms(p Params, n int, S int64) Terms {
	var at func(r int) Terms
	at = func(r int) Terms {
		var best Terms
		for i, c := range shapes.Binomial(n, 0, r).Children {
			k := float64(i + 1)
			t := at(c)
			t.Alpha += k
			t.Beta += k * float64(S)
			t.Latency++
			t.Steps++
			best = longest(p, best, t)
		}
		return best
	}
	return at(0)
}

// HierarchicalTerms is the closed form of the hierarchical allreduce
// (internal/core/hier.go, docs/design/hier.md) on hosts × perHost ranks: within
// each host every rank sends each other rank its region of S/l (l =
// perHost) directly, (l−1)(kα + S/l·β) at intra, k chunks of chunk bytes a
// region; across hosts the l owners of a host's shards each run flat (the
// inter algorithm's closed form) on S/l among the m hosts, at once, so the
// host's NIC carries l times one rank's bytes: 2(m−1)/m × S × β for a ring,
// however many ranks a host has. One slice (below 8 MiB), it is the three
// phases in turn; from 8 MiB the buffer goes through in slices, pipelined.
func HierarchicalTerms(intra, inter Params, hosts, perHost int, S int64, chunk int,
	flat func(p Params, n int, S int64) Terms) float64 {
	l, m := perHost, hosts
	if m < 2 || l < 2 {
		return withKappa(flat(inter, m*l, S)).At(inter)
	}
	ns := int64(hierSlices(int(S)))
	slice := S / ns
	// A rank's sends within the host, per slice and phase: (l−1) regions.
	r := float64(slice / int64(l))
	c := float64(chunkBytes(chunk, es))
	k := math.Max(1, math.Ceil(r/c))
	send := float64(l-1) * (k*intra.Alpha + r*(intra.Beta+intra.Kappa))
	within := 2*(send+intra.Latency) + math.Min(c, r)*intra.Gamma
	across := withKappa(flat(inter, m, slice/int64(l)))
	across.Beta *= float64(l) // l owners share the host's NIC
	across.Steps = 0
	wire := across.Beta*inter.Beta + across.Kappa*inter.Kappa
	// Every slice's bytes go through the NIC, its fixed costs (steps,
	// latency) once, the two lanes overlapping each other's. A rank sends
	// one message at a time, within its host or across (the simulator's
	// egress, as the executor's), so the phases within a host hide only
	// their latency behind the NIC, not their sends.
	fixed := across.At(inter) - wire
	waves := float64((ns+hierLanes-1)/hierLanes - 1)
	return within + across.At(inter) + float64(ns-1)*(wire+2*send) + waves*fixed
}

// psLocalAggClosed is the closed form of ps's allreduce with local_agg=1
// (PSLocalAgg) on hosts × perHost ranks and k colocated servers (0: one per
// rank): core's hierarchy (HierarchicalTerms, within-host chunks of ps's
// chunk) whose phase across hosts is l = perHost push-and-pull rounds at
// once, part j (s = S/l bytes) by its m owners, local rank j of every host,
// on the world's servers. A part goes to P = min(k, ⌈s/256 KiB⌉) servers
// in shards of s/P, part j's from server j·k/l on (ps's per-part hashes
// spread them; PSLocalAgg's default rotation spreads them so), so a part's
// shards sit on consecutive ranks: one host, where P ≤ l.
//
// psAggBytes counts, per rank, the bytes that cross hosts: pushed out
// (owner to server), pushed in, returned out (server to owner) and in.
// Where a shard is one piece (below 1 MiB) its server answers only once
// every push is in, so the round is a push phase, then a reply phase, each
// as long as its busiest rank's bytes in or out; and a rank's egress and
// ingress each carry both phases' bytes. The form is the longest of those,
// at β × l (the host's l ranks share its NIC, as the simulator has them).
// For large parts (P = k = n) every rank sends and receives 2(m−1)/m·s, so
// the host's NIC carries 2(m−1)/m·S each way: the ring's bytes, where the
// plain push and pull puts 2(n−1)/n·S on each of the host's l ranks. That
// is what local aggregation buys (BytePS). It is a bound, not exact: a
// rank that both owns and serves sends its replies after its own pushes,
// which the simulator follows and the form does not (docs/design/costmodel.md has
// how far apart they are). Messages: per shard pushed its pieces and three
// headers; per shard served a piece per other owner. Latency: push, pull
// request, reply (3L); γ: the busiest server's reductions.
func psLocalAggClosed(intra, inter Params, hosts, perHost, k int, S int64) float64 {
	l, m := perHost, hosts
	n := l * m
	k = cmp.Or(k, n)
	if m < 2 || l < 2 {
		return withKappa(psTerms(n, S, k, false)).At(inter)
	}
	across := func(_ Params, m int, s int64) Terms {
		P := int(min(int64(k), max(1, ceilDiv(s, psDefaultPartition))))
		shard := float64(s) / float64(P)
		pieces := math.Max(1, math.Ceil(shard/psDefaultChunk))
		b := psAggBytes(m, l, k, P)
		var pushOut, pushIn, replyOut, replyIn, out, in, msgs, held float64
		for _, r := range b {
			pushOut, pushIn = max(pushOut, r.pushOut), max(pushIn, r.pushIn)
			replyOut, replyIn = max(replyOut, r.replyOut), max(replyIn, r.replyIn)
			out, in = max(out, r.pushOut+r.replyOut), max(in, r.pushIn+r.replyIn)
			msgs = max(msgs, r.pushed*(pieces+3)+r.replies*pieces)
			held = max(held, r.pushIn)
		}
		phases := max(pushOut, pushIn) + max(replyOut, replyIn)
		if pieces > 1 { // replies go back as pieces complete: the phases overlap
			phases = max(out, in) + 1/pieces
		}
		return Terms{
			Alpha:   msgs,
			Beta:    max(phases, out, in) * shard,
			Gamma:   held * shard,
			Latency: 3,
			Steps:   2,
		}
	}
	return HierarchicalTerms(intra, inter, hosts, perHost, S, psDefaultChunk, across)
}

// psAggRank is what one rank moves across hosts in psLocalAggClosed's
// phase across hosts, in shards: pushed out and in, returned out and in;
// and the messages it sends (shards pushed, replies).
type psAggRank struct{ pushOut, pushIn, replyOut, replyIn, pushed, replies float64 }

// psAggBytes places l parts of P shards each on k servers (ranks 0..k−1
// of m hosts × l), part j's from server j·k/l on, owners h·l + j, and
// counts each rank's shards across hosts.
func psAggBytes(m, l, k, P int) []psAggRank {
	out := make([]psAggRank, m*l)
	for j := range l {
		for i := range P {
			v := (j*k/l + i) % k
			for h := range m {
				o := h*l + j
				if o == v {
					continue // its own shard: lent to its server
				}
				out[o].pushed++
				out[v].replies++
				if o/l != v/l {
					out[o].pushOut++
					out[v].pushIn++
					out[v].replyOut++
					out[o].replyIn++
				}
			}
		}
	}
	return out
}
