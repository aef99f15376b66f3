package results

import (
	"slices"
	"testing"
)

// A point measured in rounds keeps its GPUs' telemetry pooled over them.
func TestMergeRoundsGPU(t *testing.T) {
	rec := func(round int, util, power float64, samples int, unsupported ...string) Record {
		return Record{Kind: KindCollective, Point: "p", Round: round, Rounds: 2, Iters: 1, TimeUs: 10, Wrong: 0,
			GPU: []GPUStats{{Index: 0, Name: "G", Samples: samples, UtilPct: util, UtilPctMax: util, PowerW: power, PowerWMax: power,
				MemUsedBytes: uint64(samples) << 20, Unsupported: unsupported}}}
	}
	merged := MergeRounds([]Record{rec(1, 10, 100, 1), rec(2, 40, 200, 3, "NVLink")}, func(*Record, []float64) error { return nil })
	if len(merged) != 1 || len(merged[0].GPU) != 1 {
		t.Fatalf("merged %+v", merged)
	}
	g := merged[0].GPU[0]
	want := GPUStats{Index: 0, Name: "G", Samples: 4, UtilPct: 32.5, UtilPctMax: 40, PowerW: 175, PowerWMax: 200, MemUsedBytes: 3 << 20}
	if g.Samples != want.Samples || g.UtilPct != want.UtilPct || g.UtilPctMax != want.UtilPctMax || g.PowerW != want.PowerW ||
		g.PowerWMax != want.PowerWMax || g.MemUsedBytes != want.MemUsedBytes || !slices.Equal(g.Unsupported, []string{"NVLink"}) {
		t.Errorf("merged GPU %+v, want %+v with NVLink unsupported", g, want)
	}
}
