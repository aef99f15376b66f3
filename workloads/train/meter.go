package train

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// epochMeter collects, over one epoch's training steps, what only the
// epoch record says: every rank's median time blocked on communication
// (rank 0 alone writes records, so the others' figures are gathered once,
// after the epoch, not in a step), the median of each transfer, and each
// rank's wire bytes per step where the strategy counts them.
//
// Each rank reads only its own byte counters, so a reading is fenced by
// barriers, as the harness fences its own (harness/wire.go): the one
// before lets every rank finish what came before, the one after keeps a
// fast rank's next message from reaching a slow one before its reading.
// Barriers move no payload on the meshes. The fences and the gather run
// between steps, outside every step's timing.
type epochMeter struct {
	wc        collective.WireCounter // nil: the strategy does not count
	start     collective.WireBytes
	exposedMs []float64
	transfers map[string][]float64
}

func startEpochMeter(ctx context.Context, comm collective.Comm) (*epochMeter, error) {
	m := &epochMeter{transfers: map[string][]float64{}}
	if wc, ok := comm.(collective.WireCounter); ok {
		w, err := fenceRead(ctx, comm, wc)
		if err != nil {
			return nil, err
		}
		m.wc, m.start = wc, w
	}
	return m, nil
}

func fenceRead(ctx context.Context, comm collective.Comm, wc collective.WireCounter) (collective.WireBytes, error) {
	if err := comm.Barrier(ctx); err != nil {
		return collective.WireBytes{}, fmt.Errorf("barrier before counting bytes: %w", err)
	}
	w := wc.WireBytes()
	if err := comm.Barrier(ctx); err != nil {
		return collective.WireBytes{}, fmt.Errorf("barrier after counting bytes: %w", err)
	}
	return w, nil
}

func (m *epochMeter) add(st *stepStats) {
	m.exposedMs = append(m.exposedMs, st.exposedMs)
	for name, ms := range st.transferMs {
		m.transfers[name] = append(m.transfers[name], ms)
	}
}

// epochStats is what an epochMeter measured, on every rank.
type epochStats struct {
	rankExposedMs []float64          // by rank
	transferMs    map[string]float64 // this rank's medians
	sent, recv    []float64          // by rank, bytes per step; nil when not counted
}

// stop ends the epoch's counting and gathers every rank's figures.
func (m *epochMeter) stop(ctx context.Context, comm collective.Comm) (*epochStats, error) {
	steps := len(m.exposedMs)
	mine := []float64{0, -1, -1} // median exposed ms, bytes sent and received per step (-1: not counted)
	if steps > 0 {
		mine[0] = stats.Median(m.exposedMs)
	}
	if m.wc != nil {
		w, err := fenceRead(ctx, comm, m.wc)
		if err != nil {
			return nil, err
		}
		if steps > 0 {
			mine[1] = float64(w.Sent-m.start.Sent) / float64(steps)
			mine[2] = float64(w.Recv-m.start.Recv) / float64(steps)
		}
	}
	n := comm.Size()
	all := make([]float64, 3*n)
	if err := comm.AllGather(ctx, collective.FromFloat64(all), collective.FromFloat64(mine)); err != nil {
		return nil, fmt.Errorf("gathering the ranks' step figures: %w", err)
	}
	es := &epochStats{rankExposedMs: make([]float64, n), transferMs: map[string]float64{}}
	counted := true
	for r := range n {
		es.rankExposedMs[r] = all[3*r]
		counted = counted && all[3*r+1] >= 0 && all[3*r+2] >= 0
	}
	if counted {
		for r := range n {
			es.sent, es.recv = append(es.sent, all[3*r+1]), append(es.recv, all[3*r+2])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.transfers)) {
		es.transferMs[name] = stats.Median(m.transfers[name])
	}
	return es, nil
}

// fill sets an epoch record's per-rank, per-transfer and wire fields.
func (es *epochStats) fill(r *results.Record) {
	r.RankExposedMs = es.rankExposedMs
	if len(es.transferMs) > 0 {
		r.TransferMs = es.transferMs
	}
	if es.sent != nil {
		r.SetWire(es.sent, es.recv, nil, nil)
	}
}
