package bridge

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/results"
)

// recorder writes a job's records into DISTBENCH_OUT/results.jsonl, from
// the world's rank 0 only (one file, one writer; the times are rank 0's):
// a KindOp record per operation as it completes, a KindTrainStep record per
// step the caller marks (SetStep), and, when the communicator closes, one
// KindCollective record per distinct operation (collective, size, dtype,
// reduction) with the times of all of them as samples, which is what
// `distbench report` draws: the job's bucket sizes and the time the
// strategy spent on them. Records are written by a goroutine of their own,
// since each is synced to disk, so that completing operations never waits
// for the disk.
type recorder struct {
	s     Settings
	np    int
	w     *results.Writer
	lines chan *results.Record
	done  chan struct{}
	start time.Time

	mu        sync.Mutex
	stepStart time.Time
	steps     map[int64]*stepAgg
	points    map[pointKey][]float64
	order     []pointKey
	err       error
}

type stepAgg struct {
	commUs             float64
	lastIssue, lastEnd time.Time
	ops                int
}

type pointKey struct {
	collective string
	np         int
	bytes      int64
	count      int64
	dtype      collective.DType
	reduce     collective.Op
	root       int
}

func newRecorder(s Settings, np int) (*recorder, error) {
	w, err := results.NewWriter(s.Out, results.CaptureEnv())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvOut, err)
	}
	now := time.Now()
	r := &recorder{
		s: s, np: np, w: w, lines: make(chan *results.Record, 4096), done: make(chan struct{}),
		start: now, stepStart: now, steps: map[int64]*stepAgg{}, points: map[pointKey][]float64{},
	}
	go r.write()
	return r, nil
}

func (r *recorder) write() {
	defer close(r.done)
	for rec := range r.lines {
		if err := r.w.Write(rec); err != nil {
			r.mu.Lock()
			if r.err == nil {
				r.err = err
			}
			r.mu.Unlock()
		}
	}
}

// base is a record with what every record of this job says.
func (r *recorder) base(kind string, np int) *results.Record {
	transport := r.s.Transport
	if transport == "" {
		transport = "tcp"
	}
	return &results.Record{
		Kind: kind, Strategy: r.s.Strategy, NP: np, Options: r.s.Options,
		Transport: transport, Link: r.s.Link, Workload: r.s.Model,
	}
}

// add records op, completed on c.
func (r *recorder) add(c *Comm, op *Op) {
	rec := r.base(results.KindOp, c.np())
	rec.Collective, rec.Bytes, rec.Count = op.Collective, op.Bytes, op.Count
	if op.DType != 0 {
		rec.DType = op.DType.String()
	}
	if op.Reduce != 0 {
		rec.Op = op.Reduce.String()
	}
	rec.Root, rec.Step, rec.TimeUs = op.Root, int(op.Step), op.busyUs
	rec.StartedAt, rec.FinishedAt = op.issued.UTC(), op.ended.UTC()
	if op.err != nil {
		rec.Error = op.err.Error()
	}
	r.mu.Lock()
	if op.err == nil {
		k := pointKey{op.Collective, c.np(), op.Bytes, op.Count, op.DType, op.Reduce, op.Root}
		if _, ok := r.points[k]; !ok {
			r.order = append(r.order, k)
		}
		r.points[k] = append(r.points[k], op.busyUs)
	}
	if c.ranks == nil {
		st := r.steps[op.Step]
		if st == nil {
			st = &stepAgg{}
			r.steps[op.Step] = st
		}
		st.commUs += op.busyUs
		st.ops++
		if op.issued.After(st.lastIssue) {
			st.lastIssue = op.issued
		}
		if op.ended.After(st.lastEnd) {
			st.lastEnd = op.ended
		}
	}
	r.mu.Unlock()
	r.lines <- rec
}

// endStep writes step's record, ended at now: its wall time since the
// previous step ended, the time the communicator was busy during it, and
// the exposed part, from the issue of its last operation (for DDP, the
// last gradient bucket: the end of the backward pass) to the completion of
// all of them. Steps without operations write nothing.
func (r *recorder) endStep(step int64, now time.Time) {
	r.mu.Lock()
	st := r.steps[step]
	delete(r.steps, step)
	wall := now.Sub(r.stepStart)
	r.stepStart = now
	r.mu.Unlock()
	if st == nil || st.ops == 0 {
		return
	}
	rec := r.base(results.KindTrainStep, r.np)
	rec.Model, rec.Mode, rec.Step = r.s.Model, "ddp", int(step)
	rec.Workload = ""
	exposed := max(st.lastEnd.Sub(st.lastIssue), 0)
	rec.CommMs = st.commUs / 1e3
	rec.ExposedMs = float64(exposed) / float64(time.Millisecond)
	rec.ComputeMs = max(float64(wall-exposed)/float64(time.Millisecond), 0)
	rec.ElapsedSecs = wall.Seconds()
	rec.WallSeconds = now.Sub(r.start).Seconds()
	r.lines <- rec
}

// close writes the summary records and closes the file.
func (r *recorder) close() error {
	r.mu.Lock()
	order := slices.Clone(r.order)
	points := r.points
	r.mu.Unlock()
	for _, k := range order {
		rec := r.base(results.KindCollective, k.np)
		rec.Collective, rec.Bytes, rec.Count, rec.Root = k.collective, k.bytes, k.count, k.root
		if k.dtype != 0 {
			rec.DType = k.dtype.String()
		}
		if k.reduce != 0 {
			rec.Op = k.reduce.String()
		}
		rec.InPlace = k.collective == "allreduce" || k.collective == "broadcast" || k.collective == "reduce"
		rec.Point = fmt.Sprintf("torch/%s/%s/np=%d/bytes=%d/%s/%s", k.collective, r.s.Strategy, k.np, k.bytes, rec.DType, rec.Op)
		rec.Iters = len(points[k])
		// Fill's error is an unknown collective's bus bandwidth (send,
		// recv): the times are filled all the same.
		_ = results.Fill(rec, points[k])
		r.lines <- rec
	}
	close(r.lines)
	<-r.done
	r.mu.Lock()
	err := r.err
	r.mu.Unlock()
	if err != nil {
		r.w.Close()
		return err
	}
	return r.w.Finish()
}
