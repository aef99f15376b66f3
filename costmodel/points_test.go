package costmodel

import (
	"math"
	"slices"
	"testing"

	"github.com/distbench/distbench/results"
)

// Points keeps records of messages over sockets only: the same point over
// shared memory or on device buffers is not a point of the network's model.
func TestPointsTransportAndDevice(t *testing.T) {
	rec := func(transport, device string) results.Record {
		return results.Record{Kind: results.KindCollective, Strategy: "ring", Collective: "allreduce",
			NP: 2, Bytes: 1 << 20, TimeUs: 100, Link: "1Gbit,25us", Transport: transport, Device: device}
	}
	tests := []struct {
		name string
		rec  results.Record
		want int
	}{
		{"tcp", rec("tcp", ""), 1},
		{"older record, tcp", rec("", ""), 1},
		{"shared memory", rec("shm", ""), 0},
		{"auto", rec("auto", ""), 0},
		{"device buffers", rec("tcp", "cuda"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(Points([]results.Record{tt.rec}, 2)); got != tt.want {
				t.Errorf("%d points, want %d", got, tt.want)
			}
		})
	}
}

// The tree's defaults run recursive doubling or the double tree by size:
// Points files each record under the one that ran, by strategies/tree's own
// rule, beside the records that asked for either.
func TestPointsTreeSeries(t *testing.T) {
	rec := func(opts map[string]string, bytes int64) results.Record {
		return results.Record{Kind: results.KindCollective, Strategy: "tree", Collective: "allreduce", Options: opts,
			NP: 4, Bytes: bytes, TimeUs: 100, Link: "1Gbit,25us", Transport: "tcp"}
	}
	auto := map[string]string{"algo": "auto"}
	tests := []struct {
		name  string
		opts  map[string]string
		bytes int64
		want  string
	}{
		{"defaults, 4 KiB", nil, 4 << 10, "tree/rd"},
		{"defaults, 16 KiB", nil, 16 << 10, "tree/rd"},
		{"defaults, 16 KiB + 4", nil, 16<<10 + 4, "tree/dbtree"},
		{"defaults, 4 MiB", nil, 4 << 20, "tree/dbtree"},
		{"algo=auto, 4 KiB", auto, 4 << 10, "tree/rd"},
		{"algo=auto, 64 KiB", auto, 64 << 10, "tree/dbtree"},
		{"algo=rd, 4 MiB", map[string]string{"algo": "rd"}, 4 << 20, "tree/rd"},
		{"algo=dbtree, 4 KiB", map[string]string{"algo": "dbtree"}, 4 << 10, "tree/dbtree"},
		{"algo=hier, 4 KiB", map[string]string{"algo": "hier"}, 4 << 10, "tree/hier"},
		{"algo=hier inter=rd", map[string]string{"algo": "hier", "inter": "rd"}, 4 << 20, "tree/hier/rd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts := Points([]results.Record{rec(tt.opts, tt.bytes)}, 2)
			if len(pts) != 1 || pts[0].Algo != tt.want {
				t.Errorf("points %+v, want one of %s", pts, tt.want)
			}
		})
	}
}

// A calibration that fits the tree's two algorithms apart predicts the
// tree's defaults with the fit of the one that runs at each size; a fit of
// "tree" itself (an older calibration file) still answers for it.
func TestGridParamsTreeSeries(t *testing.T) {
	link := "1Gbit,25us"
	fit := func(algo string, alpha float64) Fit {
		return Fit{Algo: algo, Link: link, Params: Params{Alpha: alpha}, NPMin: 2, NPMax: 8, BytesMin: 4 << 10, BytesMax: 4 << 20}
	}
	split := &Calibration{Fits: []Fit{fit("tree/rd", 1e-3), fit("tree/dbtree", 2e-3)}}
	lumped := &Calibration{Fits: []Fit{fit("tree", 3e-3), fit("tree/rd", 1e-3)}}
	other := &Calibration{Fits: []Fit{{Algo: "tree/dbtree", Link: "10Gbit,25us", Params: Params{Alpha: 4e-3}}}}
	tests := []struct {
		name  string
		cal   *Calibration
		algo  string
		bytes int64
		alpha float64
		why   string
	}{
		{"split, 4 KiB", split, "tree", 4 << 10, 1e-3, ""},
		{"split, 1 MiB", split, "tree", 1 << 20, 2e-3, ""},
		{"split, tree/rd at 1 MiB", split, "tree/rd", 1 << 20, 1e-3, ""},
		{"split, 64 MiB", split, "tree", 64 << 20, 2e-3, "outside np 2–8, 4096–4194304 B"},
		{"lumped, 4 KiB", lumped, "tree", 4 << 10, 3e-3, ""},
		{"another link", other, "tree", 1 << 20, 4e-3, "calibrated on 10Gbit,25us"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Grid{LinkName: link, Cal: tt.cal}
			p, _, why := g.params(tt.algo, 4, tt.bytes)
			if p.Alpha != tt.alpha || why != tt.why {
				t.Errorf("α %g (%q), want %g (%q)", p.Alpha, why, tt.alpha, tt.why)
			}
		})
	}
}

