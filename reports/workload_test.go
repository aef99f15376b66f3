package reports

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/internal/golden"
	"github.com/distbench/distbench/results"
)

const bucket = "resnet20 DDP bucket"

// bucketSizes are ResNet-20's DDP bucket sizes on CIFAR-10, as the default
// plan's gradients block replays them.
var bucketSizes = []int64{29888, 1049000}

// workloadRecs measures ring and tree allreduce at np 2 over a sweep of
// sizes and, when withBuckets, at bucketSizes as the gradients block's
// points, on link ("" unshaped).
func workloadRecs(rng *rand.Rand, link string, withBuckets bool) []results.Record {
	ms := models[:2]
	if link != "" {
		// On a 1 Gbit/s link (0.125 GB/s) the wire is what limits.
		ms = []model{
			{strategy: "ring", alphaUs: func(int) float64 { return 60 }, busGBs: func(int) float64 { return 0.115 }},
			{strategy: "tree", alphaUs: func(int) float64 { return 50 }, busGBs: func(int) float64 { return 0.09 }},
		}
	}
	sizes := []int64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}
	var recs []results.Record
	for _, m := range ms {
		for _, b := range sizes {
			recs = append(recs, measure(rng, m, "allreduce", 2, b, 20, 1))
		}
		if withBuckets {
			for _, b := range bucketSizes {
				r := measure(rng, m, "allreduce", 2, b, 20, 1)
				r.Workload = bucket
				recs = append(recs, r)
			}
		}
	}
	for i := range recs {
		if link != "" {
			recs[i].Link = link
			recs[i].Point += "/link=" + link
		}
	}
	return recs
}

// TestWorkloadSeries checks the series a busbw plot is drawn from: a
// workload's points as markers of their own, named in the legend, beside a
// line through the swept sizes alone; and an old run, whose records name no
// workload, drawn as before, every size on the line.
func TestWorkloadSeries(t *testing.T) {
	swept := []float64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}
	all := slices.Sorted(slices.Values(append(slices.Clone(swept), 29888, 1049000)))
	for _, tc := range []struct {
		name      string
		old       bool // records without Workload, as before it was written
		want      []string
		lineXs    []float64
		marksXs   []float64 // of each workload series
		sizeLabel string    // of 29888 B in the table
	}{
		{
			name:   "bucket points apart",
			want:   []string{"ring", "ring: resnet20 DDP bucket", "tree", "tree: resnet20 DDP bucket"},
			lineXs: swept, marksXs: []float64{29888, 1049000}, sizeLabel: "29,888 B (resnet20 DDP bucket)",
		},
		{
			name: "an old run without workloads", old: true,
			want: []string{"ring", "tree"}, lineXs: all, sizeLabel: "29888B",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := workloadRecs(rand.New(rand.NewPCG(3, 4)), "", true)
			for i := range recs {
				if tc.old {
					recs[i].Workload = ""
				}
			}
			secs := collectiveSections(recs)
			if len(secs) != 1 {
				t.Fatalf("%d sections, want 1", len(secs))
			}
			s := secs[0]
			rp := &report{colors: newColors([]string{"ring", "tree"})}
			d := rp.busbwData(s, 2)
			var names []string
			for _, sr := range d.ss {
				names = append(names, sr.name)
				var xs []float64
				for _, xy := range sr.xy {
					xs = append(xs, xy.X)
				}
				base, _, isMarks := strings.Cut(sr.name, ": ")
				if sr.marksOnly != isMarks {
					t.Errorf("%s: markers only %v", sr.name, sr.marksOnly)
				}
				if sr.color != rp.colors.of(base) {
					t.Errorf("%s: colour %v, want %s's %v", sr.name, sr.color, base, rp.colors.of(base))
				}
				want := tc.lineXs
				if isMarks {
					want = tc.marksXs
				}
				if !slices.Equal(xs, want) {
					t.Errorf("%s: sizes %v, want %v", sr.name, xs, want)
				}
				if len(sr.lo) != len(sr.xy) || len(sr.hi) != len(sr.xy) || !hasErrors(sr.lo, sr.hi) {
					t.Errorf("%s: %d points, %d/%d error bars", sr.name, len(sr.xy), len(sr.lo), len(sr.hi))
				}
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("series %q, want %q", names, tc.want)
			}
			if !slices.Equal(d.cols, []string{"ring", "tree"}) {
				t.Errorf("table columns %q", d.cols)
			}
			if got := s.sizeLabel(2, 29888); got != tc.sizeLabel {
				t.Errorf("sizeLabel(29888) = %q, want %q", got, tc.sizeLabel)
			}
			if got := s.sizeLabel(2, 1<<20); got != "1MiB" {
				t.Errorf("sizeLabel(1MiB) = %q", got)
			}
			if d.ref != nil {
				t.Errorf("unshaped section with a link line %+v", *d.ref)
			}
		})
	}
}

