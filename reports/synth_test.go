package reports

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// Synthetic runs for the tests: times follow a latency + size/bandwidth model
// per strategy, with seeded, skewed noise, so that plots have real shapes and
// every run of the tests sees the same numbers.

var synthEnv = results.Env{
	Host: "bench-01", CPUModel: "Synthetic CPU @ 3.00GHz", Cores: 16, MemBytes: 64 << 30,
	Kernel: "Linux 6.1.0-18-amd64 x86_64", GoVersion: "go1.26.0", Commit: "0123456789abcdef",
	Args:      []string{"distbench", "sweep", "--out", "run"},
	StartedAt: time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC),
}

// model is a strategy's cost: alpha µs per step, and a bus bandwidth.
type model struct {
	strategy, peer string
	alphaUs        func(np int) float64
	busGBs         func(np int) float64
}

var models = []model{
	{strategy: "ring", alphaUs: func(np int) float64 { return 12 * float64(np-1) }, busGBs: func(int) float64 { return 9 }},
	{strategy: "tree", alphaUs: func(np int) float64 { return 14 * math.Log2(float64(np)) }, busGBs: func(np int) float64 { return 7 - 0.4*float64(np) }},
	{strategy: "ps", alphaUs: func(np int) float64 { return 40 + 5*float64(np) }, busGBs: func(np int) float64 { return 6 / math.Sqrt(float64(np)) }},
	{peer: "mpi", alphaUs: func(np int) float64 { return 10 * float64(np-1) }, busGBs: func(int) float64 { return 8 }},
}

// noisy returns n samples around center: lognormal noise with a 3% spread
// and an occasional slow outlier, the shape real timings have.
func noisy(rng *rand.Rand, center float64, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		x := center * math.Exp(0.03*rng.NormFloat64())
		if rng.Float64() < 0.05 {
			x *= 1.3 + rng.Float64()
		}
		xs[i] = x
	}
	return xs
}

func factor(collective string, np int) float64 {
	f, err := stats.BusBWFactor(collective, np)
	if err != nil {
		panic(err)
	}
	return f
}

// measure makes a collective record as `distbench run` would.
func measure(rng *rand.Rand, m model, collective string, np int, bytes int64, n int, slowdown float64) results.Record {
	r := results.Record{
		Kind: results.KindCollective, Collective: collective, Strategy: m.strategy, Peer: m.peer, NP: np,
		Bytes: bytes, Count: bytes / 4, DType: "float32", InPlace: collective == "allreduce", Iters: n, Warmup: 5,
	}
	if collective == "allreduce" {
		r.Op = "sum"
	}
	who := m.strategy
	if m.peer != "" {
		who = "peer-" + m.peer
	}
	r.Point = fmt.Sprintf("%s/%s/np=%d/bytes=%d/float32", collective, who, np, bytes)
	t := m.alphaUs(np) + float64(bytes)*factor(collective, np)/(m.busGBs(np)*1e3)
	if err := results.Fill(&r, noisy(rng, t*slowdown, n)); err != nil {
		panic(err)
	}
	synthWire(&r, m.strategy)
	return r
}

// synthWire gives a distbench strategy's record the bytes its schedule
// sends (peers do not count): the ring what busbw assumes, and below 32KiB
// its whole-buffer pass, n−1 times the buffer; the tree as much in all but
// its interior (even) ranks thrice the leaves'; the parameter server, with
// its servers colocated, what the ring sends.
func synthWire(r *results.Record, strategy string) {
	if strategy == "" {
		return
	}
	n, s := r.NP, float64(r.Bytes)
	sent := make([]float64, n)
	for i := range sent {
		f := factor(r.Collective, n)
		switch {
		case strategy == "ring" && r.Collective == "allreduce" && r.Bytes <= 32<<10:
			f = float64(n - 1)
		case strategy == "tree" && i%2 == 0:
			f *= 1.5
		case strategy == "tree":
			f *= 0.5
		}
		sent[i] = f * s
	}
	r.SetWire(sent, sent, nil, nil)
}

var (
	synthSizes = []int64{1 << 10, 8 << 10, 64 << 10, 512 << 10, 4 << 20, 32 << 20}
	synthNPs   = []int{2, 4, 8}
)

