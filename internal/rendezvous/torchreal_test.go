package rendezvous

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// torchServer is python3 hosting torch.distributed.TCPStore(is_master=True),
// as torchrun's agent does. It prints its port, sets "torch/own" itself,
// and, once its stdin closes, prints what Go set at "distbench/from-go".
const torchServer = `
import sys, datetime
import torch, torch.distributed as dist
s = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=30), wait_for_workers=False)
print(torch.__version__, s.port, flush=True)
s.set("torch/own", "from python")
sys.stdin.read()
print(s.get("distbench/from-go").decode(), flush=True)
`

// findTorch returns a python3 that imports torch, or skips saying why.
func findTorch(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import torch.distributed").Run() == nil {
			return path
		}
	}
	t.Skip("no python3 with torch.distributed (Debian: apt-get install python3-torch); the real TCPStore test is skipped")
	return ""
}

// TestTorchStoreRealTCPStore drives a real torch TCPStore with the Go
// client: every call, its own key prefix, a wait released by another
// connection, and torch reading what Go set.
func TestTorchStoreRealTCPStore(t *testing.T) {
	py := findTorch(t)
	cmd := exec.Command(py, "-c", torchServer)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	out := bufio.NewScanner(stdout)
	if !out.Scan() {
		t.Fatalf("python printed no port; stderr: %s", stderr.String())
	}
	f := strings.Fields(out.Text())
	if len(f) != 2 {
		t.Fatalf("python printed %q", out.Text())
	}
	version, port := f[0], f[1]
	if _, err := strconv.Atoi(port); err != nil {
		t.Fatalf("python printed %q", out.Text())
	}
	t.Logf("torch %s TCPStore on port %s", version, port)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := DialTorch(ctx, "127.0.0.1:"+port, TorchOptions{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if want := version[0] - '0'; st.Dialect() != int(want) {
		t.Errorf("dialect %d, torch is %s", st.Dialect(), version)
	}
	// Torch's own keys are out of reach of the prefixed client; one with
	// torch's own prefix reads them.
	raw, err := DialTorch(ctx, "127.0.0.1:"+port, TorchOptions{Prefix: "/", Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if v, err := raw.Get(ctx, "torch/own"); err != nil || string(v) != "from python" {
		t.Fatalf("raw get torch/own = %q, %v", v, err)
	}
	if ok, err := st.Check(ctx, "torch/own"); err != nil || ok {
		t.Fatalf("prefixed check torch/own = %v, %v; want false", ok, err)
	}

	if err := st.Set(ctx, "from-go", []byte("hello torch")); err != nil {
		t.Fatal(err)
	}
	if v, err := st.Get(ctx, "from-go"); err != nil || string(v) != "hello torch" {
		t.Fatalf("get = %q, %v", v, err)
	}
	for i, want := range []int64{5, 2, 12} {
		n, err := st.Add(ctx, "counter", []int64{5, -3, 10}[i])
		if err != nil || n != want {
			t.Fatalf("add #%d = %d, %v; want %d", i, n, err, want)
		}
	}
	if v, err := st.CompareSet(ctx, "cas", nil, []byte("first")); err != nil || string(v) != "first" {
		t.Fatalf("compare-set on an absent key = %q, %v", v, err)
	}
	if v, err := st.CompareSet(ctx, "cas", []byte("wrong"), []byte("second")); err != nil || string(v) != "first" {
		t.Fatalf("compare-set with a wrong expectation = %q, %v", v, err)
	}
	if v, err := st.CompareSet(ctx, "cas", []byte("first"), []byte("second")); err != nil || string(v) != "second" {
		t.Fatalf("compare-set = %q, %v", v, err)
	}
	if n, err := st.NumKeys(ctx); err != nil || n < 4 {
		t.Fatalf("num keys = %d, %v", n, err)
	}

	// A wait on one connection is released by a set on another.
	done := make(chan error, 1)
	go func() { done <- st.Wait(ctx, "late-a", "late-b") }()
	time.Sleep(100 * time.Millisecond)
	st.Set(ctx, "late-a", []byte("a"))
	st.Set(ctx, "late-b", []byte("b"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A wait that times out costs its connection and nothing else.
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	err = st.Wait(short, "never")
	cancelShort()
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("wait for a key never set: %v", err)
	}
	if v, err := st.Get(ctx, "from-go"); err != nil || string(v) != "hello torch" {
		t.Fatalf("get after a timed-out wait = %q, %v", v, err)
	}

	stdin.Close()
	if !out.Scan() || out.Text() != "hello torch" {
		t.Fatalf("torch read %q at distbench/from-go; stderr: %s", out.Text(), stderr.String())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("python: %v; stderr: %s", err, stderr.String())
	}
}

// TestJoinTorchAgentStoreAcrossProcesses is torchrun's setting: the agent
// (here python3 with a real torch TCPStore) hosts the store at
// MASTER_ADDR:MASTER_PORT with TORCHELASTIC_USE_AGENT_STORE=True, and each
// rank, a process of its own, joins through env://.
func TestJoinTorchAgentStoreAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	py := findTorch(t)
	cmd := exec.Command(py, "-c", `
import sys, datetime, torch.distributed as dist
s = dist.TCPStore("127.0.0.1", 0, None, True, datetime.timedelta(seconds=60), wait_for_workers=False)
print(s.port, flush=True)
sys.stdin.read()
`)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	out := bufio.NewScanner(stdout)
	if !out.Scan() {
		t.Fatal("python printed no port")
	}
	port := strings.TrimSpace(out.Text())
	const n = 3
	var envs []map[string]string
	for r := range n {
		envs = append(envs, map[string]string{
			"HELPER_URL": "env://", "HELPER_JOB": "torchrun-test",
			"RANK": strconv.Itoa(r), "WORLD_SIZE": strconv.Itoa(n), "LOCAL_RANK": strconv.Itoa(r),
			"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "TORCHELASTIC_USE_AGENT_STORE": "True",
		})
	}
	procs := runRanks(t, envs)
	for r, p := range procs {
		if p.err != nil {
			t.Fatalf("rank %d: %v\n%s", r, p.err, p.stderr.String())
		}
		want := fmt.Sprintf("rank=%d size=%d local=%d sum=%d ", r, n, r, n*(n+1)/2)
		if got := p.stdout.String(); !strings.HasPrefix(got, want) {
			t.Fatalf("rank %d printed %q, want it to start %q", r, got, want)
		}
	}
}
