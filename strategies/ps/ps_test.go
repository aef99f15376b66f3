package ps_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/internal/rendezvous"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/strategies/ps"
)

// newMemStore is the rendezvous store the in-process worlds of these tests share.
func newMemStore() *rendezvous.MemStore { return rendezvous.NewMemStore() }

// The job's identity and secret, which every worker and server of a test
// world is given, as a launcher gives them.
const testJob = "ps-test"

var testToken = []byte("ps-test-token")

// testOptions cut tensors into small pieces over every server and stream
// them in small chunks, so that modest counts exercise sharding, chunking
// and pipelining.
func testOptions(extra map[string]string) map[string]string {
	o := map[string]string{"chunk": "4KiB", "partition": "64B"}
	maps.Copy(o, extra)
	return o
}

// colocatedWorld builds n workers, each with its server in-process, over
// the in-memory transport (send and receive) and gRPC on loopback.
func colocatedWorld(t testing.TB, n int, opts map[string]string, timeout time.Duration) []collective.Comm {
	t.Helper()
	mem := transport.NewMemWorld(n, transport.MemOptions{MaxDelay: 20_000, Seed: 11 * uint64(n)})
	trs := make([]driver.Transport, n)
	for r := range trs {
		trs[r] = mem[r]
	}
	return colocatedWorldOver(t, newMemStore(), trs, opts, timeout)
}

// colocatedWorldOver is colocatedWorld over the given transports and store.
func colocatedWorldOver(t testing.TB, store driver.Store, trs []driver.Transport, opts map[string]string, timeout time.Duration) []collective.Comm {
	t.Helper()
	n := len(trs)
	comms := make([]collective.Comm, n)
	for r := range n {
		c, err := collective.New(context.Background(), ps.Name, collective.Config{
			Rank: r, Size: n, Transport: trs[r], Store: store, Options: opts, Timeout: timeout,
			JobID: testJob, Token: testToken,
		})
		if err != nil {
			t.Fatal(err)
		}
		comms[r] = c
	}
	return comms
}

// dedicated is a world of n workers and k dedicated servers, whose Serve
// runs in goroutines.
type dedicated struct {
	comms   []collective.Comm
	store   *rendezvous.MemStore
	cancels []context.CancelFunc
	mu      sync.Mutex
	killed  bool
}

// kill stops server i at once, as if its process died.
func (d *dedicated) kill(i int) {
	d.mu.Lock()
	d.killed = true
	d.mu.Unlock()
	d.cancels[i]()
}

