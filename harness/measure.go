package harness

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/internal/telemetry"
	"github.com/distbench/distbench/results"
)

// Measure runs every point of spec on comm; every rank of the world calls it.
// On rank 0, emit receives one record per point; a point that fails is
// emitted with its error and ends the launch (the communicator is broken).
func Measure(ctx context.Context, comm collective.Comm, spec *job.Spec, emit func(*results.Record) error) error {
	var ids *rankIDs  // every rank's host and pid, from the first point
	gathered := false // by every rank alike: the ids ride on one point's gather
	// Rank 0 samples its host's GPUs during each point's timed
	// iterations; without an NVIDIA driver tel is nil and samples nothing.
	var tel *telemetry.Sampler
	if comm.Rank() == 0 {
		tel, _ = openTelemetry()
		defer tel.Close()
	}
	cycle := 1
	if spec.Cycles != 0 && spec.Cycles != 1 {
		each := emit
		emit = func(r *results.Record) error {
			r.Round, r.Rounds = cycle, max(spec.Cycles, 0)
			return each(r)
		}
	}
	for ; spec.Cycles < 0 || cycle <= max(spec.Cycles, 1); cycle++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := measureCycle(ctx, comm, spec, emit, tel, &ids, &gathered); err != nil {
			return err
		}
	}
	return nil
}

