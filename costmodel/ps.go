package costmodel

import (
	"cmp"

	"github.com/distbench/distbench/internal/core"
)

// The parameter server's allreduce, as strategies/ps runs it over the
// mesh (docs/design/ps.md): every worker pushes its piece of each shard to the
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

// Channels of the parameter server's messages in a Program: the low byte
// of strategies/ps's mesh tags. A worker's requests to a server (push
// headers, pushed pieces, pull requests) are one stream, in that order;
// the pulled pieces come back on another.
const (
	psRequests = 1
	psReplies  = 2
	psHeader   = 80 // bytes of a request header
)

type psShard struct{ server, lo, hi int }

// psLayout is strategies/ps's layout: shard i of m goes to server
// (rotate+i) mod k.
func psLayout(count, es, k, rotate, partition int) []psShard {
	if count <= 0 || k <= 0 {
		return nil
	}
	bytes := count * es
	m := min(k, count, max(1, (bytes+partition-1)/partition))
	out := make([]psShard, m)
	for i := range m {
		lo, hi := core.Block(count, m, i)
		out[i] = psShard{server: (rotate + i) % k, lo: lo * es, hi: hi * es}
	}
	return out
}

// PSOptions are strategies/ps's options that shape an allreduce's
// messages; zero values are its defaults.
type PSOptions struct {
	Servers   int  // k; 0: as many as workers
	Dedicated bool // servers are ranks n..n+k−1, not workers 0..k−1
	Chunk     int  // bytes; 0: 1 MiB
	Partition int  // bytes; 0: 256 KiB
	// Rotate: shard i goes to server (Rotate+i) mod k. strategies/ps
	// rotates by its group's hash plus the collective's sequence number;
	// it changes which server is busy, not how much: predictions use 0.
	Rotate int
	// PartRotate, where set, is the rotation of each part of a
	// local_agg=1 allreduce (core's part number: slice × shards + first
	// shard; its first byte in the tensor), each a round with a group of
	// its own and so a hash of its own.
	PartRotate func(part int, off int64) int
}

// PSAllReduce is the parameter server's allreduce on n workers and k
// servers (0: as many as workers), colocated with workers 0..k−1 or
// dedicated, with ps's default chunk and partition.
func PSAllReduce(n int, bytes int64, es, k int, dedicated bool) Program {
	return PSAllReduceWith(n, bytes, es, PSOptions{Servers: k, Dedicated: dedicated})
}

// PSAllReduceWith is PSAllReduce with o's options.
func PSAllReduceWith(n int, bytes int64, es int, o PSOptions) Program {
	k := cmp.Or(o.Servers, n)
	size := n
	if o.Dedicated {
		size += k
	}
	workers := make([]int, n)
	for w := range workers {
		workers[w] = w
	}
	p := newRanks(size)
	o.Servers = k
	psPushPull(p, workers, int(bytes)/es, es, o, o.Rotate, n)
	return p
}

// PSLocalAgg is ps's allreduce with local_agg=1 on hosts of the given
// sizes (ranks numbered host by host, dedicated servers after them): core's
// hierarchy (Hier, within-host chunks of ps's chunk size), each part of it
// pushed and pulled across hosts by its owners, one per host, as a round of
// their own on the world's servers, which need not be among them. With one
// host, or a rank per host, it is the plain push and pull.
func PSLocalAgg(hosts []int, bytes int64, es int, o PSOptions) Program {
	n, k := hostsSize(hosts)
	if len(hosts) < 2 || k < 2 {
		return PSAllReduceWith(n, bytes, es, o)
	}
	o.Servers = cmp.Or(o.Servers, n)
	extra := 0
	if o.Dedicated {
		extra = o.Servers
	}
	all := make([]int, n+extra)
	for i := range all {
		all[i] = i
	}
	return hierWith(hosts, bytes, es, cmp.Or(o.Chunk, psDefaultChunk), extra, true, func(members []int, part int, off, b int64) (Program, []int) {
		p := newRanks(n + extra)
		// ps rotates each part by its own group's hash: spread them as
		// those do on average, the K parts of a slice starting k/K
		// servers apart (on different hosts where they can).
		count := int(b) / es
		rot := o.Rotate + part*o.Servers/k
		if o.PartRotate != nil {
			rot = o.PartRotate(part, off)
		}
		psPushPull(p, members, count, es, o, rot, n)
		return p, all
	})
}

