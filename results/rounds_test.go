package results_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/results"
)

// roundRec is round `round` of `of` of point id, its samples summarised as
// the harness does.
func roundRec(t testing.TB, id string, round, of int, samples ...float64) results.Record {
	t.Helper()
	r := results.Record{Kind: results.KindCollective, Point: id, Collective: "allreduce", Strategy: "ring", NP: 2,
		Bytes: 1 << 20, Count: 1 << 18, DType: "float32", Op: "sum", InPlace: true, Wrong: 0,
		Iters: len(samples), Warmup: 2, Round: round, Rounds: of, Options: map[string]string{"chunk": "1MiB"},
		StartedAt:   time.Date(2026, 1, 1, 0, round, 0, 0, time.UTC),
		FinishedAt:  time.Date(2026, 1, 1, 0, round, 1, 0, time.UTC),
		ElapsedSecs: 1,
	}
	if err := results.Fill(&r, samples); err != nil {
		t.Fatal(err)
	}
	return r
}

func failedRec(id string, round, of int, err string) results.Record {
	return results.Record{Kind: results.KindCollective, Point: id, Collective: "allreduce", Strategy: "ring", NP: 2,
		Round: round, Rounds: of, Error: err, Incomplete: true, Wrong: -1}
}

func TestMergeRounds(t *testing.T) {
	r1 := []float64{10, 11, 12}
	r2 := []float64{20, 21, 22, 23}
	r3 := []float64{12, 13, 11}
	tests := []struct {
		name string
		in   func(t testing.TB) []results.Record
		// want, per output record: its point, and for merged records the
		// pooled samples, the round medians, the error (prefix) and
		// whether it is incomplete.
		want []wantRec
	}{
		{
			name: "single-round records pass through unchanged",
			in: func(t testing.TB) []results.Record {
				a := roundRec(t, "a", 1, 1, r1...)
				old := roundRec(t, "old", 0, 0, r2...) // an older file: no round fields
				return []results.Record{a, old, {Kind: results.KindTrainStep, Step: 1}}
			},
			want: []wantRec{{point: "a", samples: r1, round: 1, of: 1}, {point: "old", samples: r2, round: 1, of: 1}, {point: ""}},
		},
		{
			name: "three rounds pooled in round order, wherever they are in the file",
			in: func(t testing.TB) []results.Record {
				return []results.Record{
					roundRec(t, "a", 1, 3, r1...), roundRec(t, "b", 1, 3, r3...),
					roundRec(t, "a", 3, 3, r3...), roundRec(t, "b", 2, 3, r1...),
					roundRec(t, "a", 2, 3, r2...), roundRec(t, "b", 3, 3, r2...),
				}
			},
			// Each where its last round was: a's in the fifth record, b's in the sixth.
			want: []wantRec{
				{point: "a", samples: concat(r1, r2, r3), medians: []float64{11, 21.5, 12}, counts: []int{3, 4, 3}, of: 3},
				{point: "b", samples: concat(r3, r1, r2), medians: []float64{12, 11, 21.5}, counts: []int{3, 3, 4}, of: 3},
			},
		},
		{
			name: "an interrupted run: the rounds it has, flagged as missing the others",
			in: func(t testing.TB) []results.Record {
				stopped := roundRec(t, "a", 2, 3, 50)
				stopped.Incomplete = true
				return []results.Record{roundRec(t, "a", 1, 3, r1...), stopped}
			},
			want: []wantRec{{point: "a", samples: r1, medians: []float64{11}, counts: []int{3}, of: 3, missing: 2}},
		},
		{
			name: "a failed round fails the point",
			in: func(t testing.TB) []results.Record {
				return []results.Record{roundRec(t, "a", 1, 3, r1...), failedRec("a", 2, 3, "rank 1 died"), roundRec(t, "a", 3, 3, r3...)}
			},
			want: []wantRec{{point: "a", err: "round 2 of 3: rank 1 died", incomplete: true, of: 3}},
		},
		{
			name: "a failed round measured again by --resume counts",
			in: func(t testing.TB) []results.Record {
				return []results.Record{
					roundRec(t, "a", 1, 2, r1...), failedRec("a", 2, 2, "rank 1 died"), roundRec(t, "a", 2, 2, r2...),
				}
			},
			want: []wantRec{{point: "a", samples: concat(r1, r2), medians: []float64{11, 21.5}, counts: []int{3, 4}, of: 2}},
		},
		{
			name: "no round finished: stopped short",
			in: func(t testing.TB) []results.Record {
				r := roundRec(t, "a", 1, 3)
				r.Incomplete = true
				return []results.Record{r}
			},
			want: []wantRec{{point: "a", incomplete: true, of: 3}},
		},
		{
			name: "merging merged records changes nothing",
			in: func(t testing.TB) []results.Record {
				return results.MergeRounds([]results.Record{roundRec(t, "a", 1, 2, r1...), roundRec(t, "a", 2, 2, r3...)}, results.Fill)
			},
			want: []wantRec{{point: "a", samples: concat(r1, r3), medians: []float64{11, 12}, counts: []int{3, 3}, of: 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in(t)
			before := slices.Clone(in)
			got := results.MergeRounds(in, results.Fill)
			for i := range in {
				if !slices.Equal(in[i].SamplesUs, before[i].SamplesUs) || in[i].Round != before[i].Round {
					t.Fatalf("MergeRounds modified its input record %d", i)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d records, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				w.check(t, &got[i])
			}
		})
	}
}

type wantRec struct {
	point      string
	samples    []float64
	medians    []float64
	counts     []int
	round, of  int // RoundOf; round 0 for a merged record
	missing    int
	err        string
	incomplete bool
}

func (w wantRec) check(t *testing.T, r *results.Record) {
	t.Helper()
	if r.Point != w.point {
		t.Fatalf("point %q, want %q", r.Point, w.point)
	}
	if w.point == "" {
		return
	}
	if round, of := r.RoundOf(); round != w.round || of != w.of {
		t.Errorf("%s: round %d of %d, want %d of %d", r.Point, round, of, w.round, w.of)
	}
	if !slices.Equal(r.SamplesUs, w.samples) {
		t.Errorf("%s: samples %v, want %v", r.Point, r.SamplesUs, w.samples)
	}
	if !slices.Equal(r.RoundMediansUs, w.medians) || !slices.Equal(r.RoundSampleCounts, w.counts) {
		t.Errorf("%s: round medians %v (counts %v), want %v (%v)", r.Point, r.RoundMediansUs, r.RoundSampleCounts, w.medians, w.counts)
	}
	if r.MissingRounds() != w.missing {
		t.Errorf("%s: %d rounds missing, want %d", r.Point, r.MissingRounds(), w.missing)
	}
	if !strings.HasPrefix(r.Error, w.err) || (w.err == "") != (r.Error == "") || r.Incomplete != w.incomplete {
		t.Errorf("%s: error %q incomplete %v, want %q %v", r.Point, r.Error, r.Incomplete, w.err, w.incomplete)
	}
	if len(w.samples) == 0 {
		return
	}
	// The statistics are the pooled samples', as results.Fill computes them.
	var want results.Record
	want.Collective, want.NP, want.Bytes = r.Collective, r.NP, r.Bytes
	if err := results.Fill(&want, w.samples); err != nil {
		t.Fatal(err)
	}
	if r.TimeUs != want.TimeUs || r.TimeUsP95 != want.TimeUsP95 || r.TimeUsCILo != want.TimeUsCILo || r.BusBWGBs != want.BusBWGBs {
		t.Errorf("%s: median %v p95 %v ci %v busbw %v, want %v %v %v %v", r.Point, r.TimeUs, r.TimeUsP95, r.TimeUsCILo, r.BusBWGBs,
			want.TimeUs, want.TimeUsP95, want.TimeUsCILo, want.BusBWGBs)
	}
	if len(w.medians) > 0 && (r.Iters != len(w.samples) || math.Abs(r.ElapsedSecs-float64(len(w.medians))) > 1e-9) {
		t.Errorf("%s: iters %d elapsed %v, want %d and %d", r.Point, r.Iters, r.ElapsedSecs, len(w.samples), len(w.medians))
	}
}

func concat(xs ...[]float64) []float64 { return slices.Concat(xs...) }

// TestMergeRoundsWrong: a round with wrong elements makes the point wrong.
func TestMergeRoundsWrong(t *testing.T) {
	a, b := roundRec(t, "a", 1, 2, 1, 2, 3), roundRec(t, "a", 2, 2, 1, 2, 3)
	b.Wrong = 4
	got := results.MergeRounds([]results.Record{a, b}, results.Fill)
	if len(got) != 1 || got[0].Wrong != 4 {
		t.Fatalf("merged %+v, want one record with 4 wrong", got)
	}
}

// TestRoundsOnDisk: rounds written by a sweep, read back, resumed.
func TestRoundsOnDisk(t *testing.T) {
	dir := t.TempDir()
	w, err := results.NewWriter(dir, results.Env{Host: "h", Planned: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	recs := []results.Record{
		roundRec(t, "a", 1, 3, 1, 2, 3), roundRec(t, "b", 1, 3, 1, 2, 3), roundRec(t, "c", 1, 1, 1, 2, 3),
		roundRec(t, "a", 2, 3, 1, 2, 3), failedRec("b", 2, 3, "boom"),
		roundRec(t, "a", 3, 3, 1, 2, 3),
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	w.Close() // interrupted in round 3

	rounds, err := results.DoneRounds(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[results.PointRound]bool{{"a", 1}: true, {"a", 2}: true, {"a", 3}: true, {"b", 1}: true, {"c", 1}: true}
	if len(rounds) != len(want) {
		t.Errorf("DoneRounds = %v, want %v", rounds, want)
	}
	for k := range want {
		if !rounds[k] {
			t.Errorf("DoneRounds lacks %v", k)
		}
	}
	done, _ := results.Done(dir)
	if len(done) != 2 || !done["a"] || !done["c"] {
		t.Errorf("Done = %v, want a (every round) and c", done)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if f := run.Failed(); len(f) != 1 || f[0].Point != "b" || f[0].Round != 2 {
		t.Errorf("Failed() = %+v, want b's round 2", f)
	}

	// The resumed session measures b's round 2 again: no longer failed.
	w, err = results.NewWriter(dir, results.Env{Host: "h"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []results.Record{roundRec(t, "b", 2, 3, 4, 5, 6), roundRec(t, "b", 3, 3, 4, 5, 6)} {
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	w.Finish()
	run, _ = results.ReadRun(dir)
	if f := run.Failed(); len(f) != 0 || !run.Complete() {
		t.Errorf("after the retry: Failed() = %+v, complete %v", f, run.Complete())
	}
	if done, _ := results.Done(dir); len(done) != 3 {
		t.Errorf("Done = %v, want a b c", done)
	}
	merged := results.MergeRounds(run.Records, results.Fill)
	if len(merged) != 3 {
		t.Fatalf("%d merged records, want 3", len(merged))
	}
	for _, r := range merged {
		if r.Error != "" || r.MissingRounds() != 0 {
			t.Errorf("%s: error %q, %d rounds missing", r.Point, r.Error, r.MissingRounds())
		}
	}
}

// TestOldFileHasOneRound: a results file written before rounds existed
// reads as round 1 of 1 of every point.
func TestOldFileHasOneRound(t *testing.T) {
	dir := t.TempDir()
	const old = `{"schema":1,"kind":"env","env":{"host":"h","cpu_model":"c","cores":1,"mem_bytes":1,"kernel":"k","go_version":"g","commit":"x","started_at":"2026-01-01T00:00:00Z"}}
{"schema":1,"kind":"collective","point":"p","collective":"allreduce","np":2,"bytes":4,"count":1,"root":0,"inplace":true,"time_us":3,"time_us_p95":4,"samples_us":[2,3,4],"algbw_gbs":0,"busbw_gbs":0,"wrong":0}
`
	if err := os.WriteFile(filepath.Join(dir, results.FileName), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if round, of := run.Records[0].RoundOf(); round != 1 || of != 1 {
		t.Errorf("round %d of %d, want 1 of 1", round, of)
	}
	if rounds, _ := results.DoneRounds(dir); !rounds[results.PointRound{Point: "p", Round: 1}] {
		t.Errorf("DoneRounds = %v", rounds)
	}
	if got := results.MergeRounds(run.Records, results.Fill); len(got) != 1 || !slices.Equal(got[0].SamplesUs, []float64{2, 3, 4}) || got[0].RoundMediansUs != nil {
		t.Errorf("merged %+v", got)
	}
}
