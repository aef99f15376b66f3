package reports

import (
	"strings"
	"testing"

	"github.com/distbench/distbench/results"
)

// With no rank beyond the noise, the section says so, says why a
// synchronising collective hides a slow rank, and still shows the points
// whose slowest rank stands out most; without per-rank times there is no
// section.
func TestWriteRanksNotSignificant(t *testing.T) {
	rec := func(point string, meds ...float64) results.Record {
		r := results.Record{Kind: results.KindCollective, Point: point, Collective: "allreduce", Strategy: "ring", NP: len(meds),
			Bytes: 4096, DType: "float32", Op: "sum", TimeUs: 100, TimeUsCILo: 50, TimeUsCIHi: 150, RankMedianUs: meds,
			RankHosts: []string{"a", "b", "c", "d"}}
		return r
	}
	for _, tc := range []struct {
		name  string
		recs  []results.Record
		want  []string
		empty bool
	}{
		{name: "no per-rank times", recs: []results.Record{{Kind: results.KindCollective, Point: "x", TimeUs: 1}}, empty: true},
		{name: "a rank as slow as the slowest is named beside it", recs: []results.Record{rec("g", 1900, 8, 8, 1950)},
			want: []string{"Slowest rank beyond the noise: rank 3 on host d in 1 of 1 point(s), up to 243.8× the median rank",
				"where rank(s) 0 took as long, within 5%", "237.50 as slow", "**243.75 slowest**"}},
		{name: "within the noise", recs: []results.Record{rec("p1", 100, 101, 100, 150), rec("p2", 100, 100, 100, 100)},
			want: []string{"No rank is slower than the median rank beyond the noise in any of the 2 point(s)", "at least 5% slower",
				"| allreduce ring, 4 ranks, 4KiB float32 out-of-place |    3 | d    |", "1.50 slowest", "plots/ranks.png"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := &report{dir: t.TempDir(), run: &results.Run{Records: tc.recs}}
			if err := rp.writeRanks(); err != nil {
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