// psPushPull appends to p one push-and-pull round of count elements by
// workers (ranks of p) on o.Servers servers: ranks 0..k−1 of p (colocated:
// a worker that is its shard's server pushes nothing and pulls nothing,
// its memory lent to the server) or dedicated, from rank first on. Offsets
// are from the round's first element.
func psPushPull(p *ranks, workers []int, count, es int, o PSOptions, rotate, first int) {
	k := o.Servers
	serverRank := func(s int) int {
		if o.Dedicated {
			return first + s
		}
		return s
	}
	c := chunkBytes(cmp.Or(o.Chunk, psDefaultChunk), es)
	shards := psLayout(count, es, k, rotate, cmp.Or(o.Partition, psDefaultPartition))
	pieces := func(sh psShard) [][2]int {
		var out [][2]int
		for lo := sh.lo; lo < sh.hi; lo += c {
			out = append(out, [2]int{lo, min(lo+c, sh.hi)})
		}
		return out
	}
	header := Op{Ch: psRequests, Bytes: psHeader, Meta: true}
	// Per shard, on the stream of each pushing worker to its server: the
	// index of the pull request and of the first pushed piece.
	pullAt, pieceAt := 0, 2 // dedicated: pull, span header, pieces, end
	if !o.Dedicated {
		pullAt, pieceAt = -1, 1 // colocated: span header, pieces, end, pull
	}
	for _, w := range workers {
		for _, sh := range shards {
			s := serverRank(sh.server)
			if s == w {
				continue // its own shard: reduced in place, nothing asked
			}
			h := header
			h.Peer = int32(s)
			if o.Dedicated { // pulls asked first, answered as chunks complete
				p.send(w, h)
			}
			p.send(w, h) // the span
			for _, pc := range pieces(sh) {
				p.send(w, Op{Peer: int32(s), Ch: psRequests, Bytes: int64(pc[1] - pc[0]), Lo: int64(pc[0]), Reduce: true})
			}
			p.send(w, h) // the push's end
			if !o.Dedicated {
				p.send(w, h)
			}
		}
	}
	// The servers: each chunk goes back to each puller once every remote
	// push of it is in (a chain of zero-cost joins) and the pull asked.
	// While they answer, the ranks that run are the servers and the pullers
	// they answer, one each at a time: 2 per shard (Op.Active), the other
	// workers blocked on their pulls, their cores lent to those (at 256 KiB
	// and below one server answers every worker in turn; counting every
	// rank as running put those sizes well over the measurements,
	// docs/design/costmodel.md).
	active := uint16(min(len(workers), 2*len(shards)))
	for _, sh := range shards {
		s := serverRank(sh.server)
		pcs := pieces(sh)
		pull := pullAt
		if pull < 0 {
			pull = pieceAt + len(pcs) + 1
		}
		for x, pc := range pcs {
			join := Dep{}
			joined := false
			for _, w := range workers {
				if w == s {
					continue
				}
				o := Op{Kind: Compute, Slot: p.slot(s)}
				o.after(recvDep(w, psRequests, pieceAt+x))
				if joined {
					o.after(join)
				}
				p.ops[s] = append(p.ops[s], o)
				join, joined = localDep(int(o.Slot)), true
			}
			for _, w := range workers {
				if w == s {
					continue
				}
				o := Op{Peer: int32(w), Ch: psReplies, Bytes: int64(pc[1] - pc[0]), Lo: int64(pc[0]), Active: active}
				o.after(recvDep(w, psRequests, pull))
				if joined {
					o.after(join)
				}
				p.send(s, o)
			}
		}
	}
}