// addr is server i's published host:port.
func (d *dedicated) addr(t testing.TB, i int) string {
	v, err := d.store.Get(t.Context(), fmt.Sprintf("ps/server/%d", i))
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

func dedicatedWorld(t testing.TB, n int, opts map[string]string, timeout time.Duration) *dedicated {
	t.Helper()
	return dedicatedWorldOn(t, n, nil, opts, timeout)
}

// dedicatedWorldOn is dedicatedWorld with rank r of the mesh on host
// hostOf(r) (workers 0..n-1, then the servers); nil for no hosts.
func dedicatedWorldOn(t testing.TB, n int, hostOf func(r int) string, opts map[string]string, timeout time.Duration) *dedicated {
	t.Helper()
	opts = maps.Clone(opts)
	if opts == nil {
		opts = map[string]string{}
	}
	opts["placement"] = "dedicated"
	s, err := collective.Lookup(ps.Name)
	if err != nil {
		t.Fatal(err)
	}
	servers := s.(driver.Servers)
	k, err := servers.ServerProcesses(opts, n)
	if err != nil {
		t.Fatal(err)
	}
	d := &dedicated{store: newMemStore(), cancels: make([]context.CancelFunc, k)}
	errs := make(chan error, k)
	// One mesh of the workers and the servers after them, as a launcher
	// builds it.
	var hosts []string
	if hostOf != nil {
		hosts = make([]string, n+k)
		for r := range hosts {
			hosts[r] = hostOf(r)
		}
	}
	trs := transport.NewMemWorld(n+k, transport.MemOptions{MaxDelay: 20_000, Seed: 13 * uint64(n), Hosts: hosts})
	for i := range k {
		ctx, cancel := context.WithCancel(context.Background())
		d.cancels[i] = cancel
		go func() {
			errs <- servers.Serve(ctx, driver.ServerConfig{
				Index: i, Count: k, Workers: n, Store: d.store, Transport: trs[n+i], Timeout: timeout, Options: opts,
				JobID: testJob, Token: testToken,
			})
		}()
	}
	t.Cleanup(func() {
		// Once every worker has closed, every server returns by itself.
		timer := time.NewTimer(30 * time.Second)
		defer timer.Stop()
		defer func() {
			for _, c := range d.cancels {
				c()
			}
		}()
		for range k {
			select {
			case err := <-errs:
				d.mu.Lock()
				killed := d.killed
				d.mu.Unlock()
				if err != nil && !killed {
					t.Errorf("Serve: %v", err)
				}
			case <-timer.C:
				t.Errorf("servers still running 30s after the workers closed")
				return
			}
		}
	})
	d.comms = make([]collective.Comm, n)
	for r := range n {
		c, err := collective.New(context.Background(), ps.Name, collective.Config{
			Rank: r, Size: n, Transport: trs[r], Store: d.store, Options: opts, Timeout: timeout,
			JobID: testJob, Token: testToken,
		})
		if err != nil {
			t.Fatal(err)
		}
		d.comms[r] = c
	}
	return d
}

func closeAll(comms []collective.Comm) {
	for _, c := range comms {
		c.Close()
	}
}

func TestConformanceColocated(t *testing.T) {
	// Chunks of 32 KiB keep the suite's million-element tensors to dozens
	// of messages; the other tests use 4 KiB to chunk small ones. Under
	// -race the suite runs every operation at every world size, but fewer
	// counts and dtypes: its own checks would take most of ten minutes.
	collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
		return colocatedWorld(t, n, testOptions(map[string]string{"chunk": "32KiB"}), 2*time.Minute)
	}, collectivetest.Options{Short: raceDetector})
}

func TestConformanceColocatedFewerServers(t *testing.T) {
	// k < np: workers 0 and 1 serve, the other three only push and pull.
	collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
		return colocatedWorld(t, n, testOptions(map[string]string{"servers": strconv.Itoa(min(n, 2))}), 2*time.Minute)
	}, collectivetest.Options{WorldSizes: []int{5}, Short: true})
}

// The gRPC transport (transport=grpc) through the same suite, colocated
// and dedicated.
func TestConformanceGRPC(t *testing.T) {
	grpc := func(extra map[string]string) map[string]string {
		return testOptions(maps.Collect(func(yield func(string, string) bool) {
			yield("transport", "grpc")
			for k, v := range extra {
				yield(k, v)
			}
		}))
	}
	t.Run("colocated", func(t *testing.T) {
		collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
			return colocatedWorld(t, n, grpc(map[string]string{"chunk": "32KiB"}), 2*time.Minute)
		}, collectivetest.Options{WorldSizes: []int{1, 2, 5}, Short: true})
	})
	t.Run("dedicated", func(t *testing.T) {
		collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
			return dedicatedWorld(t, n, grpc(map[string]string{"servers": "3"}), 2*time.Minute).comms
		}, collectivetest.Options{WorldSizes: []int{2, 4}, Short: true})
	})
}

func TestConformanceDedicated(t *testing.T) {
	collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
		return dedicatedWorld(t, n, testOptions(nil), 2*time.Minute).comms
	}, collectivetest.Options{WorldSizes: []int{1, 2, 5}, Short: true})
}

