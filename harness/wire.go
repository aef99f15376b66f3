package harness

import (
	"context"
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/results"
)

// wireMeter takes one rank's wire counts (collective.WireCounter) around
// the timed iterations of a point, less what the harness's own calls
// between them (the time budget's allreduce) moved.
//
// Each rank reads only its own counters, so each reading is fenced by
// barriers, in the collective under test: the one before lets every rank
// finish what came before (a colocated parameter server serves other
// ranks' pulls after this rank's own operation has returned, and those
// bytes belong to it), the one after keeps every rank from starting what
// comes next (a fast rank's first message would otherwise reach a slow
// rank before its reading). Barriers move no payload over the meshes and a
// byte per rank on a parameter server, part of which may be counted.
type wireMeter struct {
	wc          collective.WireCounter // nil: the communicator does not count
	start, mark collective.WireBytes
	skip        collective.WireBytes
}

// startWire takes the first reading; the caller's barrier before timing
// is its fence's second barrier.
func startWire(ctx context.Context, comm collective.Comm) (*wireMeter, error) {
	wc, ok := comm.(collective.WireCounter)
	if !ok {
		return &wireMeter{}, nil
	}
	if err := comm.Barrier(ctx); err != nil {
		return nil, fmt.Errorf("barrier before counting bytes: %w", err)
	}
	return &wireMeter{wc: wc, start: wc.WireBytes()}, nil
}

// fence reads the counters between two barriers.
func (m *wireMeter) fence(ctx context.Context, comm collective.Comm) (collective.WireBytes, error) {
	if err := comm.Barrier(ctx); err != nil {
		return collective.WireBytes{}, fmt.Errorf("barrier before counting bytes: %w", err)
	}
	w := m.wc.WireBytes()
	if err := comm.Barrier(ctx); err != nil {
		return collective.WireBytes{}, fmt.Errorf("barrier after counting bytes: %w", err)
	}
	return w, nil
}

// pause and resume leave out what moves between them.
func (m *wireMeter) pause(ctx context.Context, comm collective.Comm) (err error) {
	if m.wc != nil {
		m.mark, err = m.fence(ctx, comm)
	}
	return err
}

func (m *wireMeter) resume(ctx context.Context, comm collective.Comm) error {
	if m.wc == nil {
		return nil
	}
	w, err := m.fence(ctx, comm)
	m.skip = wireAdd(m.skip, wireSub(w, m.mark))
	return err
}

// stop returns this rank's bytes over the timed iterations as the numbers
// the harness gathers: sent, received, then each dedicated server's sent
// and received with this rank; none when the communicator does not count
// (every rank runs the same strategy, so all agree).
func (m *wireMeter) stop(ctx context.Context, comm collective.Comm) ([]float64, error) {
	if m.wc == nil {
		return nil, nil
	}
	w, err := m.fence(ctx, comm)
	if err != nil {
		return nil, err
	}
	d := wireSub(wireSub(w, m.start), m.skip)
	out := []float64{float64(d.Sent), float64(d.Recv)}
	for _, s := range d.Servers {
		out = append(out, float64(s.Sent), float64(s.Recv))
	}
	return out, nil
}

func wireSub(a, b collective.WireBytes) collective.WireBytes {
	return wireAdd(a, wireNeg(b))
}

func wireNeg(a collective.WireBytes) collective.WireBytes {
	n := collective.WireBytes{Sent: -a.Sent, Recv: -a.Recv}
	for _, s := range a.Servers {
		n.Servers = append(n.Servers, wireNeg(s))
	}
	return n
}

func wireAdd(a, b collective.WireBytes) collective.WireBytes {
	s := collective.WireBytes{Sent: a.Sent + b.Sent, Recv: a.Recv + b.Recv}
	for i := range max(len(a.Servers), len(b.Servers)) {
		var x, y collective.WireBytes
		if i < len(a.Servers) {
			x = a.Servers[i]
		}
		if i < len(b.Servers) {
			y = b.Servers[i]
		}
		s.Servers = append(s.Servers, wireAdd(x, y))
	}
	return s
}

// setWire fills rec's wire fields from the gathered numbers: per holds
// each rank's stride numbers, iters times then the wireN numbers stop
// returned (then, with a launch's first point, its identity). A
// dedicated server's traffic is the sum of what every rank exchanged with
// it.
func setWire(rec *results.Record, per []float64, stride, iters, wireN, n int) {
	extra := wireN
	if extra < 2 || iters <= 0 {
		return
	}
	k := (extra - 2) / 2
	sent, recv := make([]float64, n), make([]float64, n)
	var ssent, srecv []float64
	if k > 0 {
		ssent, srecv = make([]float64, k), make([]float64, k)
	}
	it := float64(iters)
	for r := range n {
		w := per[r*stride+iters : r*stride+iters+wireN]
		sent[r], recv[r] = w[0]/it, w[1]/it
		for i := range k {
			ssent[i] += w[2+2*i] / it
			srecv[i] += w[3+2*i] / it
		}
	}
	rec.SetWire(sent, recv, ssent, srecv)
}
