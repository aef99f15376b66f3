// Package python_test runs the PyTorch backend (python/distbench_torch)
// under real torch processes: python/tests/check.py under torchrun at np 2
// and 3 (every collective against gloo's answers, then DDP of a small model
// through distbench's ring, tree and ps beside the same DDP through gloo,
// whose parameters must end equal), and a DDP job in which a rank kills
// itself mid-step, whose survivors must fail with the error naming it. It
// builds libdistbench.so first, and skips, saying why, where no Python has
// torch (Debian: apt-get install python3-torch).
package python_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/reports"
	"github.com/distbench/distbench/results"
)

// python finds an interpreter with torch.distributed: DISTBENCH_PYTHON,
// then Debian's, then the PATH's.
func python(t *testing.T) string {
	t.Helper()
	var cands []string
	if p := os.Getenv("DISTBENCH_PYTHON"); p != "" {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/bin/python3", "python3")
	for _, p := range cands {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := exec.CommandContext(ctx, p, "-c", "import torch.distributed as d; assert d.is_available()").Run()
		cancel()
		if err == nil {
			return p
		}
	}
	t.Skipf("no Python with torch.distributed (tried %s): the PyTorch backend's tests need it (Debian: apt-get install python3-torch)", strings.Join(cands, ", "))
	return ""
}

var (
	libOnce sync.Once
	libPath string
	libErr  error
	libDir  string
)

// lib builds libdistbench.so once for the package's tests (a c-shared build
// needs cgo and a C compiler).
func lib(t *testing.T) string {
	t.Helper()
	libOnce.Do(func() {
		libDir, libErr = os.MkdirTemp("", "distbench-capi")
		if libErr != nil {
			return
		}
		libPath = filepath.Join(libDir, "libdistbench.so")
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildmode=c-shared", "-o", libPath, "../capi")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			libErr = fmt.Errorf("building libdistbench.so: %v\n%s", err, out)
		}
	})
	if libErr != nil {
		if _, err := exec.LookPath("gcc"); err != nil {
			t.Skipf("libdistbench.so needs cgo and a C compiler: %v", libErr)
		}
		t.Fatal(libErr)
	}
	return libPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if libDir != "" {
		os.RemoveAll(libDir)
	}
	os.Exit(code)
}

// env is what every run of check.py gets.
func env(t *testing.T, extra ...string) []string {
	e := append(os.Environ(), "DISTBENCH_LIB="+lib(t), "OMP_NUM_THREADS=1", "PYTHONDONTWRITEBYTECODE=1", "DISTBENCH_TIMEOUT=2m")
	return append(e, extra...)
}

// torchrun runs check.py under torchrun with np local ranks. --redirects and
// --tee must be nonzero: Debian's torch 1.13 on Python 3.11 fails to parse
// their default 0 (an enum flag of value 0 is no longer iterated).
func torchrun(t *testing.T, py string, np int, envs []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// A rendezvous endpoint of its own, not --standalone's fixed port
	// 29400, which another torchrun on the machine may hold (and whose
	// job this one would then join).
	cmdArgs := append([]string{"-m", "torch.distributed.run", "--nnodes=1", "--rdzv_backend=c10d",
		fmt.Sprintf("--rdzv_endpoint=127.0.0.1:%d", freePort(t)), fmt.Sprintf("--rdzv_id=check-%d-%d", os.Getpid(), time.Now().UnixNano()),
		fmt.Sprintf("--nproc_per_node=%d", np),
		"--redirects", "2", "--tee", "2", "--log_dir", t.TempDir(), filepath.Join("tests", "check.py")}, args...)
	cmd := exec.CommandContext(ctx, py, cmdArgs...)
	cmd.Env = envs
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("torchrun np %d %s: %v (ctx: %v)\n%s", np, strings.Join(args, " "), err, ctx.Err(), out.String())
	}
	return out.String()
}

// TestDDPAndConformance: every collective through distbench against gloo,
// and DDP through distbench's ring, tree and ps ending where DDP through
// gloo ends, at np 2 (distbench the default group, recording the job) and
// np 3 (gloo the default, distbench's strategies as groups of their own).
func TestDDPAndConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: torch jobs take minutes on a busy machine")
	}
	py := python(t)
	for _, tc := range []struct {
		np     int
		deflt  string
		record bool
		strats []string
	}{
		{2, "distbench", true, []string{"ring", "tree", "ps"}},
		{3, "gloo", false, []string{"ring", "tree", "ps"}},
	} {
		t.Run(fmt.Sprintf("np%d-default-%s", tc.np, tc.deflt), func(t *testing.T) {
			out := t.TempDir()
			extra := []string{}
			if tc.record {
				extra = append(extra, "DISTBENCH_OUT="+out, "DISTBENCH_MODEL=check DDP")
			}
			log := torchrun(t, py, tc.np, env(t, extra...), "--default", tc.deflt, "--strategies", strings.Join(tc.strats, ","), "--steps", "20")
			for r := 0; r < tc.np; r++ {
				for _, s := range tc.strats {
					for _, what := range []string{"conformance", "DDP 20 steps", "ZeroRedundancyOptimizer"} {
						if want := fmt.Sprintf("PASS rank %d %s %s", r, s, what); !strings.Contains(log, want) {
							t.Errorf("no %q in the job's output:\n%s", want, log)
						}
					}
				}
			}
			if tc.record {
				checkRecords(t, out, tc.np)
			}
		})
	}
}

