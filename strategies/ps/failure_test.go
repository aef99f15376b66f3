package ps_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/strategies/ps"
)

// TestServerDeathNamesServer kills a dedicated server while workers are in
// the middle of an allreduce: every worker must fail well within the RPC
// deadline, with an error that names the dead server by index and
// host:port, whether it learns of the death from its own connection or
// from another server relaying a worker's abort.
func TestServerDeathNamesServer(t *testing.T) {
	const (
		n       = 3
		timeout = time.Minute
		prompt  = 10 * time.Second
	)
	// Over gRPC: over the mesh, see TestMeshServerFailureIsNamed.
	d := dedicatedWorld(t, n, map[string]string{"transport": "grpc", "servers": "2", "chunk": "64KiB"}, timeout)
	defer closeAll(d.comms)
	dead := d.addr(t, 1)

	// Workers 0 and 1 start an allreduce that cannot complete before
	// worker 2 joins it: they have pushed and wait on their pulls.
	count := 1 << 20
	errs := make([]error, n)
	took := make([]time.Duration, n)
	var killedAt time.Time
	var mu sync.Mutex
	var wg sync.WaitGroup
	run := func(r int) {
		defer wg.Done()
		tensor := collective.NewTensor(collective.Float32, count)
		err := d.comms[r].AllReduce(context.Background(), tensor, collective.Sum)
		mu.Lock()
		errs[r], took[r] = err, time.Since(killedAt)
		mu.Unlock()
	}
	wg.Add(2)
	go run(0)
	go run(1)
	time.Sleep(300 * time.Millisecond)

	mu.Lock()
	killedAt = time.Now()
	mu.Unlock()
	d.kill(1)

	// Worker 2 arrives after the death.
	time.Sleep(100 * time.Millisecond)
	wg.Add(1)
	go run(2)
	wg.Wait()

	for r, err := range errs {
		if err == nil {
			t.Errorf("rank %d: allreduce succeeded with server 1 dead", r)
			continue
		}
		t.Logf("rank %d after %v: %v", r, took[r].Round(time.Millisecond), err)
		if want := fmt.Sprintf("server 1 (%s)", dead); !strings.Contains(err.Error(), want) {
			t.Errorf("rank %d: error does not name %q: %v", r, want, err)
		}
		var se *ps.ServerError
		if !errors.As(err, &se) {
			t.Errorf("rank %d: no *ps.ServerError in %v", r, err)
		}
		if took[r] > prompt {
			t.Errorf("rank %d failed %v after the server died, want under %v (deadline %v)", r, took[r], prompt, timeout)
		}
	}
	// The communicator stays failed, and says so at once.
	start := time.Now()
	if err := d.comms[0].Barrier(context.Background()); err == nil || time.Since(start) > prompt {
		t.Errorf("barrier after the failure: %v after %v", err, time.Since(start))
	}
}

// slowConns shapes the servers' connections so that every write waits for
// delay first, once it is set: requests and answers that arrive late, as on
// a loaded machine, deterministically.
type slowConns struct {
	driver.Transport
	delay *atomic.Int64 // nanoseconds
}

func (s slowConns) ShapeConn(c net.Conn) net.Conn { return &slowConn{c, s.delay} }

// Send delays the mesh's messages as ShapeConn does the connections'.
func (s slowConns) Send(ctx context.Context, peer int, tag uint64, data []byte) error {
	if d := s.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	return s.Transport.Send(ctx, peer, tag, data)
}

type slowConn struct {
	net.Conn
	delay *atomic.Int64
}

func (c *slowConn) Write(b []byte) (int, error) {
	if d := c.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	return c.Conn.Write(b)
}

// TestDeadlineNamesWhatIsMissing has a worker miss a collective: the others
// fail at their deadline, saying what they waited for, who had pushed and
// who had not, and where that one is. When the server's account of the
// wait cannot reach a worker before the worker's own deadline (requests
// that reached the server late), the worker asks the server for it.
func TestDeadlineNamesWhatIsMissing(t *testing.T) {
	// A timeout that the connections and a first allreduce meet at 10x
	// slowdown; the late case delays every write by more than the margin
	// by which a server answers before the deadline (timeout/20), and by
	// less than half of what the worker then gives the server to answer
	// (1 s).
	const timeout = 2 * time.Second
	for _, tc := range []struct {
		name      string
		transport string
		delay     time.Duration // of every gRPC write and mesh message
		where     string        // how rank 2 is named
	}{
		{"grpc/prompt", "grpc", 0, "rank 2 (127.0.0.1:"},
		{"grpc/late requests", "grpc", 200 * time.Millisecond, "rank 2 (127.0.0.1:"},
		{"mesh/prompt", "mesh", 0, "rank 2"}, // the in-memory mesh has no addresses
		{"mesh/late", "mesh", 200 * time.Millisecond, "rank 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 3
			var delay atomic.Int64
			mem := transport.NewMemWorld(n, transport.MemOptions{})
			trs := make([]driver.Transport, n)
			for r := range trs {
				trs[r] = slowConns{mem[r], &delay}
			}
			comms := colocatedWorldOver(t, newMemStore(), trs, map[string]string{"transport": tc.transport}, timeout)
			defer closeAll(comms)
			// Every worker connects, says hello and completes a first
			// allreduce while nothing is slow.
			var wg sync.WaitGroup
			for r := range n {
				wg.Go(func() {
					if err := comms[r].AllReduce(t.Context(), collective.NewTensor(collective.Int32, 10), collective.Sum); err != nil {
						t.Errorf("rank %d: first allreduce: %v", r, err)
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			delay.Store(int64(tc.delay))
			errs := make([]error, 2)
			for r := range 2 {
				wg.Go(func() {
					errs[r] = comms[r].AllReduce(context.Background(), collective.NewTensor(collective.Int32, 10), collective.Sum)
				})
			}
			wg.Wait()
			for r, err := range errs {
				if err == nil {
					t.Fatalf("rank %d: allreduce without rank 2 succeeded", r)
				}
				t.Logf("rank %d: %v", r, err)
				if !errors.Is(err, collective.ErrTimeout) && !strings.Contains(err.Error(), "aborted") {
					t.Errorf("rank %d: neither a timeout nor another rank's abort: %v", r, err)
				}
				if !strings.Contains(err.Error(), "pushes began from ranks [0 1]") || !strings.Contains(err.Error(), "none yet from "+tc.where) {
					t.Errorf("rank %d: error does not say who pushed and who did not: %v", r, err)
				}
			}
		})
	}
}
