// The parameter-server protocol over the job's transport mesh: a worker's
// side.

package ps

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/wire"
)

// Tags of the protocol on the mesh. Bit 62 is never set in the engine's
// tags (collectives: group and sequence number below bit 56; point-to-point:
// bit 63), so servers and workers share the mesh with everything else.
const (
	// meshRequests carries, from a worker to a server, requests in order:
	// each a header (headerSize bytes, then the key's name as a message of
	// its own when there is one) and, for a piece of a push, its payload
	// as the next message.
	meshRequests uint64 = 1<<62 | 1
	// meshResponses carries, from a server to a worker, the pieces of the
	// ranges it pulled, in the order asked for, each range cut at the
	// shard's chunk grid.
	meshResponses uint64 = 1<<62 | 2
	// meshWhy carries, from a server to a worker, the answer to a why: what
	// the worker's timed-out pull waited for, as the server sees it (an
	// answer: see sendAnswer).
	meshWhy uint64 = 1<<62 | 3
	// meshAcks carries, from a server to a worker, the end of a training
	// push (init or gradient): taken (an empty answer), or refused and why.
	// A collective's push needs none: its pulls say everything arrived.
	meshAcks uint64 = 1<<62 | 4
)

// meshLink is a worker's path to one server over the mesh.
type meshLink struct {
	tr   driver.Transport
	peer int // the server's rank in the mesh
	rank uint32
	// timeout is the operation timeout, which sizes a why's budget.
	timeout time.Duration
	// mu keeps the messages of one request together and requests in the
	// order their responses are posted for: concurrent operations of
	// different groups may talk to one server at once. It guards hdr, the
	// memory headers are encoded in.
	mu  sync.Mutex
	hdr []byte
	// pullFirst: ask for the pulls before pushing. A dedicated server
	// answers them on a goroutine of its own as chunks complete, so the
	// result streams back to the worker while its push still goes out:
	// without that, each phase would leave one direction of the worker's
	// full-duplex link idle, and take twice as long when the link is the
	// bound. A colocated server's links are busy both ways in both phases
	// (every worker pushes and serves at once), so there the overlap buys
	// no bandwidth, and on a loaded host it costs CPU: its pulls follow the
	// push.
	pullFirst bool
	// wire counts the payload bytes pushed to and pulled from the server,
	// for dedicated servers' traffic (collective.WireBytes.Servers).
	wire *wireCount
}

// pullReq is one range to pull into dst.
type pullReq struct {
	h   header
	dst []byte
}

// sendHeader sends h as one request header (and its key's name). l.mu is
// held.
func (l *meshLink) sendHeader(ctx context.Context, h *header) error {
	b := h.appendTo(l.hdr[:0])
	l.hdr = b
	if err := l.tr.Send(ctx, l.peer, meshRequests, b[:headerSize]); err != nil {
		return err
	}
	if len(h.name) > 0 {
		return l.tr.Send(ctx, l.peer, meshRequests, b[headerSize:])
	}
	return nil
}

// exchange pulls each of pulls and pushes pieces under h (when h is not
// nil): the pulls' receives are posted first, into their destinations, so that
// every piece of the result lands in place as it arrives. A piece of the
// result comes only after the server has every contribution to it, this
// worker's push of it included, so pulling into the memory pushed from is
// safe.
func (l *meshLink) exchange(ctx context.Context, h *header, pieces []piece, pulls []pullReq) error {
	var posted []driver.Posted
	var of []int      // the pull each posted receive is part of
	var acked *answer // a training push's
	start := time.Now()
	l.mu.Lock()
	err := func() error {
		for i, p := range pulls {
			err := gridPieces(int(p.h.offset), len(p.dst), int(p.h.chunk), func(lo, hi int) error {
				at := lo - int(p.h.offset)
				r, err := l.tr.PostRecv(l.peer, meshResponses, p.dst[at:at+hi-lo])
				posted, of = append(posted, r), append(of, i)
				return err
			})
			if err != nil {
				return err
			}
		}
		if l.pullFirst {
			if err := l.askPulls(ctx, pulls); err != nil {
				return err
			}
		}
		if h != nil {
			if h.kind != kindPush {
				var err error
				if acked, err = l.postAnswer(meshAcks); err != nil {
					return err
				}
			}
			if err := l.push(ctx, *h, pieces); err != nil {
				return err
			}
		}
		if !l.pullFirst {
			return l.askPulls(ctx, pulls)
		}
		return nil
	}()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if acked != nil {
		refused, err := acked.read(ctx, l)
		if err != nil {
			return err
		}
		if refused != "" {
			return fmt.Errorf("refused: %s", refused)
		}
	}
	for i, r := range posted {
		if err := r.Wait(ctx); err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return l.explain(ctx, &pulls[of[i]].h, start)
			}
			return err
		}
	}
	for _, p := range pulls {
		l.wire.recv.Add(int64(len(p.dst)))
	}
	return nil
}

