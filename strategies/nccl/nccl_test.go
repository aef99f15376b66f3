//go:build cgo

package nccl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/transport"
)

// standin is the path of the stand-in library TestMain built, or "".
var standin string

// TestMain builds the stand-in NCCL and CUDA runtime (testdata/standin.c)
// with the system's C compiler and points the loader at it, unless the
// environment already names libraries or DISTBENCH_REAL_LIBS=1 asks for
// the ones internal/cuda finds (a GPU machine's: make gpu-check).
func TestMain(m *testing.M) {
	os.Exit(func() int {
		if os.Getenv(EnvNCCLLib) == "" && os.Getenv("DISTBENCH_REAL_LIBS") != "1" {
			dir, err := os.MkdirTemp("", "nccl-standin")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			lib := filepath.Join(dir, "libnccl.so.2")
			cc := os.Getenv("CC")
			if cc == "" {
				cc = "cc"
			}
			out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-pthread", "-o", lib, "testdata/standin.c").CombinedOutput()
			if err != nil {
				fmt.Fprintf(os.Stderr, "building the stand-in NCCL: %v\n%s", err, out)
				return 1
			}
			standin = lib
			os.Setenv(EnvNCCLLib, lib)
			os.Setenv(EnvCUDARTLib, lib)
			os.Setenv("DISTBENCH_STANDIN_STRICT", "1") // communicators must be made non-blocking
		}
		return m.Run()
	}())
}

// newWorld builds an n-rank nccl world over the in-memory transport.
func newWorld(t testing.TB, n int, timeout time.Duration) []collective.Comm {
	trs := transport.NewMemWorld(n, transport.MemOptions{})
	comms := make([]collective.Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			comms[r], errs[r] = collective.New(t.Context(), Name, collective.Config{Rank: r, Size: n, Transport: trs[r], Timeout: timeout})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return comms
}

// TestConformance runs the suite at np 1, 2, 3, 4, 5, 7 and 8 through the
// stand-in (1-4 with -short); through a real NCCL (make gpu-check), at the
// world sizes this machine has GPUs for, since NCCL refuses two ranks of
// one communicator on one GPU.
func TestConformance(t *testing.T) {
	sizes := slices.Clone(collectivetest.DefaultWorldSizes)
	if testing.Short() {
		sizes = []int{1, 2, 3, 4}
	}
	if standin == "" {
		if err := (strategy{}).Available(); err != nil {
			t.Fatal(err)
		}
		gpus, _ := deviceCount()
		sizes = slices.DeleteFunc(sizes, func(n int) bool { return n > gpus })
		t.Logf("real NCCL (version code %d) on %d GPUs: world sizes %v", version(), gpus, sizes)
	}
	collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
		return newWorld(t, n, 0)
	}, collectivetest.Options{WorldSizes: sizes})
}

func TestAvailable(t *testing.T) {
	if err := (strategy{}).Available(); err != nil {
		t.Fatal(err)
	}
	if standin != "" && version() != 21800 {
		t.Errorf("stand-in NCCL version %d, want 21800", version())
	}
}

// failAll runs one allreduce on every rank of a fresh world with injected
// failures set in env and returns each rank's error and how long it took.
func failAll(t *testing.T, n int, env string, timeout time.Duration) ([]error, time.Duration) {
	if standin == "" {
		t.Skip("failures are injected only into the stand-in")
	}
	name, value, _ := strings.Cut(env, "=")
	t.Setenv(name, value)
	comms := newWorld(t, n, timeout)
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	// One good call first, so the failure lands on call 1, not at start.
	errs := make([]error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			ctx := context.Background()
			t1 := collective.NewTensor(collective.Float32, 1024)
			if err := c.AllReduce(ctx, t1, collective.Sum); err != nil {
				errs[r] = fmt.Errorf("first allreduce: %w", err)
				return
			}
			errs[r] = c.AllReduce(ctx, t1, collective.Sum)
		})
	}
	wg.Wait()
	return errs, time.Since(start)
}