// checkRecords checks what DISTBENCH_OUT holds after the np 2 job: a
// record per operation, a step record per DDP step, a summary per
// distinct operation, and a report made from them.
func checkRecords(t *testing.T, dir string, np int) {
	t.Helper()
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range run.Records {
		kinds[r.Kind]++
		if r.Kind == results.KindOp && (r.Strategy != "ring" || r.NP != np || r.Collective == "" || r.TimeUs <= 0 && r.Collective != "barrier") {
			t.Errorf("op record without what ran or how long: %+v", r)
		}
	}
	if kinds[results.KindOp] < 100 || kinds[results.KindCollective] == 0 || kinds[results.KindTrainStep] < 19 {
		t.Errorf("records by kind %v: want over 100 ops, summaries, and a step record for each of the 20 DDP steps", kinds)
	}
	if !run.Finished {
		t.Errorf("the run is not marked finished: the communicator was not closed at exit")
	}
	if err := reports.Generate(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"allreduce", "check DDP"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("the report does not mention %q", want)
		}
	}
}

// TestKilledRank: rank 1 of 3 kills itself (SIGKILL) in the middle of a DDP
// step; ranks 0 and 2 must fail with a RuntimeError naming rank 1 and its
// address, not hang. The ranks are plain processes meeting through torch's
// env:// rendezvous (rank 0 hosts the TCPStore), not torchrun, whose agent
// would stop the survivors itself once it saw rank 1 die.
func TestKilledRank(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: torch jobs take minutes on a busy machine")
	}
	py := python(t)
	const np = 3
	errDir := t.TempDir()
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmds := make([]*exec.Cmd, np)
	outs := make([]*bytes.Buffer, np)
	for r := range np {
		cmds[r] = exec.CommandContext(ctx, py, filepath.Join("tests", "check.py"), "--kill-rank", "1")
		cmds[r].Env = env(t, "MASTER_ADDR=127.0.0.1", fmt.Sprintf("MASTER_PORT=%d", port), fmt.Sprintf("RANK=%d", r),
			fmt.Sprintf("WORLD_SIZE=%d", np), fmt.Sprintf("LOCAL_RANK=%d", r), "CHECK_ERRDIR="+errDir)
		outs[r] = &bytes.Buffer{}
		cmds[r].Stdout, cmds[r].Stderr = outs[r], outs[r]
		if err := cmds[r].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for r, c := range cmds {
		err := c.Wait()
		if ctx.Err() != nil {
			t.Fatalf("rank %d still running after %v: the survivors hang\n%s", r, 10*time.Minute, outs[r])
		}
		if r == 1 {
			continue
		}
		if c.ProcessState.ExitCode() != 3 {
			t.Errorf("rank %d: %v, want exit status 3 (a RuntimeError caught)\n%s", r, err, outs[r])
			continue
		}
		msg, err := os.ReadFile(filepath.Join(errDir, fmt.Sprintf("rank-%d", r)))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"distbench rank", "allreduce", "rank 1 (127.0.0.1:"} {
			if !bytes.Contains(msg, []byte(want)) {
				t.Errorf("rank %d's error does not name %q: %s", r, want, msg)
			}
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestBadSettings: an unknown strategy or option fails init_process_group
// with one line naming it and what is accepted, before any network.
func TestBadSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts torch")
	}
	py := python(t)
	for _, tc := range []struct{ env, want string }{
		{"DISTBENCH_STRATEGY=rign", `DISTBENCH_STRATEGY: unknown strategy "rign" (registered: `},
		{"DISTBENCH_OPTIONS=chunk", `DISTBENCH_OPTIONS: "chunk" is not key=value`},
	} {
		t.Run(tc.env, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			script := `import sys, torch.distributed as dist
sys.path.insert(0, ".")
import distbench_torch
try:
    dist.init_process_group("distbench", init_method="tcp://127.0.0.1:%d", rank=0, world_size=1)
except ValueError as e:
    print("ERROR", e)
`
			cmd := exec.CommandContext(ctx, py, "-c", fmt.Sprintf(script, freePort(t)))
			cmd.Env = env(t, tc.env)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var line string
			for _, l := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(l, "ERROR ") {
					line = l
				}
			}
			if !strings.Contains(line, tc.want) {
				t.Fatalf("init_process_group's error %q does not contain %q\n%s", line, tc.want, out)
			}
		})
	}
}