func TestConformanceDedicatedThreeServers(t *testing.T) {
	// k ≠ np, and the default chunk and partition.
	collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
		return dedicatedWorld(t, n, map[string]string{"servers": "3"}, 2*time.Minute).comms
	}, collectivetest.Options{WorldSizes: []int{2, 4}, Short: true})
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		ok   bool
	}{
		{nil, true},
		{map[string]string{"servers": "1", "placement": "colocated", "staleness": "2", "chunk": "2MiB", "partition": "1KiB", "host": "127.0.0.1"}, true},
		{map[string]string{"servers": "0"}, false},
		{map[string]string{"servers": "many"}, false},
		{map[string]string{"placement": "remote"}, false},
		{map[string]string{"staleness": "-1"}, false},
		{map[string]string{"chunk": "8"}, false},
		{map[string]string{"chunk": "1GiB"}, false},
		{map[string]string{"partition": "0"}, false},
		{map[string]string{"host": "not a host"}, false},
		{map[string]string{"peer-timeout": "45s"}, true},
		{map[string]string{"peer-timeout": "5s"}, false}, // leaves a starved peer too little time
		{map[string]string{"peer-timeout": "2h"}, false},
		{map[string]string{"peer-timeout": "soon"}, false},
		{map[string]string{"algo": "tree"}, false},
		{map[string]string{"transport": "grpc"}, true},
		{map[string]string{"transport": "mesh", "placement": "dedicated"}, false}, // no mesh with its servers
		{map[string]string{"transport": "tcp"}, false},
	} {
		c, err := collective.New(t.Context(), ps.Name, collective.Config{Rank: 0, Size: 1, Options: tc.opts})
		if (err == nil) != tc.ok {
			t.Errorf("options %v: err = %v, want ok=%v", tc.opts, err, tc.ok)
		}
		if c != nil {
			c.Close()
		}
	}
	// Colocated servers cannot outnumber the workers; two workers over
	// gRPC need a store for the servers' addresses; dedicated servers over
	// the mesh must be ranks of it.
	trs := transport.NewMemWorld(2, transport.MemOptions{})
	for _, cfg := range []collective.Config{
		{Rank: 0, Size: 2, Transport: trs[0], Store: newMemStore(), Options: map[string]string{"servers": "3"}},
		{Rank: 0, Size: 2, Transport: trs[0], Options: map[string]string{"transport": "grpc"}},
		{Rank: 0, Size: 2, Transport: trs[0], Options: map[string]string{"placement": "dedicated"}},
	} {
		if c, err := collective.New(t.Context(), ps.Name, cfg); err == nil {
			c.Close()
			t.Errorf("config %+v accepted", cfg.Options)
		}
	}
}

func TestServerProcesses(t *testing.T) {
	s, _ := collective.Lookup(ps.Name)
	servers := s.(driver.Servers)
	for _, tc := range []struct {
		opts map[string]string
		want int
	}{
		{nil, 0},
		{map[string]string{"placement": "dedicated"}, 5},
		{map[string]string{"placement": "dedicated", "servers": "2"}, 2},
	} {
		got, err := servers.ServerProcesses(tc.opts, 5)
		if err != nil || got != tc.want {
			t.Errorf("ServerProcesses(%v, 5) = %d, %v; want %d", tc.opts, got, err, tc.want)
		}
	}
}

