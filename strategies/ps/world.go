package ps

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/core"
	"google.golang.org/grpc/codes"
)

// byeTimeout bounds Close's goodbyes; abortTimeout bounds telling the
// servers why an operation failed.
const (
	byeTimeout   = 5 * time.Second
	abortTimeout = 2 * time.Second
	// failedByeTimeout bounds the goodbyes once an operation has failed
	// at a server: part of the bound on how long after a server stops
	// every worker ends (docs/design/faults.md).
	failedByeTimeout = 250 * time.Millisecond
)

// world is one worker's view of the job's servers, shared by its groups.
type world struct {
	cfg   collective.Config
	o     options
	k     int
	conns []*serverConn
	local *server // the server this worker hosts (colocated), or nil
	// tr is the mesh the servers' data travels over (transport=mesh), nil
	// for gRPC. This world closes it once its server is done (Close).
	tr       driver.Transport
	finished chan struct{} // closed once close has finished everything

	ctx    context.Context // lives until Close; bounds background connects
	cancel context.CancelFunc

	mu   sync.Mutex
	made map[string]int // groups made per member list, for group identities

	closeOnce sync.Once
	failed    atomic.Bool // an operation failed at a server
}

func newWorld(ctx context.Context, cfg collective.Config, o options) (*world, error) {
	k := o.servers
	if k == 0 {
		k = cfg.Size
	}
	if o.placement == colocated && k > cfg.Size {
		return nil, fmt.Errorf("ps: servers=%d with placement=colocated needs at least %d workers, not %d (or use placement=dedicated)", k, k, cfg.Size)
	}
	w := &world{cfg: cfg, o: o, k: k, made: map[string]int{}, finished: make(chan struct{})}
	if o.transport == meshTransport {
		return w, w.joinMesh()
	}
	remote := o.placement == dedicated || cfg.Size > 1
	if remote && cfg.Store == nil {
		return nil, fmt.Errorf("ps: placement=%s with %d workers needs a rendezvous store (Config.Store) for the servers' addresses", o.placement, cfg.Size)
	}
	mine := handshakeWorld(cfg.JobID, cfg.Token, cfg.Rank, cfg.Size, k)
	if remote {
		if err := mine.Validate(); err != nil {
			return nil, fmt.Errorf("ps: placement=%s with %d workers: its servers refuse any client that cannot prove it holds the job token (Config.Token): %w", o.placement, cfg.Size, err)
		}
	}
	if o.placement == colocated && cfg.Rank < k {
		w.local = newServer(cfg.Rank, cfg.Size, handshakeWorld(cfg.JobID, cfg.Token, cfg.Size+cfg.Rank, cfg.Size, k), o.peerTimeout, cfg.Logf)
		w.local.shape = shaper(cfg.Transport)
		if cfg.Size > 1 {
			if err := w.local.listen(o.host); err != nil {
				return nil, err
			}
			if err := cfg.Store.Set(ctx, serverKey(cfg.Rank), []byte(w.local.addr())); err != nil {
				w.local.stop()
				return nil, fmt.Errorf("ps: server %d (%s): publishing its address: %w", cfg.Rank, w.local.addr(), err)
			}
		}
	}
	w.ctx, w.cancel = context.WithTimeout(context.Background(), cfg.OpTimeout())
	w.conns = make([]*serverConn, k)
	for i := range k {
		if w.local != nil && i == cfg.Rank {
			w.conns[i] = newLocalConn(w.local, cfg.Rank, cfg.Size)
			continue
		}
		c := newRemoteConn(i, cfg.Rank, cfg.Size)
		c.shape = shaper(cfg.Transport)
		c.creds = clientCreds(mine, cfg.Size+i, cfg.Size)
		c.peerTimeout, c.timeout = o.peerTimeout, cfg.OpTimeout()
		w.conns[i] = c
		go c.connect(w.ctx, cfg.Store)
	}
	return w, nil
}

// groupID is a group's identity on the servers: a hash of its members'
// global ranks and of how many groups with these members this process has
// made before, which agree on every member (NewGroup's contract).
func (w *world) groupID(g *core.Group) uint64 {
	ranks := make([]int, g.Size())
	for i := range ranks {
		ranks[i] = g.GlobalRank(i)
	}
	key := fmt.Sprint(ranks)
	w.mu.Lock()
	n := w.made[key]
	w.made[key]++
	w.mu.Unlock()
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", key, n)
	return h.Sum64()
}

