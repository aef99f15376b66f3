package ps_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/strategies/ps"
)

// A test binary started with roleEnv set is not a test run but one process
// of a job: a dedicated server, or a worker that runs checked allreduces
// until it fails. The tests below start them, then stop one with SIGSTOP
// (it never answers again) or stop and continue it (it answers late).
const roleEnv = "DISTBENCH_PS_TEST_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		if err := runRole(role); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// job describes one job to every process of it.
type job struct {
	store   string // the rendezvous store's address
	workers int
	opts    map[string]string
	timeout time.Duration
}

func (j job) env(role string, index int) []string {
	var opts []string
	for k, v := range j.opts {
		opts = append(opts, k+"="+v)
	}
	return append(os.Environ(), roleEnv+"="+role, "PS_TEST_INDEX="+strconv.Itoa(index),
		"PS_TEST_STORE="+j.store, "PS_TEST_WORKERS="+strconv.Itoa(j.workers),
		"PS_TEST_OPTS="+strings.Join(opts, ","), "PS_TEST_TIMEOUT="+j.timeout.String())
}

func jobFromEnv() (job, int, error) {
	j := job{store: os.Getenv("PS_TEST_STORE"), opts: map[string]string{}}
	index, err1 := strconv.Atoi(os.Getenv("PS_TEST_INDEX"))
	n, err2 := strconv.Atoi(os.Getenv("PS_TEST_WORKERS"))
	timeout, err3 := time.ParseDuration(os.Getenv("PS_TEST_TIMEOUT"))
	for _, kv := range strings.Split(os.Getenv("PS_TEST_OPTS"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			j.opts[k] = v
		}
	}
	j.workers, j.timeout = n, timeout
	return j, index, errorsJoin(err1, err2, err3)
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func runRole(role string) error {
	j, index, err := jobFromEnv()
	if err != nil {
		return err
	}
	ctx := context.Background()
	store, err := rendezvous.Dial(ctx, j.store, rendezvous.ClientOptions{JobID: testJob, Timeout: time.Minute})
	if err != nil {
		return err
	}
	switch role {
	case "server":
		s, _ := collective.Lookup(ps.Name)
		k, err := s.(driver.Servers).ServerProcesses(j.opts, j.workers)
		if err != nil {
			return err
		}
		tr, err := serverMesh(ctx, j, store, index, k)
		if err != nil {
			return err
		}
		return s.(driver.Servers).Serve(ctx, driver.ServerConfig{
			Index: index, Count: k, Workers: j.workers, Store: store, Transport: tr, Timeout: j.timeout, Options: j.opts,
			JobID: testJob, Token: testToken, Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) },
		})
	case "worker":
		c, err := newTCPWorker(ctx, j, store, index)
		if err != nil {
			return err
		}
		for i := 0; ; i++ {
			if err := allReduceOnce(c, j.workers); err != nil {
				return fmt.Errorf("worker %d, allreduce %d: %w", index, i, err)
			}
		}
	}
	return fmt.Errorf("unknown role %q", role)
}

// newTCPWorker is worker rank of j, on the TCP mesh, as a launcher makes it.
func newTCPWorker(ctx context.Context, j job, store driver.Store, rank int) (collective.Comm, error) {
	tr, err := transport.NewTCP(ctx, transport.TCPOptions{
		Rank: rank, Size: j.workers + j.meshServers(), Store: store, JobID: testJob, Token: testToken,
		ConnectTimeout: time.Minute,
		// Over gRPC, collectives of ps do not use the mesh; over the
		// mesh, these tests look at deadlines and resets: the mesh's own
		// liveness stays out of what they look at.
		PeerTimeout: time.Hour,
	})
	if err != nil {
		return nil, err
	}
	return collective.New(ctx, ps.Name, collective.Config{
		Rank: rank, Size: j.workers, Transport: tr, Store: store, Timeout: j.timeout, Options: j.opts,
		JobID: testJob, Token: testToken,
	})
}

// meshServers is how many dedicated servers are ranks of the job's mesh:
// all of them over transport=mesh, none over gRPC.
func (j job) meshServers() int {
	if j.opts["transport"] == "grpc" || j.opts["placement"] != "dedicated" {
		return 0
	}
	s, _ := collective.Lookup(ps.Name)
	k, _ := s.(driver.Servers).ServerProcesses(j.opts, j.workers)
	return k
}

