package ps_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/strategies/ps"
)

// gradient is worker r's gradient at step t for parameters w: it depends on
// the parameters, so a pull that returned the wrong ones shows.
func gradient(w []float32, r, t int) []float32 {
	g := make([]float32, len(w))
	for i := range w {
		g[i] = 0.5*w[i] + float32((r+1)*(i%7+1))/8 - float32(t%3)/4
	}
	return g
}

// TestSyncTraining runs synchronous momentum SGD on the servers and checks
// it against the same computation done locally: at every step, every worker
// holds the parameters of a reference that averages the workers' gradients.
// The learning rate halves every two steps, as a step schedule's would.
// It does so through every placement and transport, bit for bit: the
// results of one seed do not depend on the transport.
func TestSyncTraining(t *testing.T) {
	const (
		n     = 3
		count = 3000 // over both servers, in several 4 KiB chunks each
		steps = 6
	)
	opt := collective.SGD{Momentum: 0.5}
	lr := func(step int) float32 { return 0.25 / float32(int(1)<<(step/2)) }
	worlds := map[string]func(t *testing.T) []collective.Comm{
		"colocated": func(t *testing.T) []collective.Comm {
			return colocatedWorld(t, n, testOptions(map[string]string{"servers": "2"}), time.Minute)
		},
		"dedicated": func(t *testing.T) []collective.Comm {
			return dedicatedWorld(t, n, testOptions(map[string]string{"servers": "2"}), time.Minute).comms
		},
		"colocated/grpc": func(t *testing.T) []collective.Comm {
			return colocatedWorld(t, n, testOptions(map[string]string{"servers": "2", "transport": "grpc"}), time.Minute)
		},
		"dedicated/grpc": func(t *testing.T) []collective.Comm {
			return dedicatedWorld(t, n, testOptions(map[string]string{"servers": "2", "transport": "grpc"}), time.Minute).comms
		},
	}
	for name, build := range worlds {
		t.Run(name, func(t *testing.T) {
			comms := build(t)
			defer closeAll(comms)

			// The reference.
			ref := make([][]float32, steps+1)
			w := make([]float32, count)
			for i := range w {
				w[i] = float32(i%11) - 5
			}
			ref[0] = append([]float32(nil), w...)
			v := make([]float32, count)
			for s := range steps {
				grads := make([][]float32, n)
				for r := range n {
					grads[r] = gradient(w, r, s)
				}
				for i := range w {
					var sum float32
					for r := range n {
						sum += grads[r][i]
					}
					v[i] = opt.Momentum*v[i] + sum/n
					w[i] -= lr(s) * v[i]
				}
				ref[s+1] = append([]float32(nil), w...)
			}

			got := make([][][]float32, n) // [rank][step]
			var wg sync.WaitGroup
			for r, c := range comms {
				wg.Go(func() {
					p := c.(collective.ParamServer)
					ctx := context.Background()
					w := make([]float32, count)
					if r == 0 {
						copy(w, ref[0])
					} // the others receive rank 0's values from InitParams
					if err := p.InitParams(ctx, "layer1.weight", w, opt); err != nil {
						t.Errorf("rank %d: %v", r, err)
						return
					}
					got[r] = append(got[r], append([]float32(nil), w...))
					for s := range steps {
						if err := p.PushGrad(ctx, "layer1.weight", gradient(w, r, s), s, lr(s)); err != nil {
							t.Errorf("rank %d: %v", r, err)
							return
						}
						if err := p.PullParams(ctx, "layer1.weight", w, s); err != nil {
							t.Errorf("rank %d: %v", r, err)
							return
						}
						got[r] = append(got[r], append([]float32(nil), w...))
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			for r := range n {
				for s := range steps + 1 {
					for i := range count {
						// Servers sum a step's gradients in rank order, as
						// the reference does, whatever order they arrive
						// in, over either transport: the same bits.
						if got[r][s][i] != ref[s][i] {
							t.Fatalf("rank %d step %d element %d: %v, reference %v", r, s, i, got[r][s][i], ref[s][i])
						}
						// Every worker pulls the same server memory: identical.
						if got[r][s][i] != got[0][s][i] {
							t.Fatalf("rank %d step %d element %d: %v, rank 0 has %v", r, s, i, got[r][s][i], got[0][s][i])
						}
					}
				}
			}
		})
	}
}

// initOnAll has every worker initialize key to n zeros with opt,
// concurrently, as workers do at the start of training; it reports whether
// all of them succeeded.
func initOnAll(t *testing.T, ctx context.Context, key string, n int, opt collective.SGD, workers ...collective.ParamServer) bool {
	t.Helper()
	var wg sync.WaitGroup
	for _, p := range workers {
		wg.Go(func() {
			if err := p.InitParams(ctx, key, make([]float32, n), opt); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	return !t.Failed()
}

// TestSyncPullWaits checks that, synchronously, a pull at step t waits for
// every worker's step-t gradient.
func TestSyncPullWaits(t *testing.T) {
	comms := colocatedWorld(t, 2, testOptions(nil), time.Minute)
	defer closeAll(comms)
	ctx := context.Background()
	a, b := comms[0].(collective.ParamServer), comms[1].(collective.ParamServer)
	if !initOnAll(t, ctx, "w", 3, collective.SGD{}, a, b) {
		return
	}
	if err := a.PushGrad(ctx, "w", []float32{1, 2, 3}, 0, 1); err != nil {
		t.Fatal(err)
	}
	w := make([]float32, 3)
	done := make(chan error, 1)
	go func() { done <- a.PullParams(ctx, "w", w, 0) }()
	select {
	case err := <-done:
		t.Fatalf("pull at step 0 returned (%v) before rank 1 pushed step 0", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := b.PushGrad(ctx, "w", []float32{3, 2, 1}, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w[0] != -2 || w[1] != -2 || w[2] != -2 {
		t.Fatalf("after step 0: %v, want the mean gradient applied: [-2 -2 -2]", w)
	}
}

// TestAsyncStaleness checks the staleness bound: with staleness 2, a worker
// at step t pulls as soon as the slowest worker has pushed step t−2, and not
// before; each gradient is applied on arrival, divided by the worker count.
func TestAsyncStaleness(t *testing.T) {
	comms := colocatedWorld(t, 2, testOptions(map[string]string{"staleness": "2"}), time.Minute)
	defer closeAll(comms)
	ctx := context.Background()
	fast, slow := comms[0].(collective.ParamServer), comms[1].(collective.ParamServer)
	const count = 2000
	opt := collective.SGD{} // no momentum: each push at rate 1 moves w by −g/2 exactly
	var wg sync.WaitGroup
	for r, p := range []collective.ParamServer{fast, slow} {
		wg.Go(func() {
			if err := p.InitParams(ctx, "w", make([]float32, count), opt); err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ones, tens := make([]float32, count), make([]float32, count)
	for i := range ones {
		ones[i], tens[i] = 1, 10
	}
	w := make([]float32, count)
	check := func(want float32) {
		t.Helper()
		for i, x := range w {
			if x != want {
				t.Fatalf("w[%d] = %v, want %v", i, x, want)
			}
		}
	}
	// pullBlocks starts a pull and reports whether it is still waiting
	// after a while; it returns a channel that yields its error.
	pullBlocks := func(step int) (bool, chan error) {
		done := make(chan error, 1)
		go func() { done <- fast.PullParams(ctx, "w", w, step) }()
		select {
		case err := <-done:
			done <- err
			return false, done
		case <-time.After(300 * time.Millisecond):
			return true, done
		}
	}

	// Steps 0 and 1: within the bound while the slow worker has pushed nothing.
	for s := range 2 {
		if err := fast.PushGrad(ctx, "w", ones, s, 1); err != nil {
			t.Fatal(err)
		}
		if blocked, done := pullBlocks(s); blocked {
			t.Fatalf("pull at step %d blocked with staleness 2 and the slow worker at step -1", s)
		} else if err := <-done; err != nil {
			t.Fatal(err)
		}
		check(-float32(s+1) / 2)
	}
	// Step 2 needs the slow worker's step 0.
	if err := fast.PushGrad(ctx, "w", ones, 2, 1); err != nil {
		t.Fatal(err)
	}
	blocked, done := pullBlocks(2)
	if !blocked {
		t.Fatalf("pull at step 2 returned (%v) before the slow worker pushed step 0", <-done)
	}
	if err := slow.PushGrad(ctx, "w", tens, 0, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pull at step 2 still blocked after the slow worker pushed step 0")
	}
	check(-(3 + 10) / 2.0)

	// The slow worker itself is never held back by the fast one.
	if err := slow.PullParams(ctx, "w", w, 0); err != nil {
		t.Fatal(err)
	}
	check(-6.5)
}

// TestTrainingErrors checks that misuse is refused with a message that says what.
func TestTrainingErrors(t *testing.T) {
	c, err := collective.New(context.Background(), ps.Name, collective.Config{Rank: 0, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := c.(collective.ParamServer)
	ctx := context.Background()
	w := make([]float32, 10)
	if err := p.PushGrad(ctx, "", w, 0, 0.1); err == nil {
		t.Error("empty key accepted")
	}
	if err := p.InitParams(ctx, "w", w, collective.SGD{Momentum: float32(math.NaN())}); err == nil {
		t.Error("NaN momentum accepted")
	}
	if err := p.InitParams(ctx, "w", w, collective.SGD{}); err != nil {
		t.Fatal(err)
	}
	for _, lr := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		err := p.PushGrad(ctx, "w", w, 0, lr)
		if !errors.Is(err, collective.ErrInvalid) || !strings.Contains(err.Error(), "must be finite") {
			t.Errorf("learning rate %v: %v", lr, err)
		}
	}
	err = p.PushGrad(ctx, "w", w, 3, 0.1)
	if err == nil || !strings.Contains(err.Error(), "expected step 0") {
		t.Errorf("out-of-order step: %v", err)
	}
}

// TestLearningRatePerPush checks that the servers apply each gradient with
// the learning rate its push carried, exactly: v ← m·v + g/n; p ← p − lr·v,
// the rate changing from one step to the next as a step schedule's does.
// Every value is a sum of powers of two, so float32 holds it exactly.
func TestLearningRatePerPush(t *testing.T) {
	const m = 0.5
	lrs := []float32{0.5, 0.0625, 0.0625}
	grads := [][2][]float32{ // [step][rank]
		{{1, 2, 4, -8}, {3, 2, 0, 8}},
		{{2, 2, 2, 2}, {2, -2, 6, 0}},
		{{4, 0, 0, 4}, {0, 4, 4, 0}},
	}
	init := []float32{1, 2, 4, 8}
	for _, tc := range []struct {
		name, staleness string
		want            func() []float32
	}{
		{"sync", "0", func() []float32 { // the mean gradient, once a step
			p, v := append([]float32(nil), init...), make([]float32, len(init))
			for s, lr := range lrs {
				for i := range p {
					v[i] = m*v[i] + (grads[s][0][i]+grads[s][1][i])/2
					p[i] -= lr * v[i]
				}
			}
			return p
		}},
		{"async", "1", func() []float32 { // each push as it comes, divided by 2
			p, v := append([]float32(nil), init...), make([]float32, len(init))
			for s, lr := range lrs {
				for r := range 2 {
					for i := range p {
						v[i] = m*v[i] + grads[s][r][i]/2
						p[i] -= lr * v[i]
					}
				}
			}
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			comms := colocatedWorld(t, 2, testOptions(map[string]string{"staleness": tc.staleness}), time.Minute)
			defer closeAll(comms)
			ctx := context.Background()
			var wg sync.WaitGroup
			for r, c := range comms {
				wg.Go(func() {
					w := append([]float32(nil), init...)
					if err := c.(collective.ParamServer).InitParams(ctx, "w", w, collective.SGD{Momentum: m}); err != nil {
						t.Errorf("rank %d: %v", r, err)
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			// One push at a time, rank 0 then rank 1: the async order is known.
			for s, lr := range lrs {
				for r, c := range comms {
					if err := c.(collective.ParamServer).PushGrad(ctx, "w", grads[s][r], s, lr); err != nil {
						t.Fatalf("rank %d step %d: %v", r, s, err)
					}
				}
			}
			got := make([]float32, len(init))
			if err := comms[1].(collective.ParamServer).PullParams(ctx, "w", got, len(lrs)-1); err != nil {
				t.Fatal(err)
			}
			if want := tc.want(); !slices.Equal(got, want) {
				t.Errorf("after %d steps at rates %v: %v, want %v", len(lrs), lrs, got, want)
			}
		})
	}
}

// TestSyncLearningRateMismatch: synchronously, the workers' pushes of one
// step must carry the same learning rate; one that disagrees fails the job,
// with an error that names both ranks and rates.
func TestSyncLearningRateMismatch(t *testing.T) {
	comms := colocatedWorld(t, 2, testOptions(nil), time.Minute)
	defer closeAll(comms)
	ctx := context.Background()
	a, b := comms[0].(collective.ParamServer), comms[1].(collective.ParamServer)
	if !initOnAll(t, ctx, "w", 1000, collective.SGD{Momentum: 0.9}, a, b) {
		return
	}
	g := make([]float32, 1000)
	if err := a.PushGrad(ctx, "w", g, 0, 0.1); err != nil {
		t.Fatal(err)
	}
	err := b.PushGrad(ctx, "w", g, 0, 0.01)
	if err == nil || !strings.Contains(err.Error(), "rank 1 pushed learning rate 0.01, rank 0 pushed 0.1") ||
		!strings.Contains(err.Error(), "must carry the same rate") {
		t.Fatalf("disagreeing learning rates: got %v", err)
	}
	t.Log(err)
	// The job has failed: rank 0's pull of the step fails too.
	if err := a.PullParams(ctx, "w", g, 0); err == nil {
		t.Error("rank 0's pull succeeded after the step's learning rates disagreed")
	}
}