// job is one RPC of an operation: a push or a pull on one server.
type job struct {
	server int
	run    func(ctx context.Context) error
}

// exchange runs an operation's jobs concurrently and returns the first
// error. Before cancelling the others it tells every other server why
// (abort), so that workers waiting there for this one's contributions fail
// now, with an error that names the cause, rather than at their deadline.
func (w *world) exchange(ctx context.Context, what string, jobs []job) error {
	if len(jobs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		server int
		err    error
	}
	results := make(chan result, len(jobs))
	for _, j := range jobs {
		go func() { results <- result{j.server, j.run(ctx)} }()
	}
	var first error
	for range jobs {
		r := <-results
		if r.err != nil && first == nil {
			first = r.err
			skip := r.server
			var re *RPCError
			answered := errors.As(r.err, &re)
			switch {
			case answered && re.Code == codes.InvalidArgument:
				skip = -1 // it refused a message, and is as fine as the others
			case answered && re.Code == codes.Aborted:
				// It is alive and told us the job failed elsewhere: it still
				// waits for this worker's goodbye, so Close must say one.
			case skip >= 0 && skip < len(w.conns):
				w.conns[skip].failedOp.Store(true)
				w.failed.Store(true)
			}
			w.relay(skip, what, r.err)
			cancel()
		}
	}
	return first
}

// relay tells every server but skip (where the failure happened, or -1)
// why this worker's operation failed.
func (w *world) relay(skip int, what string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), min(w.cfg.OpTimeout(), abortTimeout))
	defer cancel()
	why := fmt.Sprintf("%s: %v", what, err)
	if w.tr != nil { // over the mesh, an abort reaches every rank, servers included
		if w.local != nil {
			w.local.fail(fmt.Errorf("worker rank %d aborted: %s", w.cfg.Rank, why))
		}
		w.tr.Abort(errors.New(why))
		return
	}
	var wg sync.WaitGroup
	for i, c := range w.conns {
		if i != skip {
			wg.Go(func() { c.abort(ctx, why) })
		}
	}
	wg.Wait()
}

// chunk is the chunk size rounded down to whole elements of dt.
func (w *world) chunk(dt collective.DType) int {
	s := dt.Size()
	return max(s, w.o.chunk/s*s)
}

// waitLocal waits until this process's colocated server, if any, has
// stopped (every worker has said goodbye, or the grace period has passed)
// and close has closed the mesh.
func (w *world) waitLocal(ctx context.Context) error {
	select {
	case <-w.finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shaper returns the transport's connection shaper, so that the servers'
// streams share the process's shaped NIC; nil when there is none.
func shaper(tr driver.Transport) func(net.Conn) net.Conn {
	if s, ok := tr.(driver.ConnShaper); ok {
		return s.ShapeConn
	}
	return nil
}

// close says goodbye to every server and releases the connections. A
// colocated server keeps serving the other workers until each has said
// goodbye too (or for one operation timeout at most), then stops; see
// waitLocal for a process that must not exit before then.
func (w *world) close() {
	w.closeOnce.Do(func() {
		wait := min(w.cfg.OpTimeout(), byeTimeout)
		if w.failed.Load() {
			// The job failed at a server: the live ones answer at once,
			// and waiting longer only delays this worker's exit.
			wait = min(wait, failedByeTimeout)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		var wg sync.WaitGroup
		for _, c := range w.conns {
			if !c.failedOp.Load() {
				wg.Go(func() { c.bye(ctx) })
			}
		}
		wg.Wait()
		cancel()
		w.cancel()
		for _, c := range w.conns {
			<-c.ready
			if c.cc != nil {
				c.cc.Close()
			}
		}
		s := w.local
		if s == nil {
			w.closeMesh()
			return
		}
		grace := w.cfg.OpTimeout()
		go func() {
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-s.done:
			case <-t.C:
			}
			s.stop()
			w.closeMesh()
		}()
	})
}

// closeMesh closes the mesh, if this world owns it, once nothing here
// needs it any more.
func (w *world) closeMesh() {
	if w.tr != nil && !w.cfg.KeepTransport {
		w.tr.Close()
	}
	close(w.finished)
}
