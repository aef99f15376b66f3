package model

// The parameter server's allreduce, as strategies/ps runs it over the
// mesh (docs/ps.md): every worker pushes its piece of each shard to the
// shard's server (a header, the pieces cut at the chunk grid, an end
// header), the server reduces pushes as it reads them, and every worker
// pulls each reduced chunk back once all pushes of it are in. Colocated
// servers are workers 0..k−1, which ask for their pulls after pushing;
// dedicated ones are ranks n..n+k−1, asked before the pushes.

// Constants of strategies/ps.
const (
	psDefaultChunk     = 1 << 20
	psDefaultPartition = 256 << 10
)

// Channels of the parameter server's messages in a Program.
const (
	psPush  = 0 // headers and pieces of pushes
	psPull  = 1 // pull requests
	psReply = 2 // pulled pieces
)

type psShard struct{ server, lo, hi int }

// psLayout is strategies/ps's layout with rotation 0.
func psLayout(count, es, k, partition int) []psShard {
	if count <= 0 || k <= 0 {
		return nil
	}
	bytes := count * es
	m := min(k, count, max(1, (bytes+partition-1)/partition))
	out := make([]psShard, m)
	for i := range m {
		lo, hi := block(count, m, i)
		out[i] = psShard{server: i % k, lo: lo * es, hi: hi * es}
	}
	return out
}

// PSAllReduce is the parameter server's allreduce on n workers and k
// servers (0: as many as workers), colocated with workers 0..k−1 or
// dedicated.
func PSAllReduce(n int, bytes int64, es, k int, dedicated bool) Program {
	if k <= 0 {
		k = n
	}
	size := n
	if dedicated {
		size += k
	}
	serverRank := func(s int) int {
		if dedicated {
			return n + s
		}
		return s
	}
	count := int(bytes) / es
	shards := psLayout(count, es, k, psDefaultPartition)
	c := psDefaultChunk
	p := newRanks(size)
	pieces := func(sh psShard) [][2]int {
		var out [][2]int
		for lo := sh.lo; lo < sh.hi; lo += c {
			out = append(out, [2]int{lo, min(lo+c, sh.hi)})
		}
		return out
	}
	pull := func(w int) {
		for _, sh := range shards {
			if s := serverRank(sh.server); s != w {
				p.send(w, Op{Peer: int32(s), Ch: psPull})
			}
		}
	}
	for w := range n {
		if dedicated {
			pull(w)
		}
		for _, sh := range shards {
			s := serverRank(sh.server)
			if s == w {
				continue // its own shard: reduced in place
			}
			p.send(w, Op{Peer: int32(s), Ch: psPush})
			for _, pc := range pieces(sh) {
				p.send(w, Op{Peer: int32(s), Ch: psPush, Bytes: int64(pc[1] - pc[0]), Lo: int64(pc[0]), Reduce: true})
			}
			p.send(w, Op{Peer: int32(s), Ch: psPush})
		}
		if !dedicated {
			pull(w)
		}
	}
	// The servers: each chunk goes back to each puller once every remote
	// push of it is in (a chain of zero-cost joins) and the pull asked.
	for _, sh := range shards {
		s := serverRank(sh.server)
		for x, pc := range pieces(sh) {
			join := Dep{}
			joined := false
			for w := range n {
				if w == s {
					continue
				}
				o := Op{Kind: Compute, Slot: p.slot(s)}
				o.after(recvDep(w, psPush, 1+x))
				if joined {
					o.after(join)
				}
				p.ops[s] = append(p.ops[s], o)
				join, joined = localDep(int(o.Slot)), true
			}
			for w := range n {
				if w == s {
					continue
				}
				o := Op{Peer: int32(w), Ch: psReply, Bytes: int64(pc[1] - pc[0]), Lo: int64(pc[0])}
				o.after(recvDep(w, psPull, 0))
				if joined {
					o.after(join)
				}
				p.send(s, o)
			}
		}
	}
	return p
}