// writeSynthRun writes the report test's run: an interrupted sweep with
// allreduce and allgather points, a failure, an incomplete point, a wrong
// result, planned points never reached, a training comparison, and a torn
// last line.
func writeSynthRun(t testing.TB, dir string) {
	rng := rand.New(rand.NewPCG(1, 2))
	env := synthEnv
	var recs []results.Record
	for _, m := range models {
		for _, np := range synthNPs {
			for _, b := range synthSizes {
				recs = append(recs, measure(rng, m, "allreduce", np, b, 20, 1))
			}
		}
	}
	// The failure: the last ps point died.
	for i := range recs {
		r := &recs[i]
		if r.Strategy == "ps" && r.NP == 8 && r.Bytes == 32<<20 {
			*r = results.Record{Kind: results.KindCollective, Point: r.Point, Collective: "allreduce", Strategy: "ps", NP: 8,
				Bytes: r.Bytes, DType: "float32", Op: "sum", InPlace: true,
				Error: "ps: allreduce #12: rank 5 (127.0.0.1:41234) closed the connection | after 3.2s"}
		}
	}
	for _, m := range models[:2] {
		for _, np := range synthNPs[:2] {
			for _, b := range synthSizes[2:5] {
				r := measure(rng, m, "allgather", np, b, 20, 1)
				switch {
				case m.strategy == "tree" && np == 4 && b == 4<<20:
					r.Incomplete = true
				case m.strategy == "ring" && np == 2 && b == 64<<10:
					r.Wrong = 3
				}
				synthRanks(&r, m.strategy == "ring" && np == 4 && b == 512<<10)
				recs = append(recs, r)
			}
		}
	}
	for _, r := range recs {
		env.Planned = append(env.Planned, r.Point)
	}
	env.Planned = append(env.Planned, "allgather/ps/np=2/bytes=65536/float32", "allgather/ps/np=4/bytes=65536/float32")
	recs = append(recs, synthTraining(rng)...)

	w, err := results.NewWriter(dir, env)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	w.Close() // interrupted: no Finish
	f, err := os.OpenFile(filepath.Join(dir, results.FileName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"schema":1,"kind":"collective","point":"allgather/ps/np=2/bytes=65536/float32","samples_us":[12.5,13`)
	f.Close()
}

func synthTraining(rng *rand.Rand) []results.Record {
	var recs []results.Record
	type way struct {
		strategy, mode           string
		secPerStep, computeMs    float64
		commMs, exposedMs, noise float64
	}
	ways := []way{
		{"ring", "ddp", 0.050, 38, 20, 8, 0.02},
		{"ps", "ps-sync", 0.075, 38, 45, 35, 0.03},
	}
	const epochs, steps = 3, 15
	for _, w := range ways {
		wall := 0.0
		for e := 1; e <= epochs; e++ {
			var loss float64
			for s := 0; s < steps; s++ {
				global := (e-1)*steps + s
				loss = 0.2 + 2.1*math.Exp(-float64(global)/12) + w.noise*rng.NormFloat64()
				wall += w.secPerStep * (1 + 0.05*rng.Float64())
				recs = append(recs, results.Record{
					Kind: results.KindTrainStep, Model: "lenet", Dataset: "mnist", Strategy: w.strategy, Mode: w.mode, NP: 4,
					Epoch: e, Step: s, Loss: loss, WallSeconds: wall,
					ComputeMs: w.computeMs * (1 + 0.05*rng.Float64()), CommMs: w.commMs * (1 + 0.05*rng.Float64()),
					ExposedMs: w.exposedMs * (1 + 0.05*rng.Float64()),
				})
			}
			acc := 0.99 - 0.5*math.Exp(-float64(e)*1.1) - 0.01*rng.Float64()
			if w.strategy == "ps" {
				acc -= 0.02
			}
			recs = append(recs, results.Record{
				Kind: results.KindTrainEpoch, Model: "lenet", Dataset: "mnist", Strategy: w.strategy, Mode: w.mode, NP: 4,
				Epoch: e, Loss: loss, TestLoss: loss * 1.1, TestAcc: acc, ImagesPerS: 64 * 4 / w.secPerStep, WallSeconds: wall,
			})
		}
	}
	return recs
}

// synthRanks gives r per-rank times derived from its samples, without
// drawing from the run's generator: every rank alike, or with slow set,
// rank 2 the slowest rank of every iteration and the others well ahead.
func synthRanks(r *results.Record, slow bool) {
	f := make([]float64, r.NP)
	r.RankHosts, r.RankPIDs = make([]string, r.NP), make([]int, r.NP)
	for rank := range f {
		f[rank] = 1 - 0.01*float64(rank%2)
		if slow {
			f[rank] = 0.6
		}
		r.RankHosts[rank], r.RankPIDs[rank] = fmt.Sprintf("node%d", rank), 1000+rank
	}
	if slow {
		f[2] = 1
	}
	per := make([][]float64, r.NP)
	for rank := range per {
		for _, s := range r.SamplesUs {
			per[rank] = append(per[rank], s*f[rank])
		}
	}
	results.SetRanks(r, per, true)
}