// serverMesh is dedicated server index's end of the job's mesh, as a
// launcher makes it, or nil over gRPC.
func serverMesh(ctx context.Context, j job, store driver.Store, index, k int) (driver.Transport, error) {
	if j.meshServers() == 0 {
		return nil, nil
	}
	return transport.NewTCP(ctx, transport.TCPOptions{
		Rank: j.workers + index, Size: j.workers + k, Store: store, JobID: testJob, Token: testToken,
		ConnectTimeout: time.Minute,
	})
}

// allReduceOnce runs one allreduce of a rank-dependent pattern and checks
// every element of the result.
func allReduceOnce(c collective.Comm, n int) error {
	const count = 3001
	x := collective.NewTensor(collective.Int32, count)
	v := x.Int32s()
	r := c.Rank()
	for i := range v {
		v[i] = int32(r*count + i)
	}
	if err := c.AllReduce(context.Background(), x, collective.Sum); err != nil {
		return err
	}
	for i, got := range v {
		if want := int32(n*i + count*n*(n-1)/2); got != want {
			return fmt.Errorf("element %d = %d, want %d", i, got, want)
		}
	}
	return nil
}

// process is a child process of a test job.
type process struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

func start(t *testing.T, j job, role string, index int) *process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: exec.Command(exe, "-test.run=^$")}
	p.cmd.Env = j.env(role, index)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		if t.Failed() {
			t.Logf("%s %d said:\n%s", role, index, p.out.String())
		}
	})
	return p
}

func (p *process) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// storeFor starts the job's rendezvous store, which every process dials.
func storeFor(t *testing.T) (addr string, client driver.Store) {
	t.Helper()
	srv, err := rendezvous.Listen("127.0.0.1:0", rendezvous.ServerOptions{JobID: testJob})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := rendezvous.Dial(t.Context(), srv.Addr(), rendezvous.ClientOptions{JobID: testJob, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv.Addr(), c
}

// outcome is how an in-process worker's loop of allreduces ended.
type outcome struct {
	err   error
	at    time.Time
	iters int
}

// loop runs checked allreduces on every comm until each has failed or, if
// warmed calls its finish, until a few more. Once every comm has completed
// warm of them, it runs warmed, in a goroutine of its own, and returns only
// once warmed has.
func loop(comms []collective.Comm, n, warm int, warmed func(finish func())) []outcome {
	out := make([]outcome, len(comms))
	var (
		ready  sync.WaitGroup
		wg     sync.WaitGroup
		latest atomic.Int64 // the highest iteration any comm has begun
		stopAt atomic.Int64 // 0, or the iteration none begins
	)
	// Every comm runs the same number: two past the latest begun, which
	// no comm can be more than one iteration ahead of.
	finish := func() { stopAt.Store(latest.Load() + 2) }
	ready.Add(len(comms))
	wg.Go(func() { ready.Wait(); warmed(finish) })
	for i, c := range comms {
		wg.Go(func() {
			it := 0
			defer func() {
				if it < warm {
					ready.Done()
				}
			}()
			for ; ; it++ {
				if it == warm {
					ready.Done()
				}
				if end := stopAt.Load(); end > 0 && int64(it) >= end {
					out[i] = outcome{nil, time.Now(), it}
					return
				}
				for l := latest.Load(); int64(it) > l && !latest.CompareAndSwap(l, int64(it)); l = latest.Load() {
				}
				if err := allReduceOnce(c, n); err != nil {
					out[i] = outcome{err, time.Now(), it}
					return
				}
			}
		})
	}
	wg.Wait()
	return out
}

// Liveness cases. The peer timeout of 20 s is the least the option takes;
// the operation timeout of 3 s is met at 10x slowdown by an allreduce that
// normally takes milliseconds.
var stopCases = []struct {
	name    string
	opts    map[string]string
	timeout time.Duration
	bound   time.Duration // within which every worker must name the stopped process
}{
	// No deadline comes first: the keepalive finds it, and a server
	// takes up to 2 s more to close the connection it gave up on.
	{"found by keepalive", map[string]string{"peer-timeout": "20s"}, 5 * time.Minute, 20*time.Second + 2*time.Second},
	// The operation's deadline comes first; a diagnosis names it.
	{"found at the deadline", nil, 3 * time.Second, 3*time.Second + time.Second},
}

// slack is what the bounds above allow for the detection to travel and be
// reported on a machine ten times slower than normal.
const slack = 15 * time.Second

// stopJob is the job of a stop case: dedicated placement, two servers.
func stopJob(addr string, n int, extra map[string]string, timeout time.Duration) job {
	opts := map[string]string{"transport": "grpc", "placement": "dedicated", "servers": "2"}
	maps.Copy(opts, extra)
	return job{store: addr, workers: n, opts: opts, timeout: timeout}
}

// TestStoppedServerIsNamed stops (SIGSTOP) a dedicated server's process
// while workers run allreduces through it: every worker fails within the
// documented bound with an error that names the server and its address.
func TestStoppedServerIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a peer timeout")
	}
	for _, tc := range stopCases {
		t.Run(tc.name, func(t *testing.T) {
			addr, store := storeFor(t)
			j := stopJob(addr, 2, tc.opts, tc.timeout)
			server1 := start(t, j, "server", 1)
			comms := inProcess(t, store, j, 1, -1)
			v, err := store.Get(t.Context(), "ps/server/1")
			if err != nil {
				t.Fatal(err)
			}
			stopped := fmt.Sprintf("server 1 (%s)", v)
			var at time.Time
			out := loop(comms, j.workers, 3, func(func()) { at = time.Now(); server1.signal(t, syscall.SIGSTOP) })
			for r, o := range out {
				if o.err == nil {
					t.Fatalf("rank %d: no failure with server 1 stopped", r)
				}
				took := o.at.Sub(at)
				t.Logf("rank %d after %v: %v", r, took.Round(time.Millisecond), o.err)
				if !strings.Contains(o.err.Error(), stopped) {
					t.Errorf("rank %d: error does not name %s", r, stopped)
				}
				if took > tc.bound+slack {
					t.Errorf("rank %d: failed %v after the stop, beyond the bound of %v", r, took, tc.bound)
				}
			}
			// Then each worker ends: Close says no goodbye to the server
			// its operation failed at, and waits 250ms for the others,
			// not the goodbyes' 5s, which the stopped server would hold
			// whole (the worker then ended 5-8s after its diagnosis).
			for r, c := range comms {
				if c == nil {
					continue
				}
				start := time.Now()
				c.Close()
				if took := time.Since(start); took >= 4*time.Second {
					t.Errorf("rank %d: Close took %v after the failure: it waited for the stopped server", r, took.Round(time.Millisecond))
				}
			}
		})
	}
}

