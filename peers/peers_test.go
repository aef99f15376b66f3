package peers

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/results"
)

func TestDecode(t *testing.T) {
	job := Job{NP: 2, Sizes: []int64{4096}, Iters: 3}
	good := `{"schema":1,"kind":"collective","peer":"mpi","collective":"allreduce","np":2,"bytes":4096,"count":1024,"dtype":"float32","op":"sum","root":-1,"inplace":true,"iters":3,"warmup":1,"samples_us":[30,10,20],"wrong":0,"elapsed_s":0.001}`
	r, err := decode([]byte(good), "mpi", job)
	if err != nil {
		t.Fatal(err)
	}
	if r.Point != PointID("mpi", 2, 4096) || r.TimeUs != 20 || r.Iters != 3 || r.Warmup != 1 || r.Wrong != 0 {
		t.Errorf("record %+v", r)
	}
	// allreduce busbw = algbw × 2(n−1)/n: at np 2, busbw = algbw = 4096 B / 20 µs.
	if want := 0.2048; math.Abs(r.AlgBWGBs-want) > 1e-12 || math.Abs(r.BusBWGBs-want) > 1e-12 {
		t.Errorf("algbw %v busbw %v, want %v", r.AlgBWGBs, r.BusBWGBs, want)
	}
	bad := map[string]string{
		"not json":      `{"schema":1,`,
		"unknown field": strings.Replace(good, `"wrong":0`, `"wrong":0,"extra":1`, 1),
		"other peer":    strings.Replace(good, `"peer":"mpi"`, `"peer":"gloo"`, 1),
		"other np":      strings.Replace(good, `"np":2`, `"np":3`, 1),
		"other size":    strings.Replace(good, `"bytes":4096`, `"bytes":8192`, 1),
		"no samples":    strings.Replace(good, `[30,10,20]`, `[]`, 1),
	}
	for name, line := range bad {
		if _, err := decode([]byte(line), "mpi", job); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestScriptArgs(t *testing.T) {
	got := strings.Join(scriptArgs(Job{NP: 2, Sizes: []int64{4096, 1 << 20}, Iters: 7, Warmup: 2, Check: true, TimeBudget: 1500 * time.Millisecond}), " ")
	want := "--sizes 4096,1048576 --iters 7 --warmup 2 --check --time-budget 1.5"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestUnknownPeer(t *testing.T) {
	if err := Available("nccl-tests"); err == nil || !strings.Contains(err.Error(), "mpi") {
		t.Errorf("Available(unknown) = %v", err)
	}
}

// TestRun runs each peer that is installed here on two tiny sizes; one that
// is not installed must say how to install it.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MPI and torch processes")
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			if err := Available(name); err != nil {
				var ue *UnavailableError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), "apt-get install") {
					t.Errorf("unavailable without an install line: %v", err)
				}
				t.Skip(err)
			}
			job := Job{NP: 2, Sizes: []int64{4096, 65536}, Iters: 5, Warmup: 1, Check: true, Timeout: time.Minute}
			var recs []*results.Record
			err := Run(context.Background(), name, job, func(r *results.Record) error {
				recs = append(recs, r)
				return nil
			}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 2 {
				t.Fatalf("%d records", len(recs))
			}
			for i, r := range recs {
				if r.Bytes != job.Sizes[i] || r.Peer != name || r.Wrong != 0 || len(r.SamplesUs) != 5 || r.TimeUs <= 0 || r.BusBWGBs <= 0 {
					t.Errorf("record %+v", r)
				}
			}
		})
	}
}