func TestServeRefusesBadConfig(t *testing.T) {
	s, _ := collective.Lookup(ps.Name)
	servers := s.(driver.Servers)
	store := newMemStore()
	ded := map[string]string{"transport": "grpc", "placement": "dedicated"}
	tok := testToken
	for name, cfg := range map[string]driver.ServerConfig{
		"colocated":        {Index: 0, Count: 2, Workers: 2, Store: store, Token: tok},
		"count mismatch":   {Index: 0, Count: 3, Workers: 2, Store: store, Options: ded, Token: tok},
		"index too large":  {Index: 2, Count: 2, Workers: 2, Store: store, Options: ded, Token: tok},
		"no store":         {Index: 0, Count: 2, Workers: 2, Options: ded, Token: tok},
		"no workers":       {Index: 0, Count: 0, Workers: 0, Store: store, Options: ded, Token: tok},
		"unknown option":   {Index: 0, Count: 2, Workers: 2, Store: store, Options: map[string]string{"transport": "grpc", "placement": "dedicated", "x": "1"}, Token: tok},
		"unusable address": {Index: 0, Count: 2, Workers: 2, Store: store, Options: ded, ListenHost: "192.0.2.1", Token: tok},
		"no token":         {Index: 0, Count: 2, Workers: 2, Store: store, Options: ded},
		"mesh, no mesh":    {Index: 0, Count: 2, Workers: 2, Store: store, Options: map[string]string{"placement": "dedicated"}, Token: tok},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err := servers.Serve(ctx, cfg)
		cancel()
		if err == nil {
			t.Errorf("%s: Serve returned nil", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// TestHelloRefusesAnotherJob points workers at a server of a job of
// another size (as a stale address in a reused store would): the first
// operation fails, naming the server and the disagreement, which the
// handshake finds before the hello is sent.
func TestHelloRefusesAnotherJob(t *testing.T) {
	s, _ := collective.Lookup(ps.Name)
	store := newMemStore()
	opts := map[string]string{"transport": "grpc", "placement": "dedicated", "servers": "1"}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go s.(driver.Servers).Serve(ctx, driver.ServerConfig{Index: 0, Count: 1, Workers: 3, Store: store, Options: opts, JobID: testJob, Token: testToken})
	c, err := collective.New(t.Context(), ps.Name, collective.Config{Rank: 0, Size: 1, Store: store, Options: opts, Timeout: 10 * time.Second, JobID: testJob, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.(collective.ParamServer).InitParams(t.Context(), "w", []float32{1}, collective.SGD{})
	var se *ps.ServerError
	if !errors.As(err, &se) || se.Index != 0 || se.Op != "hello" || !strings.Contains(err.Error(), "world size mismatch") ||
		!strings.Contains(err.Error(), "job of another size") {
		t.Fatalf("got %v, want a hello error from server 0 about a job of another size", err)
	}
	t.Log(err)
}

// TestServeEndsWhenWorkersClose checks that a dedicated server returns nil
// once every worker has closed.
func TestServeEndsWhenWorkersClose(t *testing.T) {
	comms := dedicatedWorld(t, 2, map[string]string{"servers": "1"}, time.Minute).comms
	var wg sync.WaitGroup
	for _, c := range comms {
		wg.Go(func() {
			if err := c.Barrier(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	closeAll(comms) // the cleanup then checks that Serve returned nil
}

func TestMismatchNamesRanks(t *testing.T) {
	// Workers that disagree about a collective's shape fail, all of them,
	// with an error that says how.
	comms := colocatedWorld(t, 2, nil, time.Minute)
	defer closeAll(comms)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			errs[r] = c.AllReduce(t.Context(), collective.NewTensor(collective.Float32, 1000+r), collective.Sum)
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err == nil {
			t.Fatalf("rank %d: mismatched allreduce succeeded", r)
		}
		t.Logf("rank %d: %v", r, err)
	}
}

func ExampleParamServer() {
	// One worker with its colocated server: the smallest training job.
	c, err := collective.New(context.Background(), ps.Name, collective.Config{Rank: 0, Size: 1})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	p := c.(collective.ParamServer)
	ctx := context.Background()
	w := []float32{1, 2}
	if err := p.InitParams(ctx, "w", w, collective.SGD{}); err != nil {
		panic(err)
	}
	for step := range 3 {
		grad := []float32{w[0], w[1]} // the gradient of |w|²/2
		if err := p.PushGrad(ctx, "w", grad, step, 0.5); err != nil {
			panic(err)
		}
		if err := p.PullParams(ctx, "w", w, step); err != nil {
			panic(err)
		}
		fmt.Println(step, w)
	}
	// Output:
	// 0 [0.5 1]
	// 1 [0.25 0.5]
	// 2 [0.125 0.25]
}
