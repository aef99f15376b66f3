package reports

import (
	"strings"
	"testing"

	"github.com/distbench/distbench/results"
)

// trainRun makes a series' records as workloads/train writes them: steps of
// the given compute and exposed times, and one epoch record with each
// rank's bytes per step and wait.
func trainRun(mode string, computeMs, exposedMs float64, sent, recv, wait []float64, transfers map[string]float64) []results.Record {
	base := results.Record{Model: "resnet20", Dataset: "mnist", Strategy: "ring", Mode: mode, NP: len(sent), Link: "10Gbit,25us"}
	var rs []results.Record
	for i := 1; i <= 2; i++ {
		r := base
		r.Kind, r.Step, r.Epoch, r.ComputeMs, r.CommMs, r.ExposedMs, r.TransferMs = results.KindTrainStep, i, 1, computeMs, exposedMs, exposedMs, transfers
		rs = append(rs, r)
	}
	e := base
	e.Kind, e.Epoch, e.Step, e.TestAcc, e.RankExposedMs, e.TransferMs = results.KindTrainEpoch, 1, 2, 0.5, wait, transfers
	e.SetWire(sent, recv, nil, nil)
	return append(rs, e)
}

func TestWriteTraffic(t *testing.T) {
	dpTr := map[string]float64{"broadcast": 1, "scatter": 0.5, "gather": 20, "scatter_grad": 0.25, "reduce": 40}
	for _, tc := range []struct {
		name  string
		recs  []results.Record
		want  []string
		empty bool
	}{
		{name: "records without per-rank figures (older files)", empty: true,
			recs: []results.Record{{Kind: results.KindTrainStep, Model: "lenet", Mode: "ddp", Strategy: "ring", NP: 2, ComputeMs: 5},
				{Kind: results.KindTrainEpoch, Model: "lenet", Mode: "ddp", Strategy: "ring", NP: 2, TestAcc: 0.9}}},
		{name: "dp beside ddp",
			recs: append(trainRun("dp", 600, 200, []float64{3e6, 1e6, 1e6, 1e6}, []float64{1e6, 2e6, 2e6, 2e6}, []float64{200, 250, 300, 280}, dpTr),
				trainRun("ddp", 650, 50, []float64{1.5e6, 1.5e6, 1.5e6, 1.5e6}, []float64{1.5e6, 1.5e6, 1.5e6, 1.5e6}, []float64{50, 60, 40, 55}, nil)...),
			want: []string{
				"#### Traffic and waiting by rank",
				"| ring ddp |       700 |             3.00 |                12.0 | 25% (1/4 = 25%) |              50.0 |                   60.0 |",
				"| ring dp  |       800 |             4.00 |                13.0 | 31% (1/4 = 25%) |               200 |                    300 | broadcast 1.00, scatter 0.500, gather 20.0, scatter_grad 0.250, reduce 40.0 |",
				"ring dp against ring ddp: a step of 800 ms against 700 ms (1.14×); rank 0 moved 31% of the bytes against 25%; the other ranks waited up to 300 ms a step against 60.0 ms. dp learns what ddp learns",
			}},
		{name: "dp no slower",
			recs: append(trainRun("dp", 100, 10, []float64{3, 1}, []float64{1, 3}, []float64{10, 12}, dpTr),
				trainRun("ddp", 100, 20, []float64{2, 2}, []float64{2, 2}, []float64{20, 20}, nil)...),
			want: []string{"(0.917×)", "dp was not slower here"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			groups := trainGroups(tc.recs)
			if len(groups) != 1 {
				t.Fatalf("%d groups", len(groups))
			}
			rp := &report{dir: t.TempDir(), run: &results.Run{Records: tc.recs}}
			if err := rp.writeTraffic(groups[0]); err != nil {
				t.Fatal(err)
			}
			got := rp.m.String()
			if tc.empty != (got == "") {
				t.Fatalf("section %q", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("section lacks %q:\n%s", w, got)
				}
			}
		})
	}
}