// TestLinkRef checks which links get a reference line on a busbw plot, at
// what rate and with what label.
func TestLinkRef(t *testing.T) {
	for _, tc := range []struct {
		link  string
		gbs   float64 // 0: no line
		label string
	}{
		{"", 0, ""},
		{"1Gbit,25us", 0.125, "link 1 Gbit/s = 0.125 GB/s"},
		{"1g", 0.125, "link 1 Gbit/s = 0.125 GB/s"},
		{"10g", 1.25, "link 10 Gbit/s = 1.25 GB/s"},
		{"100g,1us", 12.5, "link 100 Gbit/s = 12.5 GB/s"},
		{"800Mbit", 0.1, "link 800 Mbit/s = 0.1 GB/s"},
		{"2.5Gbit", 0.3125, "link 2.5 Gbit/s = 0.3125 GB/s"},
		{"unlimited,5ms", 0, ""}, // latency alone: no rate to reach
		{"none", 0, ""},
		{"fast", 0, ""}, // not a link the transport reads
	} {
		t.Run(tc.link, func(t *testing.T) {
			ref, ok := linkRate(tc.link)
			if ok != (tc.gbs > 0) || math.Abs(ref.gbs-tc.gbs) > 1e-12 || ref.label != tc.label {
				t.Errorf("linkRate(%q) = %+v, %v; want %v GB/s, %q", tc.link, ref, ok, tc.gbs, tc.label)
			}
		})
	}

	// The plot's data: a shaped section has the line, an unshaped one not.
	recs := append(workloadRecs(rand.New(rand.NewPCG(5, 6)), "", false),
		workloadRecs(rand.New(rand.NewPCG(7, 8)), "1Gbit,25us", false)...)
	rp := &report{colors: newColors([]string{"ring", "tree"})}
	for _, s := range collectiveSections(recs) {
		d := rp.busbwData(s, 2)
		switch {
		case s.key.link == "" && d.ref != nil:
			t.Errorf("%s: unshaped, with a link line %+v", s.title, *d.ref)
		case s.key.link != "" && (d.ref == nil || d.ref.gbs != 0.125):
			t.Errorf("%s: shaped at 1 Gbit/s, link line %v", s.title, d.ref)
		}
	}
}

func TestBytesText(t *testing.T) {
	for b, want := range map[int64]string{
		0: "0 B", 7: "7 B", 999: "999 B", 1000: "1,000 B", 29888: "29,888 B", 1049000: "1,049,000 B",
		-1234: "-1,234 B",
	} {
		if got := bytesText(b); got != want {
			t.Errorf("bytesText(%d) = %q, want %q", b, got, want)
		}
	}
}

// writeWorkloadRun writes a finished run of the default plan's shape: a
// sweep of sizes with ResNet-20's DDP buckets among them, unshaped and on
// a 1 Gbit/s link.
func writeWorkloadRun(t testing.TB, dir string) {
	rng := rand.New(rand.NewPCG(9, 10))
	recs := append(workloadRecs(rng, "", true), workloadRecs(rng, "1Gbit,25us", true)...)
	env := synthEnv
	for _, r := range recs {
		env.Planned = append(env.Planned, r.Point)
	}
	w, err := results.NewWriter(dir, env)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Finished as Writer.Finish marks it, at a fixed time: the golden
	// report prints it.
	done := env
	done.FinishedAt = env.StartedAt.Add(42 * time.Second)
	if err := w.Write(&results.Record{Kind: results.KindEnv, Env: &done}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGenerateWorkload checks the report of a run with workload points and
// a shaped link against its golden file, and its images.
func TestGenerateWorkload(t *testing.T) {
	dir := copyRun(t, regenerate(t, "workload", writeWorkloadRun))
	if err := Generate(dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "workload.md.golden"), got, *update)
	for _, want := range []string{
		"| 29,888 B (resnet20 DDP bucket)",
		"| 1,049,000 B (resnet20 DDP bucket)",
		"Diamonds are sizes a workload replays (resnet20 DDP bucket)",
		"The dashed grey line is the shaped link's rate, 1 Gbit/s = 0.125 GB/s",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(string(got), "The dashed grey line"); n != 1 {
		t.Errorf("%d link notes, want 1: the shaped section's", n)
	}
	checkImages(t, dir, got)
}