// TestStoppedWorkerIsNamed stops (SIGSTOP) a worker's process, which hosts
// no server, while the others run allreduces with it: each of them fails
// within the documented bound, naming the stopped rank and its address.
func TestStoppedWorkerIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a peer timeout")
	}
	for _, tc := range stopCases {
		t.Run(tc.name, func(t *testing.T) {
			addr, store := storeFor(t)
			j := stopJob(addr, 3, tc.opts, tc.timeout)
			worker2 := start(t, j, "worker", 2)
			comms := inProcess(t, store, j, -1, 2)
			var at time.Time
			out := loop(comms, j.workers, 3, func(func()) { at = time.Now(); worker2.signal(t, syscall.SIGSTOP) })
			for r, o := range out {
				if o.err == nil {
					t.Fatalf("rank %d: no failure with rank 2 stopped", r)
				}
				took := o.at.Sub(at)
				t.Logf("rank %d after %v: %v", r, took.Round(time.Millisecond), o.err)
				if !strings.Contains(o.err.Error(), "rank 2 (127.0.0.1:") {
					t.Errorf("rank %d: error does not name rank 2 and its address", r)
				}
				if took > tc.bound+slack {
					t.Errorf("rank %d: failed %v after the stop, beyond the bound of %v", r, took, tc.bound)
				}
			}
		})
	}
}

