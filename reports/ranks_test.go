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
