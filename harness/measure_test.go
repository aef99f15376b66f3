package harness

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/results"
	_ "github.com/distbench/distbench/strategies/ps"
	_ "github.com/distbench/distbench/strategies/ring"
)

// measureInProcess runs spec on an in-memory world and returns rank 0's records.
func measureInProcess(t *testing.T, spec *job.Spec) []*results.Record {
	t.Helper()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	trs := transport.NewMemWorld(spec.NP, transport.MemOptions{})
	store := rendezvous.NewMemStore() // for a parameter server's addresses
	var (
		mu   sync.Mutex
		recs []*results.Record
		wg   sync.WaitGroup
	)
	errs := make([]error, spec.NP)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for r := range spec.NP {
		wg.Go(func() {
			comm, err := collective.New(ctx, spec.Strategy, collective.Config{
				Rank: r, Size: spec.NP, Transport: trs[r], Timeout: spec.Timeout, Options: spec.Options,
				Store: store, JobID: "measure-test", Token: []byte("measure-test-token"),
			})
			if err != nil {
				errs[r] = err
				return
			}
			defer comm.Close()
			errs[r] = Measure(ctx, comm, spec, func(rec *results.Record) error {
				mu.Lock()
				defer mu.Unlock()
				recs = append(recs, rec)
				return nil
			})
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return recs
}

// TestMeasureEveryCollective checks every collective's benchmark, in both
// forms, with exact inputs: #wrong must be 0, and the record must carry
// nccl-tests' quantities.
func TestMeasureEveryCollective(t *testing.T) {
	for _, np := range []int{1, 3} {
		for _, coll := range job.Collectives() {
			if tr, _ := job.TraitsOf(coll); tr.PointToPoint {
				continue // p2p_test.go
			}
			t.Run(fmt.Sprintf("np=%d/%s", np, coll), func(t *testing.T) {
				spec := &job.Spec{Strategy: "ring", NP: np, Timeout: time.Minute, Iters: 3, Warmup: 1, Check: true, KeepSamples: true}
				for _, inplace := range []bool{false, true} {
					for _, dt := range []string{"float32", "bfloat16", "int64"} {
						spec.Points = append(spec.Points, job.Point{Collective: coll, Bytes: 3 * 1000 * 8, DType: dt, Op: "max", Root: np - 1, InPlace: inplace})
					}
				}
				recs := measureInProcess(t, spec)
				if len(recs) != len(spec.Points) {
					t.Fatalf("%d records for %d points", len(recs), len(spec.Points))
				}
				for _, r := range recs {
					if r.Wrong != 0 || r.Error != "" {
						t.Errorf("%s: wrong %d, error %q", r.Point, r.Wrong, r.Error)
					}
					if len(r.SamplesUs) != spec.Iters || r.TimeUs <= 0 && coll != "barrier" {
						t.Errorf("%s: %d samples, median %v", r.Point, len(r.SamplesUs), r.TimeUs)
					}
					if coll != "barrier" && (r.AlgBWGBs <= 0 || r.Bytes != 24000 || r.Count*int64(sizeOf(r.DType)) != r.Bytes) {
						t.Errorf("%s: bytes %d count %d algbw %v", r.Point, r.Bytes, r.Count, r.AlgBWGBs)
					}
				}
			})
		}
	}
}

func sizeOf(dt string) int {
	d, _ := collective.ParseDType(dt)
	return d.Size()
}

// TestBenchmarksAreTheCollectives: every collective a spec may name has a
// benchmark here, and no benchmark is unreachable.
func TestBenchmarksAreTheCollectives(t *testing.T) {
	var have []string
	for name := range benchmarks {
		have = append(have, name)
	}
	for name := range p2pNames {
		have = append(have, name)
	}
	slices.Sort(have)
	if want := job.Collectives(); !slices.Equal(have, want) {
		t.Errorf("benchmarks for %v, but job.Collectives() is %v", have, want)
	}
}

// Every record carries each rank's host, pid and own times; the slowest
// rank's time per iteration is the largest of them.
func TestMeasurePerRank(t *testing.T) {
	const n = 3
	host, _ := os.Hostname()
	for _, keep := range []bool{false, true} {
		spec := &job.Spec{Strategy: "ring", NP: n, Timeout: time.Minute, Iters: 4, Warmup: 1, KeepSamples: keep,
			Points: []job.Point{{Collective: "allreduce", Bytes: 4096, DType: "float32", Op: "sum"},
				{Collective: "allgather", Bytes: 4096, DType: "float32"}}}
		for _, r := range measureInProcess(t, spec) {
			if len(r.RankHosts) != n || len(r.RankPIDs) != n || len(r.RankMedianUs) != n || len(r.RankMeanUs) != n {
				t.Fatalf("%s: hosts %v pids %v medians %v means %v", r.Point, r.RankHosts, r.RankPIDs, r.RankMedianUs, r.RankMeanUs)
			}
			for rank := range n {
				if r.RankHosts[rank] != host[:min(len(host), hostMax)] || r.RankPIDs[rank] != os.Getpid() || r.RankMedianUs[rank] <= 0 {
					t.Errorf("%s: rank %d: host %q pid %d median %v", r.Point, rank, r.RankHosts[rank], r.RankPIDs[rank], r.RankMedianUs[rank])
				}
			}
			if !keep {
				if r.RankSamplesUs != nil {
					t.Errorf("%s: per-rank samples kept without KeepSamples", r.Point)
				}
				continue
			}
			if len(r.RankSamplesUs) != n {
				t.Fatalf("%s: samples of %d ranks", r.Point, len(r.RankSamplesUs))
			}
			for i, s := range r.SamplesUs {
				slowest := 0.0
				for rank := range n {
					slowest = max(slowest, r.RankSamplesUs[rank][i])
				}
				if s != slowest {
					t.Errorf("%s: iteration %d: %v, but the slowest rank took %v", r.Point, i, s, slowest)
				}
			}
		}
	}
}