// TestStarvedServerIsNotDeclaredDead stalls a dedicated server's process
// (SIGSTOP, then SIGCONT) for less than the peer timeout while workers run
// allreduces through it, as a starved process would be: it answers the
// keepalive late, not never, and every allreduce completes, correctly.
func TestStarvedServerIsNotDeclaredDead(t *testing.T) {
	if testing.Short() {
		t.Skip("stalls a server for seconds")
	}
	// Stalled for 20 s of the default peer timeout of 60 s: the keepalive
	// ping goes out 10 s after the server's last frame, and the server has
	// 40 s more to ack it once it runs again. (A keepalive that gave up 5 s
	// after its ping declared this server dead.)
	const stall = 20 * time.Second
	addr, store := storeFor(t)
	j := stopJob(addr, 2, nil, 5*time.Minute)
	server1 := start(t, j, "server", 1)
	comms := inProcess(t, store, j, 1, -1)
	out := loop(comms, j.workers, 3, func(finish func()) {
		server1.signal(t, syscall.SIGSTOP)
		time.Sleep(stall)
		server1.signal(t, syscall.SIGCONT)
		time.Sleep(2 * time.Second) // and more allreduces through it
		finish()
	})
	for r, o := range out {
		if o.err != nil {
			t.Errorf("rank %d: allreduce %d failed with a server that was stalled, not dead: %v", r, o.iters, o.err)
		}
	}
}

// inProcess starts the part of job j that runs in the test's process: every
// dedicated server but childServer and every worker but childWorker (-1:
// none is a child), all over the shared store and the TCP mesh. It returns
// the in-process workers' communicators.
func inProcess(t *testing.T, store driver.Store, j job, childServer, childWorker int) []collective.Comm {
	t.Helper()
	s, _ := collective.Lookup(ps.Name)
	servers := s.(driver.Servers)
	k, err := servers.ServerProcesses(j.opts, j.workers)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var served sync.WaitGroup
	t.Cleanup(func() { cancel(); served.Wait() })
	for i := range k {
		if i != childServer {
			served.Go(func() {
				tr, err := serverMesh(ctx, j, store, i, k)
				if err != nil {
					t.Errorf("server %d: %v", i, err)
					return
				}
				servers.Serve(ctx, driver.ServerConfig{
					Index: i, Count: k, Workers: j.workers, Store: store, Transport: tr, Timeout: j.timeout, Options: j.opts,
					JobID: testJob, Token: testToken,
				})
				if tr != nil {
					tr.Close()
				}
			})
		}
	}
	var (
		comms []collective.Comm
		mu    sync.Mutex
		made  sync.WaitGroup
	)
	for r := range j.workers {
		if r == childWorker {
			continue
		}
		made.Go(func() {
			c, err := newTCPWorker(ctx, j, store, r)
			if err != nil {
				t.Errorf("worker %d: %v", r, err)
				return
			}
			mu.Lock()
			comms = append(comms, c)
			mu.Unlock()
		})
	}
	made.Wait()
	if t.Failed() {
		t.FailNow()
	}
	slices.SortFunc(comms, func(a, b collective.Comm) int { return a.Rank() - b.Rank() })
	t.Cleanup(func() { closeAll(comms) })
	return comms
}

// TestMeshServerFailureIsNamed stops (SIGSTOP) or kills (SIGKILL) a
// dedicated server's process, a rank of the job's mesh, while workers run
// allreduces through it: every worker fails within the bound with an error
// that names the server, its mesh rank and its address.
func TestMeshServerFailureIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		bound time.Duration
	}{
		// The deadline comes first, and the server does not answer a why.
		{"stopped", syscall.SIGSTOP, 3*time.Second + time.Second},
		// Its connections reset at once.
		{"killed", syscall.SIGKILL, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, store := storeFor(t)
			j := job{store: addr, workers: 2, opts: map[string]string{"placement": "dedicated", "servers": "2"}, timeout: 3 * time.Second}
			server1 := start(t, j, "server", 1)
			comms := inProcess(t, store, j, 1, -1)
			v, err := store.Get(t.Context(), "transport/addr/3") // server 1 is the mesh's rank 2+1
			if err != nil {
				t.Fatal(err)
			}
			named := fmt.Sprintf("server 1 (rank 3, %s)", v)
			var at time.Time
			out := loop(comms, j.workers, 3, func(func()) { at = time.Now(); server1.signal(t, tc.sig) })
			for r, o := range out {
				if o.err == nil {
					t.Fatalf("rank %d: no failure with server 1 %s", r, tc.name)
				}
				took := o.at.Sub(at)
				t.Logf("rank %d after %v: %v", r, took.Round(time.Millisecond), o.err)
				if !strings.Contains(o.err.Error(), named) {
					t.Errorf("rank %d: error does not name %s", r, named)
				}
				if took > tc.bound+slack {
					t.Errorf("rank %d: failed %v after the %s, beyond the bound of %v", r, took, tc.name, tc.bound)
				}
			}
		})
	}
}
