package reports

import (
	"strings"
	"testing"

	"github.com/distbench/distbench/results"
)

// evals makes a series' evaluation records: accuracy (a fraction) and wall
// time at each, at steps steps apart, as workloads/train records them.
func evals(strategy, mode string, steps int, accWall ...float64) []results.Record {
	var rs []results.Record
	for i := 0; i+1 < len(accWall); i += 2 {
		rs = append(rs, results.Record{Kind: results.KindTrainEpoch, Model: "lenet", Dataset: "mnist", Strategy: strategy, Mode: mode, NP: 2,
			Epoch: i/2 + 1, Step: (i/2 + 1) * steps, TestAcc: accWall[i], WallSeconds: accWall[i+1]})
	}
	return rs
}

func TestTimeToTarget(t *testing.T) {
	type want struct {
		name    string
		reached string // reachedText
		eval    int    // hitEval, 0 when not reached
	}
	tests := []struct {
		name    string
		recs    [][]results.Record
		target  float64
		want    []want // in byTime order
		verdict string
		how     string // a phrase how() must hold
	}{
		{
			name: "reached at a later evaluation",
			recs: [][]results.Record{
				evals("ring", "ddp", 30, 0.70, 1.0, 0.88, 2.0, 0.95, 3.0),
				evals("ps", "ps-sync", 30, 0.60, 1.5, 0.80, 3.0, 0.90, 4.5),
			},
			target:  81, // 90% of 90
			want:    []want{{"ring ddp", "by 2.00 s at step 60", 2}, {"ps ps-sync", "by 4.50 s at step 90", 3}},
			verdict: "ring ddp reached 81% test accuracy by 2.00 s at step 60; ps ps-sync by 4.50 s at step 90",
			how:     "evaluated 3 times a series, at the end of each epoch",
		},
		{
			name: "reached at the first evaluation",
			recs: [][]results.Record{
				evals("ring", "ddp", 50, 0.91, 1.2, 0.97, 2.4),
				evals("ps", "ps-async", 50, 0.80, 1.1, 0.93, 2.2),
			},
			target:  83, // 90% of 93, rounded down
			want:    []want{{"ring ddp", "by 1.20 s at step 50", 1}, {"ps ps-async", "by 2.20 s at step 100", 2}},
			verdict: "ring ddp reached 83% test accuracy by 1.20 s at step 50; ps ps-async by 2.20 s at step 100",
			how:     "since the evaluation before (or the start)",
		},
		{
			name: "not reached: a diverged series sets no target",
			recs: [][]results.Record{
				evals("ring", "ddp", 50, 0.80, 1.0, 0.87, 2.0),
				evals("ps", "ps-async", 50, 0.11, 1.5, 0.098, 3.0),
				evals("ps", "ps-sync", 50, 0.70, 1.4, 0.84, 2.8),
			},
			target: 75, // 90% of 84; ps-async's 9.8% is under half of 87%
			want: []want{{"ring ddp", "by 1.00 s at step 50", 1}, {"ps ps-sync", "by 2.80 s at step 100", 2},
				{"ps ps-async", "not reached", 0}},
			verdict: "ring ddp reached 75% test accuracy by 1.00 s at step 50; ps ps-sync by 2.80 s at step 100; ps ps-async not reached",
			how:     "ps ps-async (9.80%) ended under half the best final accuracy and set no target",
		},
		{
			name: "evaluated once: the run's time, said so",
			recs: [][]results.Record{
				evals("ring", "ddp", 100, 0.87, 4.1),
				evals("tree", "ddp", 100, 0.86, 4.4),
			},
			target:  77, // 90% of 86, rounded down
			want:    []want{{"ring", "by 4.10 s at step 100", 1}, {"tree", "by 4.40 s at step 100", 1}},
			verdict: "ring reached 77% test accuracy by 4.10 s at step 100; tree by 4.40 s at step 100",
			how:     "evaluated once a series, at the end of its run",
		},
		{
			name:   "no evaluation: no target",
			recs:   [][]results.Record{{{Kind: results.KindTrainStep, Model: "lenet", Strategy: "ring", Step: 1, Loss: 2.3, WallSeconds: 0.1}}},
			target: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var recs []results.Record
			for _, rs := range tt.recs {
				recs = append(recs, rs...)
			}
			groups := trainGroups(recs)
			if len(groups) != 1 {
				t.Fatalf("%d groups, want 1", len(groups))
			}
			tg := timeToTarget(groups[0])
			if tg.pct != tt.target {
				t.Errorf("target %v%%, want %v%%", tg.pct, tt.target)
			}
			rows := tg.byTime()
			if tt.target == 0 {
				if v := tg.verdict(); v != "" {
					t.Errorf("verdict without a target: %q", v)
				}
				return
			}
			if len(rows) != len(tt.want) {
				t.Fatalf("%d rows, want %d", len(rows), len(tt.want))
			}
			for i, w := range tt.want {
				if r := rows[i]; r.name != w.name || r.reachedText() != w.reached || r.hitEval != w.eval {
					t.Errorf("row %d: %s %q at evaluation %d, want %s %q at %d", i, r.name, r.reachedText(), r.hitEval, w.name, w.reached, w.eval)
				}
			}
			if v := tg.verdict(); v != tt.verdict {
				t.Errorf("verdict\n got %q\nwant %q", v, tt.verdict)
			}
			if h := tg.how(); !strings.Contains(h, tt.how) {
				t.Errorf("how() = %q, lacks %q", h, tt.how)
			}
		})
	}
}

// TestStepsAt: an evaluation without its own step count (older records)
// counts the step records up to its epoch.
func TestStepsAt(t *testing.T) {
	var recs []results.Record
	for e := 1; e <= 2; e++ {
		for s := range 15 {
			recs = append(recs, results.Record{Kind: results.KindTrainStep, Model: "m", Strategy: "ring", Epoch: e, Step: s, Loss: 1})
		}
		recs = append(recs, results.Record{Kind: results.KindTrainEpoch, Model: "m", Strategy: "ring", Epoch: e, TestAcc: 0.5})
	}
	g := trainGroups(recs)[0]
	ev := evaluations(g, "ring")
	if len(ev) != 2 {
		t.Fatalf("%d evaluations, want 2", len(ev))
	}
	for i, want := range []int{15, 30} {
		if got := stepsAt(g, "ring", ev[i]); got != want {
			t.Errorf("evaluation %d: %d steps, want %d", i+1, got, want)
		}
	}
}