// askPulls sends the pulls' requests. l.mu is held.
func (l *meshLink) askPulls(ctx context.Context, pulls []pullReq) error {
	for i := range pulls {
		if err := l.sendHeader(ctx, &pulls[i].h); err != nil {
			return err
		}
	}
	return nil
}

// push sends a push: a collective's as one span header per contiguous run
// of pieces, so that the server posts a receive for every piece of it, in
// place, before the pieces arrive (a piece that found no receive posted
// would be read into memory of its own and copied); a training key's as a
// header and a payload per piece (with no pieces, a header alone: a
// worker's part in an init whose values come from rank 0). Then the end of
// the push. l.mu is held.
func (l *meshLink) push(ctx context.Context, h header, pieces []piece) error {
	if len(pieces) == 0 {
		pieces = []piece{{}}
	}
	if h.kind == kindPush {
		for i := 0; i < len(pieces); {
			j, end := i+1, pieces[i].offset+len(pieces[i].data)
			for j < len(pieces) && pieces[j].offset == end {
				end += len(pieces[j].data)
				j++
			}
			span := h
			span.kind, span.offset, span.length = kindSpan, uint64(pieces[i].offset), uint64(end-pieces[i].offset)
			if err := l.sendHeader(ctx, &span); err != nil {
				return err
			}
			if err := l.sendPayloads(ctx, pieces[i:j]); err != nil {
				return err
			}
			i = j
		}
	} else {
		for i, p := range pieces {
			h.offset, h.length = uint64(p.offset), uint64(len(p.data))
			if err := l.sendHeader(ctx, &h); err != nil {
				return err
			}
			if err := l.sendPayloads(ctx, pieces[i:i+1]); err != nil {
				return err
			}
		}
	}
	end := h
	end.kind, end.offset, end.length = kindDone, 0, 0
	return l.sendHeader(ctx, &end)
}

// sendPayloads sends each piece's bytes as a message.
func (l *meshLink) sendPayloads(ctx context.Context, pieces []piece) error {
	for _, p := range pieces {
		if len(p.data) == 0 {
			continue
		}
		if err := l.tr.Send(ctx, l.peer, meshRequests, p.data); err != nil {
			return err
		}
		l.wire.sent.Add(int64(len(p.data)))
	}
	return nil
}

// explain is the error of a pull that this worker's deadline cut: what it
// waited for, as the server says when asked (why), within a diagnosis
// budget; a server that does not answer is named as the likely cause, and
// another rank's abort that arrives meanwhile is the error instead.
func (l *meshLink) explain(ctx context.Context, h *header, start time.Time) error {
	te := &collective.TimeoutError{After: time.Since(start), Waiting: h.waitedFor()}
	budget := diagnosisBudget(l.timeout)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	text, err := l.why(dctx, h)
	if errors.Is(err, collective.ErrAborted) {
		return err
	}
	switch {
	case err == nil:
		te.Cause = "the server says: " + text
	case errors.Is(err, collective.ErrTimeout) || errors.Is(err, context.DeadlineExceeded):
		te.Cause = fmt.Sprintf("the server did not answer within %v either: its process is stopped, stuck, or too starved of CPU to answer", budget)
	default:
		te.Cause = fmt.Sprintf("asking the server what it waited for failed: %v", err)
	}
	return te
}

