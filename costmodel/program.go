package costmodel

// A Program is the messages of one collective on every rank, as the
// strategies' schedules (internal/core.Schedule) send them: per rank, its
// sends and local reductions in the order it issues them, each after the
// events it names. Receives are not listed: a strategy posts them ahead, so
// a receive completes when its message is in (and, for a reducing receive,
// reduced), and a step that waits for one names it as a Dep.
type Program interface {
	// Size is the number of ranks, servers included.
	Size() int
	// Ops returns rank r's operations. Programs may share one slice
	// between ranks: an op with Rel set names peers relative to r.
	Ops(r int) []Op
	// Peers returns the ranks r sends to.
	Peers(r int) []int
	// Slots is the number of local completion slots rank r's ops use.
	Slots(r int) int
}

// OpKind is what an Op does.
type OpKind uint8

const (
	// Send sends Bytes to Peer on channel Ch; the receiver reduces them
	// as it reads them when Reduce is set.
	Send OpKind = iota
	// Compute reduces Bytes locally.
	Compute
)

// Op is one step of a rank's schedule.
type Op struct {
	Kind   OpKind
	Reduce bool // Send: the receiver reduces the message as it reads it
	Rel    bool // Peer and the peers of Deps are offsets from the rank
	Meta   bool // Send: a protocol header, not tensor bytes
	// Active, when > 0, is how many of the world's ranks take part in
	// the op's step (recursive doubling's fold leaves the others idle):
	// CPU contention counts those, not every rank of the host.
	Active uint16
	Ch     uint8 // channel
	Peer   int32
	Slot   int32 // ≥ 0: record the op's completion in this slot
	Bytes  int64
	Lo     int64 // byte offset in the tensor, for printing schedules
	NDeps  uint8
	Deps   [3]Dep
}

// Dep is an event an op waits for: the Seq-th message (from 0) received
// from Peer on channel Ch, or, with Local, the op that recorded Slot.
type Dep struct {
	Local bool
	Ch    uint8
	Peer  int32
	Seq   int32 // or the slot
}

// after appends d to o's dependencies.
func (o *Op) after(d Dep) {
	o.Deps[o.NDeps] = d
	o.NDeps++
}

func recvDep(peer, ch, seq int) Dep { return Dep{Peer: int32(peer), Ch: uint8(ch), Seq: int32(seq)} }
func localDep(slot int) Dep         { return Dep{Local: true, Seq: int32(slot)} }

// ranks is a Program of per-rank op lists.
type ranks struct {
	ops   [][]Op
	peers [][]int
	slots []int
}

func newRanks(n int) *ranks {
	return &ranks{ops: make([][]Op, n), peers: make([][]int, n), slots: make([]int, n)}
}

func (p *ranks) Size() int         { return len(p.ops) }
func (p *ranks) Ops(r int) []Op    { return p.ops[r] }
func (p *ranks) Peers(r int) []int { return p.peers[r] }
func (p *ranks) Slots(r int) int   { return p.slots[r] }

// send appends a send from r and notes its peer.
func (p *ranks) send(r int, o Op) {
	o.Kind = Send
	if o.Slot == 0 {
		o.Slot = -1
	}
	p.ops[r] = append(p.ops[r], o)
	for _, q := range p.peers[r] {
		if q == int(o.Peer) {
			return
		}
	}
	p.peers[r] = append(p.peers[r], int(o.Peer))
}

// slot returns a fresh completion slot of rank r.
func (p *ranks) slot(r int) int32 {
	p.slots[r]++
	return int32(p.slots[r] - 1)
}

// chunkBytes is internal/core.ChunkBytes: chunk rounded down to whole
// elements of es bytes, at least one.
func chunkBytes(chunk, es int) int { return max(es, chunk/es*es) }