// measureCycle measures spec's points once; ids and gathered carry the
// ranks' identities from the first point of the first cycle.
func measureCycle(ctx context.Context, comm collective.Comm, spec *job.Spec, emit func(*results.Record) error, tel *telemetry.Sampler, idsp **rankIDs, gatheredp *bool) error {
	ids, gathered := *idsp, *gatheredp
	defer func() { *idsp, *gatheredp = ids, gathered }()
	for _, p := range spec.Points {
		start := time.Now()
		var rec *results.Record
		var pids *rankIDs
		var err error
		if t, _ := job.TraitsOf(p.Collective); t.PointToPoint {
			rec, err = measureP2P(ctx, comm, spec, p) // harness/p2p.go
		} else {
			rec, pids, err = measurePoint(ctx, comm, spec, p, !gathered, tel)
			gathered = true
		}
		if pids != nil {
			ids = pids
		}
		if comm.Rank() != 0 {
			if err != nil {
				return err
			}
			continue
		}
		if rec == nil {
			rec = spec.Record(p)
		}
		if ids != nil {
			rec.RankHosts, rec.RankPIDs = slices.Clone(ids.hosts), slices.Clone(ids.pids)
		}
		rec.StartedAt, rec.FinishedAt = start, time.Now()
		rec.ElapsedSecs = rec.FinishedAt.Sub(start).Seconds()
		if err != nil {
			rec.Error = err.Error()
			rec.Incomplete = true
		}
		if eerr := emit(rec); eerr != nil {
			return eerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// measurePoint measures p; on rank 0 it returns its record, and with the
// first point (first) every rank's identity.
func measurePoint(ctx context.Context, comm collective.Comm, spec *job.Spec, p job.Point, first bool, tel *telemetry.Sampler) (*results.Record, *rankIDs, error) {
	dt, err := collective.ParseDType(p.DType)
	if err != nil {
		return nil, nil, err
	}
	b := benchmarks[p.Collective]
	op := collective.Sum
	if t, _ := job.TraitsOf(p.Collective); t.Reduces {
		if op, err = collective.ParseOp(p.Op); err != nil {
			return nil, nil, err
		}
	}
	inst := &instance{
		comm: comm, n: comm.Size(), r: comm.Rank(), dt: dt, op: op, root: p.Root,
		count: p.Count(dt, comm.Size()), inplace: p.InPlace,
	}
	b.alloc(inst)
	if inst.in.DType == 0 {
		inst.in.DType = dt
	}
	// With --device cuda the operations run on device copies of the
	// buffers (harness/device.go); the check fills and counts the host's.
	run := inst
	var dev *devicePoint
	if spec.OnDevice() {
		if dev, err = onDevice(inst); err != nil {
			return nil, nil, err
		}
		defer dev.release()
		run = dev.dev
	}

	// Correctness first, on fresh exact inputs: timing iterations compound
	// reductions in place, so their results are not checkable.
	wrong := int64(-1)
	if spec.Check {
		// nccl-tests' -c N: N checked runs, stopping at the first with a
		// wrong element.
		for c := 0; c < max(spec.CheckRuns, 1) && wrong <= 0; c++ {
			b.fill(inst)
			if err := dev.checked(func() error { return b.run(ctx, run) }); err != nil {
				return nil, nil, fmt.Errorf("check run %d: %w", c+1, err)
			}
			w := collective.FromInt64([]int64{b.wrong(inst)})
			if err := comm.AllReduce(ctx, w, collective.Sum); err != nil {
				return nil, nil, fmt.Errorf("summing #wrong: %w", err)
			}
			wrong = w.Int64s()[0]
		}
	}
	for range spec.Warmup {
		if err := b.run(ctx, run); err != nil {
			return nil, nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	w, err := startWire(ctx, comm)
	if err != nil {
		return nil, nil, err
	}
	if err := comm.Barrier(ctx); err != nil {
		return nil, nil, fmt.Errorf("barrier before timing: %w", err)
	}
	iters := spec.Iters
	times := make([]float64, 0, iters)
	sampling := tel.Start(gpuSampleEvery)
	defer sampling.Stop() // on an error return; else stopped below
	for i := 0; i < iters; i++ {
		t0 := time.Now()
		if err := b.run(ctx, run); err != nil {
			return nil, nil, fmt.Errorf("iteration %d: %w", i, err)
		}
		times = append(times, float64(time.Since(t0).Nanoseconds())/1e3)
		if i+1 == job.MinBudgetIters && spec.TimeBudget > 0 && iters > job.MinBudgetIters {
			if err := w.pause(ctx, comm); err != nil {
				return nil, nil, err
			}
			if iters, err = budgetIters(ctx, comm, spec, times); err != nil {
				return nil, nil, err
			}
			if err := w.resume(ctx, comm); err != nil {
				return nil, nil, err
			}
		}
	}
	gpus := sampling.Stop()
	wire, err := w.stop(ctx, comm)
	if err != nil {
		return nil, nil, err
	}
	// Per iteration, the slowest rank's time: gather every rank's times to
	// rank 0 through the collective under test's own communicator, and
	// with them its wire bytes and, with the first point, its identity.
	mine := append(times, wire...)
	if first {
		mine = append(mine, ident()...)
	}
	stride := len(mine)
	all := collective.NewTensor(collective.Float64, stride*comm.Size())
	if err := comm.Gather(ctx, all, collective.FromFloat64(mine), 0); err != nil {
		return nil, nil, fmt.Errorf("gathering times: %w", err)
	}
	if comm.Rank() != 0 {
		return nil, nil, nil
	}
	per := all.Float64s()
	perRank := make([][]float64, comm.Size())
	slowest := slices.Clone(times)
	for r := range perRank {
		perRank[r] = per[r*stride : r*stride+iters]
		for i := range slowest {
			slowest[i] = max(slowest[i], perRank[r][i])
		}
	}
	var ids *rankIDs
	if first {
		ids = decodeIdents(per, stride, iters+len(wire), comm.Size())
	}
	rec := spec.Record(p)
	setWire(rec, per, stride, iters, len(wire), comm.Size())
	rec.Iters = iters
	rec.Wrong = wrong
	rec.GPU = gpus
	if err := results.Fill(rec, slowest); err != nil && p.Collective != "barrier" {
		return nil, nil, err
	}
	results.SetRanks(rec, perRank, spec.KeepSamples)
	if !spec.KeepSamples {
		rec.SamplesUs = nil
	}
	return rec, ids, nil
}

// openTelemetry opens NVML; tests give a mock's.
var openTelemetry = telemetry.Open

// gpuSampleEvery is how often telemetry samples the GPUs during a point,
// besides at its start and end: NVML's utilisation and PCIe figures are
// themselves averages over windows of about this size or less.
const gpuSampleEvery = 100 * time.Millisecond

// budgetIters decides, after the first job.MinBudgetIters timed iterations, how
// many iterations of a point fit in spec.TimeBudget. Every rank must run the
// same number (a rank that stopped early would leave its peers waiting in the
// next operation), and each has only its own clock, so the ranks agree on the
// slowest rank's time so far with one allreduce, outside the timed
// iterations, and all compute the same answer from it.
func budgetIters(ctx context.Context, comm collective.Comm, spec *job.Spec, times []float64) (int, error) {
	spent := 0.0
	for _, t := range times {
		spent += t
	}
	agreed := collective.FromFloat64([]float64{spent})
	if err := comm.AllReduce(ctx, agreed, collective.Max); err != nil {
		return 0, fmt.Errorf("agreeing on the time budget: %w", err)
	}
	perIter := agreed.Float64s()[0] / float64(len(times))
	budget := float64(spec.TimeBudget.Microseconds())
	n := spec.Iters
	if perIter > 0 && budget/perIter < float64(n) {
		n = int(budget / perIter)
	}
	return max(n, len(times)), nil
}
