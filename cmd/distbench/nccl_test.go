//go:build cgo

package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/strategies/nccl"
	"github.com/distbench/distbench/workloads/data"
)

// TestRunNCCL runs the CLI's nccl path twice: without the library, where
// run must refuse in one line with exit status 2 and strategies must say
// why; and against the stand-in NCCL the nccl package's tests build (here
// built again), where run's check must find every element right: every
// collective and dtype at np 3, allreduce with every dtype and op at np 8. The
// workers are this test binary, started by the launcher with the
// environment it has, so they load the stand-in too.
func TestRunNCCL(t *testing.T) {
	t.Run("absent", func(t *testing.T) {
		t.Setenv(nccl.EnvNCCLLib, "/nonexistent/libnccl.so.2")
		code, stdout, stderr := runCLI(t, "run", "--strategy", "nccl", "--np", "2")
		const want = "nccl: /nonexistent/libnccl.so.2 not found (install NCCL, or choose --strategy ring)"
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, stderr, want)
		}
		_, stdout, _ = runCLI(t, "strategies")
		if !strings.Contains(stdout, "[unavailable here: "+want+"]") {
			t.Errorf("strategies does not say why nccl is unavailable:\n%s", stdout)
		}
	})
	t.Run("standin", func(t *testing.T) {
		if testing.Short() {
			t.Skip("builds a library and starts processes")
		}
		useStandin(t)
		for _, coll := range []string{"allreduce", "broadcast", "reduce", "allgather", "reducescatter", "alltoall", "gather", "scatter"} {
			code, stdout, stderr := runCLI(t, "run", "--strategy", "nccl", "--np", "3", "--collective", coll, "-d", "all",
				"-b", "8", "-e", "64KiB", "-f", "32", "--iters", "2", "--warmup", "1", "--timeout", "1m")
			if code != 0 || !strings.Contains(stdout, "Out of bounds values : 0 OK") {
				t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", coll, code, stdout, stderr)
			}
		}
		code, stdout, stderr := runCLI(t, "run", "--strategy", "nccl", "--np", "8", "-d", "all", "-o", "all",
			"-b", "8", "-e", "4KiB", "-f", "512", "--iters", "2", "--warmup", "1", "--timeout", "1m")
		if code != 0 || !strings.Contains(stdout, "Out of bounds values : 0 OK") {
			t.Fatalf("allreduce at np 8: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}

		// Training through nccl (each DDP bucket's gradients copied to
		// "device" memory and allreduced there) follows ring's run exactly.
		dir := t.TempDir()
		writeIDXData(t, dir, data.Train, 192)
		writeIDXData(t, dir, data.Test, 64)
		epochs := map[string]string{}
		for _, s := range []string{"ring", "nccl"} {
			code, stdout, stderr := runCLI(t, "train", "--data", dir, "--model", "mlp", "--np", "3", "--epochs", "1",
				"--max-steps", "4", "--batch", "48", "--strategy", s, "--bucket-mb", "0.05", "--out", filepath.Join(dir, s))
			if code != 0 {
				t.Fatalf("train %s: exit %d\nstdout:\n%s\nstderr:\n%s", s, code, stdout, stderr)
			}
			for _, line := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(line, "epoch 1:") {
					loss, _, _ := strings.Cut(line, ", test accuracy")
					epochs[s] = loss
				}
			}
		}
		if epochs["nccl"] == "" || epochs["nccl"] != epochs["ring"] {
			t.Errorf("training through nccl and through ring differ:\n ring: %s\n nccl: %s", epochs["ring"], epochs["nccl"])
		}
	})
	// Later tests see the environment without the stand-in, and the
	// strategy unavailable again.
	if _, stdout, _ := runCLI(t, "strategies"); !strings.Contains(stdout, "[unavailable here: ") {
		t.Errorf("nccl still available once the stand-in is out of the environment:\n%s", stdout)
	}
}

// useStandin builds the stand-in NCCL and CUDA runtime of the nccl
// package's tests and points the strategy, and the workers the launcher
// starts, at it for the rest of the test.
func useStandin(t *testing.T) {
	t.Helper()
	lib := filepath.Join(t.TempDir(), "libnccl.so.2")
	if out, err := exec.Command("cc", "-shared", "-fPIC", "-O2", "-pthread", "-o", lib, "../../strategies/nccl/testdata/standin.c").CombinedOutput(); err != nil {
		t.Skipf("no C compiler to build the stand-in: %v\n%s", err, out)
	}
	t.Setenv(nccl.EnvNCCLLib, lib)
	t.Setenv(nccl.EnvCUDARTLib, lib)
	t.Setenv("DISTBENCH_STANDIN_STRICT", "1") // communicators must be made non-blocking
}
