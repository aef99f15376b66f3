package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestDataParallelScript runs torch_dataparallel.py, the seeds' DataParallel
// beside `train --mode dp`, where torch is installed: without two GPUs it
// must say it skipped and why, and exit 0; with --cpu (DataParallel calling
// the module directly) its loop must run and report an epoch, where the
// MNIST files are here (make data).
func TestDataParallelScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts torch")
	}
	py, err := find(peer{modules: "torch"})
	if err != nil {
		t.Skip(err)
	}
	run := func(args ...string) []map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, py, append([]string{"torch_dataparallel.py"}, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr.Bytes())
		}
		var lines []map[string]any
		for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			var m map[string]any
			if err := json.Unmarshal(l, &m); err != nil {
				t.Fatalf("%v: line %q: %v", args, l, err)
			}
			lines = append(lines, m)
		}
		return lines
	}
	lines := run("--gpus", "8")
	if len(lines) != 1 || lines[0]["peer"] != "torch-dataparallel" || lines[0]["skipped"] == nil {
		t.Errorf("with fewer than 8 GPUs: %v, want one line saying it skipped", lines)
	}
	dir := filepath.Join("..", "data", "mnist")
	if _, err := os.Stat(filepath.Join(dir, "t10k-labels-idx1-ubyte.gz")); err != nil {
		t.Skipf("no MNIST in %s (make data): the CPU check needs it", dir)
	}
	lines = run("--cpu", "--data", dir, "--epochs", "1", "--max-steps", "3", "--batch", "32", "--lr", "0.05")
	if len(lines) != 1 {
		t.Fatalf("%d lines for one epoch: %v", len(lines), lines)
	}
	e := lines[0]
	if e["steps"] != 3.0 || e["device"] != "cpu" || !(e["test_acc"].(float64) > 0) || !(e["step_ms"].(float64) > 0) {
		t.Errorf("epoch line %v", e)
	}
}