// Calibrating the tree's defaults as the two algorithms they run: on a
// sweep made up from the simulator, recursive doubling with one set of
// costs and the double tree with another (a sleeping rank's wake-up, δ,
// only the first's), the split fits each to within 1%; one fit for both,
// as calibrate had before, misses by far more.
func TestCalibrateTreeSeries(t *testing.T) {
	const link, cores = "1Gbit,25us", 2
	rd := Params{Alpha: 60e-6, Latency: 25e-6, Beta: 8e-9, Gamma: 1e-9, Kappa: 0.5e-9, Step: 150e-6, Crowd: 1}
	db := Params{Alpha: 15e-6, Latency: 25e-6, Beta: 8e-9, Gamma: 0.3e-9, Kappa: 0.5e-9, Crowd: 1}
	tree, err := Lookup("tree")
	if err != nil {
		t.Fatal(err)
	}
	var recs []results.Record
	for _, np := range []int{2, 3, 4, 6, 8} {
		for _, S := range []int64{4 << 10, 8 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20} {
			a, p := tree.Ran(np, S), db
			if a.Name == "tree/rd" {
				p = rd
			}
			y, _, err := a.Predict(OneHost(np, cores, p), np, S)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 { // rounds
				recs = append(recs, results.Record{Kind: results.KindCollective, Strategy: "tree", Collective: "allreduce",
					NP: np, Bytes: S, TimeUs: y * 1e6, Link: link, Transport: "tcp"})
			}
		}
	}
	shape := func(string) (float64, float64, error) { return 1e9, 25e-6, nil }
	worst := func(pts []Point) float64 {
		fits, err := FitAll(pts, shape, 1)
		if err != nil {
			t.Fatal(err)
		}
		cal := &Calibration{Fits: fits}
		e := 0.0
		for _, p := range pts {
			f, ok := cal.Lookup(p.Algo, p.Link)
			if !ok {
				t.Fatalf("no fit of %s", p.Algo)
			}
			a, _ := Lookup(p.Algo)
			y, _, err := a.Predict(p.Topology(f.Params), p.NP, p.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			e = max(e, math.Abs(y-p.Time())/p.Time())
		}
		return e
	}
	split := Points(recs, cores)
	names := map[string]int{}
	for _, p := range split {
		names[p.Algo]++
	}
	if names["tree/rd"] != 15 || names["tree/dbtree"] != 15 || len(names) != 2 {
		t.Fatalf("points per algorithm %v, want 15 of tree/rd and of tree/dbtree", names)
	}
	lumped := slices.Clone(split)
	for i := range lumped {
		lumped[i].Algo = "tree"
	}
	es, el := worst(split), worst(lumped)
	t.Logf("largest |error|: split %.2f%%, lumped %.2f%%", 100*es, 100*el)
	if es > 0.01 {
		t.Errorf("split fits miss by up to %.2f%%, want within 1%%", 100*es)
	}
	if el < 5*es || el < 0.05 {
		t.Errorf("one fit for both misses by up to %.2f%% (split: %.2f%%): the made-up sweep does not tell them apart", 100*el, 100*es)
	}
}

// Fitted on one size, α and the per-byte costs are one number: FitPoints
// fits α and δ there and leaves κ and γ out, rather than split the
// per-message and per-byte costs at random (which, calibrated on every
// other size of the validation sweep, put recursive doubling's 16 KiB
// 108–228% high at 10Gbit); at that size it still fits within 5% (two
// sizes: within 1%).
func TestFitOneSize(t *testing.T) {
	p := Params{Alpha: 60e-6, Latency: 25e-6, Beta: 0.8e-9, Gamma: 1e-9, Kappa: 0.5e-9, Step: 150e-6}
	a, err := Lookup("tree/rd")
	if err != nil {
		t.Fatal(err)
	}
	for _, sizes := range [][]int64{{4 << 10}, {4 << 10, 16 << 10}} {
		var pts []Point
		for _, np := range []int{2, 3, 4} {
			for _, S := range sizes {
				y, _, err := a.Predict(OneHost(np, 2, p), np, S)
				if err != nil {
					t.Fatal(err)
				}
				pts = append(pts, Point{Algo: a.Name, Link: "10Gbit,25us", NP: np, Bytes: S, Rounds: []float64{y}, Cores: 2})
			}
		}
		f, err := FitPoints(a.Name, "10Gbit,25us", pts, 10e9, 25e-6, 1)
		if err != nil {
			t.Fatal(err)
		}
		one := len(sizes) == 1
		if one && (f.Params.Kappa != 0 || f.Params.Gamma != 0) {
			t.Errorf("sizes %v: κ %g, γ %g fitted at one size, want 0", sizes, f.Params.Kappa, f.Params.Gamma)
		}
		for _, pt := range pts {
			y, _, err := a.Predict(pt.Topology(f.Params), pt.NP, pt.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if e := math.Abs(y-pt.Time()) / pt.Time(); e > 0.01 && !one || e > 0.05 {
				t.Errorf("sizes %v: np %d %d B predicted %.1f us, made %.1f us", sizes, pt.NP, pt.Bytes, y*1e6, pt.Time()*1e6)
			}
		}
	}
}