// why asks the server what a request with header h waits for.
func (l *meshLink) why(ctx context.Context, h *header) (string, error) {
	a, err := l.postAnswer(meshWhy)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	err = l.sendHeader(ctx, &header{kind: kindWhy, rank: l.rank, group: h.group, seq: h.seq, name: h.name, aux: uint32(h.kind)})
	l.mu.Unlock()
	if err != nil {
		// A server whose link is gone is most often in a rank that is
		// aborting the job (its own deadline, at about the same time):
		// the abort fails the answer's receive with its cause, which says
		// more than the closed link. Wait for it within ctx.
		if aerr := a.r.Wait(ctx); errors.Is(aerr, collective.ErrAborted) {
			return "", aerr
		}
		return "", err
	}
	return a.read(ctx, l)
}

// An answer (a training push's acknowledgement, a why's) is a 4-byte
// length and, when that is not 0, the text as a message of its own: an
// acknowledgement that says nothing costs 4 bytes on the wire, not a
// text's worth. A worker's training calls and whys to one server do not
// overlap (they are its world's, one at a time), so the text that follows
// a length is the receive's next message under its tag.
const answerHeader = 4

// sendAnswer sends text as an answer under tag to mesh rank to.
func sendAnswer(ctx context.Context, tr driver.Transport, to int, tag uint64, text string) error {
	text = wire.Sanitize(text, maxAbortText)
	var n [answerHeader]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(text)))
	if err := tr.Send(ctx, to, tag, n[:]); err != nil || text == "" {
		return err
	}
	return tr.Send(ctx, to, tag, []byte(text))
}

// postAnswer posts the receive of an answer's length under tag.
func (l *meshLink) postAnswer(tag uint64) (*answer, error) {
	a := &answer{tag: tag}
	r, err := l.tr.PostRecv(l.peer, tag, a.n[:])
	a.r = r
	return a, err
}

// answer is an answer whose length's receive is posted.
type answer struct {
	tag uint64
	n   [answerHeader]byte
	r   driver.Posted
}

// read waits for the answer and returns its text ("" for none).
func (a *answer) read(ctx context.Context, l *meshLink) (string, error) {
	if err := a.r.Wait(ctx); err != nil {
		return "", err
	}
	n := int(binary.LittleEndian.Uint32(a.n[:]))
	if n == 0 {
		return "", nil
	}
	if n > maxAbortText {
		return "", fmt.Errorf("protocol error: a %d-byte answer, over the limit of %d", n, maxAbortText)
	}
	text := make([]byte, n)
	if err := l.tr.Recv(ctx, l.peer, a.tag, text); err != nil {
		return "", err
	}
	return wire.Sanitize(string(text), maxAbortText), nil
}

// bye tells the server this worker has closed.
func (l *meshLink) bye(ctx context.Context, rank uint32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sendHeader(ctx, &header{kind: kindBye, rank: rank})
}

// gridPieces calls f for each piece of [off, off+n) cut at multiples of
// chunk (the pieces in which a server sends a range it is pulled from, and
// a worker a span it pushes), until f returns an error, which it returns.
func gridPieces(off, n, chunk int, f func(lo, hi int) error) error {
	for pos, end := off, off+n; pos < end; {
		hi := min((pos/chunk+1)*chunk, end)
		if err := f(pos, hi); err != nil {
			return err
		}
		pos = hi
	}
	return nil
}

// meshErr wraps an error of a request to server c over the mesh.
func (c *serverConn) meshErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *ServerError
	if errors.As(err, &se) && se.Index == c.index {
		return err
	}
	return &ServerError{Index: c.index, Addr: meshAddr(c.mesh.tr, c.mesh.peer), Op: op, Err: err}
}

