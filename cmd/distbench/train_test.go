package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/workloads/data"
)

// TestTrainBadInput: a bad learning-rate schedule is refused in one line,
// exit status 2, before any worker starts or the run directory is made.
func TestTrainBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in the one stderr line
	}{
		{"unknown schedule", []string{"--lr-schedule", "exp:0.9"},
			`lr schedule "exp:0.9": unknown schedule "exp" (accepted: constant, step:EVERY:GAMMA, multistep:M1,M2,...:GAMMA, cosine, cosine:MIN)`},
		{"step size", []string{"--lr-schedule", "step:0:0.1"}, `EVERY "0" must be a positive integer (accepted: `},
		{"gamma", []string{"--lr-schedule", "step:30:2"}, `GAMMA "2" must be a factor in (0, 1] (accepted: `},
		{"milestones", []string{"--lr-schedule", "multistep:60,30:0.1"}, "milestone 30 after 60: milestones must be strictly increasing (accepted: "},
		{"cosine minimum", []string{"--lr", "0.1", "--lr-schedule", "cosine:0.2"}, `MIN "0.2" must be a rate in [0, 0.1), below the base rate (accepted: `},
		{"warm-up", []string{"--lr-warmup", "-2"}, "lr warm-up of -2 epochs: must not be negative"},
		{"mode", []string{"--mode", "fsdp"}, `unknown training mode "fsdp" (accepted: tutorial, ddp, dp, ps-sync, ps-async)`},
		{"transport", []string{"--transport", "udp"}, `--transport: unknown transport "udp" (accepted: auto, tcp, shm)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			code, stdout, stderr := runCLI(t, append([]string{"train", "--out", out}, tt.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr: %s", code, stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "distbench: ") || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr = %q, want one line containing %q", stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("started despite bad input:\n%s", stdout)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("made the run directory %s despite bad input", out)
			}
		})
	}
}

// TestTrainSchedule runs `distbench train` end to end on a small
// MNIST-shaped dataset made here, under step:1:0.1: the schedule reaches
// the worker processes in their spec (train.Config's lr_schedule), and
// their records say epoch 1 trained at --lr and epoch 2 at a tenth of it.
func TestTrainSchedule(t *testing.T) {
	dir := t.TempDir()
	writeIDXData(t, dir, data.Train, 128)
	writeIDXData(t, dir, data.Test, 64)
	out := filepath.Join(dir, "run")
	args := []string{"train", "--data", dir, "--model", "mlp", "--np", "2", "--epochs", "2", "--max-steps", "2",
		"--batch", "32", "--lr", "0.05", "--lr-schedule", "step:1:0.1", "--out", out}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "lr 0.05 step:1:0.1,") || !strings.Contains(stdout, "epoch 2: step 4, lr 0.005,") {
		t.Errorf("stdout does not show the schedule and each epoch's rate:\n%s", stdout)
	}
	want := map[int]float64{1: 0.05, 2: 0.005}
	var steps, epochs int
	for _, r := range readJSONL(t, filepath.Join(out, "results.jsonl")) {
		switch r.Kind {
		case results.KindEnv:
			continue
		case results.KindTrainStep:
			steps++
		case results.KindTrainEpoch:
			epochs++
		}
		if math.Abs(r.LR-want[r.Epoch]) > 1e-15 {
			t.Errorf("%s epoch %d step %d: lr %v, want %v", r.Kind, r.Epoch, r.Step, r.LR, want[r.Epoch])
		}
	}
	if steps != 4 || epochs != 2 {
		t.Errorf("%d step and %d epoch records, want 4 and 2", steps, epochs)
	}
}

// writeIDXData writes n 28×28 images of split in IDX form, raw: class k
// is a bright square in the k-th cell of a 2×2 grid.
func writeIDXData(t *testing.T, dir string, split data.Split, n int) {
	t.Helper()
	imgName, lblName := data.IDXFiles(split)
	img := binary.BigEndian.AppendUint32([]byte{0, 0, 8, 3}, uint32(n))
	img = binary.BigEndian.AppendUint32(img, 28)
	img = binary.BigEndian.AppendUint32(img, 28)
	lbl := binary.BigEndian.AppendUint32([]byte{0, 0, 8, 1}, uint32(n))
	for i := range n {
		k := i % 4
		lbl = append(lbl, byte(k))
		r0, c0 := 3+(k/2)*14, 3+(k%2)*14
		for r := range 28 {
			for c := range 28 {
				px := byte((i*31 + r*7 + c*13) % 50)
				if r >= r0 && r < r0+7 && c >= c0 && c < c0+7 {
					px = 220
				}
				img = append(img, px)
			}
		}
	}
	for name, b := range map[string][]byte{imgName: img, lblName: lbl} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTrainDP runs `distbench train --mode dp` end to end in real worker
// processes: over TCP with shaped links through tree, and over shared
// memory through ring. Every step record times DataParallel's five
// transfers; every epoch record has each rank's wait and bytes per step.
func TestTrainDP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	writeIDXData(t, dir, data.Train, 96)
	writeIDXData(t, dir, data.Test, 32)
	for _, tc := range []struct {
		name string
		np   int
		args []string
	}{
		{"tree tcp shaped", 3, []string{"--strategy", "tree", "--link", "10Gbit,25us"}},
		{"ring shm", 2, []string{"--strategy", "ring", "--transport", "shm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := append([]string{"train", "--mode", "dp", "--data", dir, "--model", "lenet", "--np", fmt.Sprint(tc.np), "--epochs", "1",
				"--max-steps", "3", "--batch", "24", "--out", out, "--timeout", "1m"}, tc.args...)
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, "dp mode") {
				t.Errorf("the preamble does not name the mode:\n%s", stdout)
			}
			var steps, epochs int
			for _, r := range readJSONL(t, filepath.Join(out, "results.jsonl")) {
				switch r.Kind {
				case results.KindTrainStep:
					steps++
					if len(r.TransferMs) != 5 || r.TransferMs["reduce"] <= 0 || r.CommMs <= 0 || r.Mode != "dp" {
						t.Errorf("step %d: mode %q, transfers %v, comm %v ms", r.Step, r.Mode, r.TransferMs, r.CommMs)
					}
				case results.KindTrainEpoch:
					epochs++
					if len(r.RankExposedMs) != tc.np || len(r.WireSentBytes) != tc.np || r.RankTrafficShare(0) < 1/float64(tc.np)-1e-9 {
						t.Errorf("epoch %d: rank waits %v, bytes sent %v received %v", r.Epoch, r.RankExposedMs, r.WireSentBytes, r.WireRecvBytes)
					}
				}
			}
			if steps != 3 || epochs != 1 {
				t.Errorf("%d step and %d epoch records, want 3 and 1", steps, epochs)
			}
		})
	}
}
