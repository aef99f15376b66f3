package harness

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/results"
	_ "github.com/distbench/distbench/strategies/ps"
	_ "github.com/distbench/distbench/strategies/ring"
)

// measureInProcess runs spec on an in-memory world and returns rank 0's records.
func measureInProcess(t *testing.T, spec *Spec) []*results.Record {
	t.Helper()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	trs := transport.NewMemWorld(spec.NP, transport.MemOptions{})
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
			comm, err := collective.New(ctx, spec.Strategy, collective.Config{Rank: r, Size: spec.NP, Transport: trs[r], Timeout: spec.Timeout})
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
		for _, coll := range Collectives() {
			t.Run(fmt.Sprintf("np=%d/%s", np, coll), func(t *testing.T) {
				spec := &Spec{Strategy: "ring", NP: np, Timeout: time.Minute, Iters: 3, Warmup: 1, Check: true, KeepSamples: true}
				for _, inplace := range []bool{false, true} {
					for _, dt := range []string{"float32", "bfloat16", "int64"} {
						spec.Points = append(spec.Points, Point{Collective: coll, Bytes: 3 * 1000 * 8, DType: dt, Op: "max", Root: np - 1, InPlace: inplace})
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

func TestSpecValidate(t *testing.T) {
	good := func() *Spec {
		return &Spec{Strategy: "ring", NP: 2, Timeout: time.Second, Iters: 1,
			Points: []Point{{Collective: "allreduce", Bytes: 64, DType: "float32", Op: "sum"}}}
	}
	tests := []struct {
		name   string
		mutate func(*Spec)
		want   string
	}{
		{"good", func(*Spec) {}, ""},
		{"strategy", func(s *Spec) { s.Strategy = "nope" }, `unknown strategy "nope"`},
		{"np", func(s *Spec) { s.NP = 0 }, "np 0"},
		{"iters", func(s *Spec) { s.Iters = 0 }, "iters 0"},
		{"timeout", func(s *Spec) { s.Timeout = 0 }, "timeout"},
		{"collective", func(s *Spec) { s.Points[0].Collective = "allreduse" }, `unknown collective "allreduse"`},
		{"dtype", func(s *Spec) { s.Points[0].DType = "float7" }, `unknown dtype "float7"`},
		{"op", func(s *Spec) { s.Points[0].Op = "xor" }, `unknown op "xor"`},
		{"multiple", func(s *Spec) { s.Points[0].Bytes = 6 }, "not a multiple"},
		{"root", func(s *Spec) { s.Points[0].Root = 2 }, "root 2 out of range"},
		{"option", func(s *Spec) { s.Options = map[string]string{"bogus": "1"} }, `unknown option "bogus"`},
		{"timeout too short", func(s *Spec) { s.Timeout = time.Nanosecond }, "timeout 1ns: too short (accepted: 1s or more)"},
		{"size too large", func(s *Spec) { s.Points[0].Bytes = 1<<50 + 4 }, "size 1125899906842628 bytes: out of range (accepted: 0 to 1125899906842624, 1PiB)"},
		{"servers past the process limit", func(s *Spec) {
			s.Strategy, s.NP, s.Options = "ps", 1, map[string]string{"placement": "dedicated", "servers": "520"}
		}, "np 1 and 520 dedicated servers: 521 processes, but at most 512 local processes (accepted: np plus servers up to 512)"},
		{"a server a worker past the process limit", func(s *Spec) {
			s.Strategy, s.NP, s.Options = "ps", 300, map[string]string{"placement": "dedicated"}
		}, "np 300 and 300 dedicated servers: 600 processes"},
		{"servers at the process limit", func(s *Spec) {
			s.Strategy, s.NP, s.Options = "ps", 256, map[string]string{"placement": "dedicated"}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good()
			tt.mutate(s)
			err := s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