// meshAddr names a mesh rank and its address: "rank 5, 10.0.0.2:4100".
func meshAddr(tr driver.Transport, rank int) string {
	if addr := tr.PeerAddr(rank); addr != "" {
		return fmt.Sprintf("rank %d, %s", rank, addr)
	}
	return fmt.Sprintf("rank %d", rank)
}

// joinMesh sets the world up over the job's transport mesh: colocated
// server i is the worker of rank i, serving the other workers over the
// mesh and its own by direct calls.
func (w *world) joinMesh() error {
	cfg := w.cfg
	if w.o.placement == dedicated {
		return w.joinServerMesh()
	}
	if cfg.Transport == nil && cfg.Size > 1 {
		return fmt.Errorf("ps: transport=mesh needs the job's transport (Config.Transport)")
	}
	w.tr = cfg.Transport
	w.ctx, w.cancel = context.WithCancel(context.Background())
	if cfg.Rank < w.k {
		w.local = newServer(cfg.Rank, cfg.Size, wire.HandshakeConfig{}, w.o.peerTimeout, cfg.Logf)
		if w.tr != nil { // nil: a world of one, served by direct calls alone
			w.local.mesh = newMeshServer(w.local, w.tr, cfg.OpTimeout())
			w.local.mesh.start(cfg.Size, cfg.Rank)
		}
	}
	w.conns = make([]*serverConn, w.k)
	for i := range w.k {
		if i == cfg.Rank {
			w.conns[i] = newLocalConn(w.local, cfg.Rank, cfg.Size)
		} else {
			w.conns[i] = newMeshConn(i, cfg.Rank, cfg.Size, &meshLink{tr: w.tr, peer: i, rank: uint32(cfg.Rank), timeout: cfg.OpTimeout()})
		}
	}
	return nil
}

// joinServerMesh sets the world up for dedicated servers over the mesh:
// server i is the mesh's rank Size+i.
func (w *world) joinServerMesh() error {
	cfg := w.cfg
	// A mesh may have more ranks than the job (an engine allocation's,
	// shared by launches of several sizes): those after the servers idle.
	if tr := cfg.Transport; tr == nil || tr.Size() < cfg.Size+w.k {
		size := 0
		if tr != nil {
			size = tr.Size()
		}
		return fmt.Errorf("ps: placement=dedicated over transport=mesh needs a mesh of the %d workers and %d servers, not of %d ranks (a launcher that starts the servers gives one; or use transport=grpc)",
			cfg.Size, w.k, size)
	}
	w.tr = cfg.Transport
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.conns = make([]*serverConn, w.k)
	for i := range w.k {
		w.conns[i] = newMeshConn(i, cfg.Rank, cfg.Size, &meshLink{tr: w.tr, peer: cfg.Size + i, rank: uint32(cfg.Rank), timeout: cfg.OpTimeout(), pullFirst: true})
	}
	return nil
}

// serveMesh runs dedicated server cfg.Index over the job's mesh until
// every worker has closed (nil) or ctx ends.
func serveMesh(ctx context.Context, cfg driver.ServerConfig, o options, k int) error {
	tr := cfg.Transport
	if tr == nil || tr.Size() < cfg.Workers+k || tr.Rank() != cfg.Workers+cfg.Index {
		return fmt.Errorf("%s: server %d: transport=mesh needs its end of the job's mesh as rank %d of %d (ServerConfig.Transport; or use transport=grpc)",
			Name, cfg.Index, cfg.Workers+cfg.Index, cfg.Workers+k)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = collective.DefaultTimeout
	}
	s := newServer(cfg.Index, cfg.Workers, wire.HandshakeConfig{}, o.peerTimeout, cfg.Logf)
	s.mesh = newMeshServer(s, tr, timeout)
	s.mesh.start(cfg.Workers, -1)
	defer s.stop()
	return s.serveUntil(ctx, fmt.Sprintf("mesh rank %d", tr.Rank()))
}
