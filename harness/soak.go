package harness

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/internal/exact"
	"github.com/distbench/distbench/results"
)

// soakControlEvery is how many operations run between the ranks' agreement
// on whether to stop or checkpoint: a small allreduce every so often, so
// that the ranks, each with only its own clock, act at the same operation.
const soakControlEvery = 8

// Soak runs spec.Soak on comm; every rank calls it. Rank 0 emits one
// KindSoak record: the operations run, the wrong elements seen (every
// operation's whole result is checked against the exact answer), and every
// rank's goroutines and memory at each checkpoint. The first checkpoint is
// taken after a warm-up (every dtype at the largest size, then a fifth of
// the duration), so that pools and buffers have reached their working size;
// growth after it is a leak.
func Soak(ctx context.Context, comm collective.Comm, spec *job.Spec, emit func(*results.Record) error) error {
	cfg := spec.Soak
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x50a4))
	dtypes := collective.DTypes()
	ops := collective.Ops()
	n, r := comm.Size(), comm.Rank()
	start := time.Now()
	st := &results.SoakStats{}
	var samples []int64 // per checkpoint: goroutines, heap bytes, RSS bytes
	var opErr error

	run := func(dt collective.DType, op collective.Op, count, seq int) error {
		t := collective.NewTensor(dt, count)
		exact.Fill(t, op, n, r, seq)
		if err := comm.AllReduce(ctx, t, op); err != nil {
			return fmt.Errorf("soak operation %d (allreduce of %d %s, %s): %w", seq, count, dt, op, err)
		}
		st.Wrong += exact.CountWrong(t, op, n, seq)
		st.Ops++
		st.Bytes += int64(count * dt.Size())
		return nil
	}
	// Warm-up: every dtype at the largest size, then every op at a small one.
	seq := 0
	for _, dt := range dtypes {
		if opErr = run(dt, collective.Sum, int(cfg.MaxBytes)/dt.Size(), seq); opErr != nil {
			break
		}
		seq++
	}
	for _, op := range ops {
		if opErr != nil {
			break
		}
		if opErr = run(collective.Float32, op, 1023, seq); opErr == nil {
			seq++
		}
	}
	ctl := collective.NewTensor(collective.Int64, 1)
	// Checkpoint k at warm + k·interval: the first a fifth of the way in,
	// once pools and caches have seen a spread of sizes (a pool that fills
	// up to its bound is not a leak; one that keeps growing after is).
	warm := cfg.Duration / 5
	interval := (cfg.Duration - warm) / time.Duration(cfg.Checkpoints-1)
	next := 0 // the checkpoint rank 0 waits for
	for opErr == nil {
		if seq%soakControlEvery == 0 {
			// Rank 0 decides: 0 go on, 1 checkpoint, 2 last checkpoint and stop.
			v := int64(0)
			// The last checkpoint falls at Duration; a soak whose warm-up
			// overran (a loaded machine) still takes every checkpoint.
			if r == 0 && time.Since(start) >= warm+time.Duration(next)*interval {
				v = 1
				if next == cfg.Checkpoints-1 {
					v = 2
				}
			}
			ctl.Int64s()[0] = v
			if err := comm.Broadcast(ctx, ctl, 0); err != nil {
				opErr = fmt.Errorf("soak control after operation %d: %w", seq, err)
				break
			}
			if v := ctl.Int64s()[0]; v > 0 {
				samples = append(samples, soakSample()...)
				next++
				if v == 2 {
					break
				}
			}
		}
		dt := dtypes[rng.IntN(len(dtypes))]
		op := ops[rng.IntN(len(ops))]
		maxCount := max(int(cfg.MaxBytes)/dt.Size(), 1)
		count := max(1, int(math.Exp(rng.Float64()*math.Log(float64(maxCount+1))))-1)
		count = min(count, maxCount)
		opErr = run(dt, op, count, seq)
		seq++
	}
	st.Seconds = time.Since(start).Seconds()
	if opErr != nil {
		// Whatever broke the soak broke the communicator: report what ran.
		if r == 0 {
			rec := soakRecord(spec, st)
			rec.Error, rec.Incomplete = opErr.Error(), true
			if err := emit(rec); err != nil {
				return err
			}
		}
		return opErr
	}
	// Rank 0 gathers every rank's checkpoints and counts; all ranks took the
	// same number of samples since they followed the same decisions.
	mine := append([]int64{st.Ops, st.Wrong}, samples...)
	all := collective.NewTensor(collective.Int64, len(mine)*n)
	if err := comm.Gather(ctx, all, collective.FromInt64(mine), 0); err != nil {
		return fmt.Errorf("gathering soak figures: %w", err)
	}
	if r != 0 {
		return nil
	}
	v := all.Int64s()
	st.Wrong = 0
	for rk := range n {
		row := v[rk*len(mine) : (rk+1)*len(mine)]
		st.Wrong += row[1]
		pr := results.SoakRank{Rank: rk}
		for i := 2; i+3 <= len(row); i += 3 {
			pr.Goroutines = append(pr.Goroutines, int(row[i]))
			pr.HeapBytes = append(pr.HeapBytes, row[i+1])
			pr.RSSBytes = append(pr.RSSBytes, row[i+2])
		}
		st.Ranks = append(st.Ranks, pr)
	}
	return emit(soakRecord(spec, st))
}

func soakRecord(spec *job.Spec, st *results.SoakStats) *results.Record {
	return &results.Record{
		Kind: results.KindSoak, Collective: "allreduce", Strategy: spec.Strategy, NP: spec.NP,
		Options: spec.Options, Link: spec.Link, Root: -1, Wrong: st.Wrong, Soak: st,
	}
}

// soakSample is this process's goroutines, live heap after a collection, and
// resident set size.
func soakSample() []int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return []int64{int64(runtime.NumGoroutine()), int64(ms.HeapInuse), rssBytes()}
}

// rssBytes is the resident set size from /proc/self/statm, 0 where there
// is none.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