func TestInjectedAsyncError(t *testing.T) {
	const n = 4
	// That the error is not a timeout (checked below) says that it did not
	// wait for the deadline; a time bound would fail on a loaded machine.
	errs, _ := failAll(t, n, "DISTBENCH_STANDIN_FAIL=2:1", 20*time.Second)
	for r, err := range errs {
		t.Logf("rank %d: %v", r, err)
		if err == nil {
			t.Errorf("rank %d: no error", r)
			continue
		}
		var oe *collective.OpError
		if !errors.As(err, &oe) || oe.Op != "allreduce" || oe.Seq != 1 {
			t.Errorf("rank %d: want an OpError of allreduce #1, got %v", r, err)
		}
		if errors.Is(err, collective.ErrTimeout) {
			t.Errorf("rank %d: an injected error should not wait for the deadline: %v", r, err)
		}
	}
	if !strings.Contains(errs[2].Error(), "injected failure on rank 2") || !strings.Contains(errs[2].Error(), "ncclSystemError") {
		t.Errorf("rank 2's error does not say what happened: %v", errs[2])
	}
	for _, r := range []int{0, 1, 3} {
		if errs[r] != nil && !strings.Contains(errs[r].Error(), "rank 2 left") {
			t.Errorf("rank %d's error does not name rank 2: %v", r, errs[r])
		}
	}
}

func TestHungRank(t *testing.T) {
	const n = 3
	timeout := 2 * time.Second
	errs, took := failAll(t, n, "DISTBENCH_STANDIN_HANG=1:1", timeout)
	for r, err := range errs {
		t.Logf("rank %d: %v", r, err)
		var oe *collective.OpError
		if err == nil || !errors.As(err, &oe) || oe.Op != "allreduce" || oe.Seq != 1 {
			t.Errorf("rank %d: want an OpError of allreduce #1, got %v", r, err)
		}
	}
	if !errors.Is(errs[1], collective.ErrTimeout) {
		t.Errorf("the hung rank's error is not a timeout: %v", errs[1])
	}
	// A bound that holds on a machine 10 times slower than usual: what it
	// catches is a hang, not a slow abort.
	if took > timeout+time.Minute {
		t.Errorf("took %v with a %v deadline", took, timeout)
	}
}

// TestInitTimeout: a rank that never joins leaves the others' non-blocking
// initialisation in progress until their deadline, when they abort it and
// say so, instead of waiting for ever.
func TestInitTimeout(t *testing.T) {
	if standin == "" {
		t.Skip("needs the stand-in")
	}
	const n = 3
	trs := transport.NewMemWorld(n, transport.MemOptions{})
	errs := make([]error, n-1)
	start := time.Now()
	var wg sync.WaitGroup
	for r := range n - 1 { // rank 2 never comes
		wg.Go(func() {
			c, err := collective.New(t.Context(), Name, collective.Config{Rank: r, Size: n, Transport: trs[r], Timeout: time.Second})
			if err == nil {
				c.Close()
			}
			errs[r] = err
		})
	}
	wg.Wait()
	for r, err := range errs {
		t.Logf("rank %d: %v", r, err)
		if err == nil || !errors.Is(err, collective.ErrTimeout) || !strings.Contains(err.Error(), "communicator initialisation") {
			t.Errorf("rank %d: want a timeout of the communicator's initialisation, got %v", r, err)
		}
	}
	if took := time.Since(start); took > time.Minute { // a hang, not a slow machine
		t.Errorf("took %v with a 1s deadline", took)
	}
}

// TestCloseDuringOperation closes every rank's communicator while an
// asynchronous allreduce that one rank never finishes is in flight: Close
// waits for the operation to end at its deadline, never destroying the
// NCCL communicator under it, and the operation fails.
func TestCloseDuringOperation(t *testing.T) {
	if standin == "" {
		t.Skip("failures are injected only into the stand-in")
	}
	t.Setenv("DISTBENCH_STANDIN_HANG", "1:0")
	const n = 2
	comms := newWorld(t, n, time.Second)
	works := make([]collective.Work, n)
	for r, c := range comms {
		works[r] = c.IAllReduce(context.Background(), collective.NewTensor(collective.Int64, 100), collective.Sum)
	}
	time.Sleep(50 * time.Millisecond) // let them start
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range comms {
		wg.Go(func() { c.Close() })
	}
	wg.Wait()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close took %v with a 1s deadline", took)
	}
	for r, w := range works {
		if err := w.Wait(context.Background()); err == nil {
			t.Errorf("rank %d: the allreduce under Close succeeded", r)
		} else {
			t.Logf("rank %d: %v", r, err)
		}
	}
}
