package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/distbench/distbench/capi/bridge"
	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/results"
	_ "github.com/distbench/distbench/strategies/all"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestSettingsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string // "" for none
		check   func(t *testing.T, s bridge.Settings)
	}{
		{"defaults", nil, "", func(t *testing.T, s bridge.Settings) {
			if s.Strategy != "ring" || s.URL != "env://" || s.Rank != -1 || s.Size != -1 || s.JobID != "distbench-torch" {
				t.Errorf("defaults: %+v", s)
			}
		}},
		{"torchrun", map[string]string{"TORCHELASTIC_RUN_ID": "abc", "RANK": "1", "WORLD_SIZE": "4", "DISTBENCH_TORCH_STORE": "1"}, "", func(t *testing.T, s bridge.Settings) {
			if s.JobID != "torch-abc" || s.Rank != 1 || s.Size != 4 || !s.Torch {
				t.Errorf("torchrun: %+v", s)
			}
		}},
		{"options", map[string]string{"DISTBENCH_STRATEGY": "tree", "DISTBENCH_OPTIONS": " algo=dbtree , chunk=64KiB", "DISTBENCH_TIMEOUT": "90"}, "", func(t *testing.T, s bridge.Settings) {
			if s.Strategy != "tree" || s.Options["algo"] != "dbtree" || s.Options["chunk"] != "64KiB" || s.Timeout.Seconds() != 90 {
				t.Errorf("options: %+v", s)
			}
		}},
		{"unknown strategy", map[string]string{"DISTBENCH_STRATEGY": "rign"}, `DISTBENCH_STRATEGY: unknown strategy "rign" (registered: `, nil},
		{"unknown option", map[string]string{"DISTBENCH_OPTIONS": "bogus=1"}, "DISTBENCH_OPTIONS: ring: ", nil},
		{"not key=value", map[string]string{"DISTBENCH_OPTIONS": "chunk"}, `DISTBENCH_OPTIONS: "chunk" is not key=value`, nil},
		{"transport", map[string]string{"DISTBENCH_TRANSPORT": "udp"}, `DISTBENCH_TRANSPORT: unknown transport "udp" (accepted: auto, tcp, shm)`, nil},
		{"timeout", map[string]string{"DISTBENCH_TIMEOUT": "soon"}, `DISTBENCH_TIMEOUT="soon": want a positive duration`, nil},
		{"rank", map[string]string{"RANK": "x"}, `RANK="x": want a non-negative integer`, nil},
		{"torch store", map[string]string{"DISTBENCH_TORCH_STORE": "maybe"}, `DISTBENCH_TORCH_STORE="maybe": want 1 or 0`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := bridge.SettingsFromEnv(envOf(tc.env))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			case tc.wantErr != "" && strings.Contains(err.Error(), "\n"):
				t.Fatalf("error is not one line: %q", err)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

// TestOpenAndRecord: two ranks in this process meet through a distbench
// store on loopback, allreduce through ring with the operations issued
// asynchronously, and rank 0 records them, step by step.
func TestOpenAndRecord(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	out := t.TempDir()
	const np, steps = 2, 3
	var wg sync.WaitGroup
	errs := make([]error, np)
	sums := make([][]float32, np)
	for r := range np {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				c, err := bridge.Open(context.Background(), envOf(map[string]string{
					"DISTBENCH_INIT": "tcp://" + addr, "RANK": fmt.Sprint(r), "WORLD_SIZE": fmt.Sprint(np),
					"DISTBENCH_OUT": out, "DISTBENCH_MODEL": "unit", "DISTBENCH_TIMEOUT": "2m",
				}))
				if err != nil {
					return err
				}
				buf := []float32{float32(r + 1), 10}
				for s := range steps {
					c.SetStep(int64(s + 1))
					a := c.AllReduce(collective.FromFloat32(buf), collective.Sum)
					b := c.Barrier()
					if err := a.Wait(context.Background()); err != nil {
						return err
					}
					if err := b.Wait(context.Background()); err != nil {
						return err
					}
				}
				sums[r] = buf
				return c.Close()
			}()
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	// 1+2, then 3+3 = 6, then 12: each step sums the last step's result.
	if sums[0][0] != 12 || sums[1][0] != 12 || sums[0][1] != 80 {
		t.Fatalf("sums %v, want [12 80] on both ranks", sums)
	}
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range run.Records {
		kinds[r.Kind]++
		if r.Kind == results.KindCollective && r.Collective == "allreduce" && (r.Iters != steps || r.Bytes != 8 || r.DType != "float32" || r.Op != "sum" || r.Workload != "unit") {
			t.Errorf("allreduce summary: %+v", r)
		}
		if r.Kind == results.KindTrainStep && (r.Model != "unit" || r.CommMs <= 0 || r.Step < 1 || r.Step > steps) {
			t.Errorf("step record: %+v", r)
		}
	}
	if kinds[results.KindOp] != 2*steps || kinds[results.KindCollective] != 2 || kinds[results.KindTrainStep] != steps || !run.Finished {
		t.Errorf("records by kind %v (finished %v), want %d ops, 2 summaries, %d steps, finished", kinds, run.Finished, 2*steps, steps)
	}
}

func TestSettingErrorIsInvalid(t *testing.T) {
	_, err := bridge.SettingsFromEnv(envOf(map[string]string{"DISTBENCH_STRATEGY": "rign"}))
	if !errors.Is(err, collective.ErrInvalid) {
		t.Fatalf("%v does not match collective.ErrInvalid", err)
	}
}
