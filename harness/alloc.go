package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/harness/launch"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/results"
)

// Allocation runs many launches inside one engine allocation (mpirun -n N,
// srun -n N, a Kubernetes Job of N pods): the ranks join once, and each
// launch of a sweep or training runs on its first np ranks, as PyTorch's
// DDP benchmark sweeps world sizes inside one job, while the rest wait.
//
// Rank 0 decides everything (the plan, --resume, rounds, what failed) and
// publishes each launch's spec in the store; the other ranks follow. Each
// launch gets communicators of its own over a mesh of all N ranks (one
// mesh per link shaping), which outlives them (collective.Config's
// KeepTransport). A launch ends once every rank has said it is done, so
// one launch's messages never meet the next's.
//
// A failed launch ends the allocation: a dead or stalled rank may have left
// the mesh broken, so the remaining launches are not run, and say why.
type Allocation struct {
	sess    *rendezvous.Session
	store   driver.Store
	jobID   string
	token   []byte
	getenv  func(string) string
	timeout time.Duration
	meshes  map[string]driver.Transport
	next    int   // the next launch's number; on a follower, the end's
	sawEnd  bool  // a follower read the end
	broken  error // why the allocation ended early
	stop    func()
	beats   sync.WaitGroup
}

// allocMsg is what rank 0 publishes as launch k: a spec, or the end.
type allocMsg struct {
	Spec  *job.Spec `json:"spec,omitempty"`
	End   bool      `json:"end,omitempty"`
	Abort string    `json:"abort,omitempty"`
}

// JoinAllocation joins this process, one rank started by an engine, to its
// job (the environment names rank, world size and rendezvous, as for
// RunRank). timeout bounds joining, each wait between launches without
// word from rank 0, and a rank's report that it finished a launch.
func JoinAllocation(ctx context.Context, getenv func(string) string, timeout time.Duration) (*Allocation, error) {
	url, jobID, token, err := jobIdentity(getenv)
	if err != nil {
		return nil, err
	}
	sess, err := rendezvous.Join(ctx, rendezvous.Options{
		URL: url, Rank: -1, Size: -1, Timeout: max(timeout, time.Minute), JobID: jobID, Token: token, Getenv: getenv,
	})
	if err != nil {
		return nil, err
	}
	a := &Allocation{sess: sess, store: sess.Store(), jobID: jobID, token: token, getenv: getenv, timeout: timeout,
		meshes: map[string]driver.Transport{}, stop: func() {}}
	if sess.Rank() == 0 {
		// A heartbeat, so that the ranks waiting for the next launch
		// tell a rank 0 that is busy (a long launch they are not part
		// of) from one that is gone or stopped.
		beatCtx, cancel := context.WithCancel(ctx)
		a.stop = cancel
		a.beats.Add(1)
		go func() {
			defer a.beats.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-beatCtx.Done():
					return
				case <-t.C:
					a.store.Add(beatCtx, "alloc/beat", 1)
				}
			}
		}()
	}
	return a, nil
}

// Rank is this process's rank in the allocation; Size is its N.
func (a *Allocation) Rank() int { return a.sess.Rank() }
func (a *Allocation) Size() int { return a.sess.Size() }

// Fits says why spec cannot run in this allocation, or "".
func (a *Allocation) Fits(spec *job.Spec) string {
	if spec.NP > a.Size() {
		return fmt.Sprintf("np %d is more than the %d ranks the engine started", spec.NP, a.Size())
	}
	n, err := ServerProcesses(spec.Strategy, spec.Options, spec.NP)
	if err != nil {
		return err.Error()
	}
	inMesh, err := meshServers(spec)
	switch {
	case err != nil:
		return err.Error()
	case n > inMesh:
		return "dedicated servers outside the job's mesh (transport=grpc) run only under the local launcher"
	case spec.NP+n > a.Size():
		return fmt.Sprintf("np %d and %d dedicated servers are more than the %d ranks the engine started", spec.NP, n, a.Size())
	}
	return ""
}

// Launch runs o.Spec on the allocation's first o.Spec.NP ranks; rank 0
// calls it, where launch.Launch would start processes, and o.Emit gets the
// records.
func (a *Allocation) Launch(ctx context.Context, o launch.Options) error {
	if a.broken != nil {
		return fmt.Errorf("not run: %w", a.broken)
	}
	if why := a.Fits(o.Spec); why != "" {
		return errors.New(why)
	}
	k := a.next
	a.next++
	if err := a.publish(ctx, k, allocMsg{Spec: o.Spec}); err != nil {
		a.broken = err
		return err
	}
	err := a.part(ctx, o.Spec, o.Emit)
	dctx := ctx
	if err != nil {
		a.abort(fmt.Errorf("rank 0: launch %d failed: %w", k, err))
		// A rank this one found dead never reports: hear from the live
		// ones for a moment, not for the whole timeout.
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	if derr := a.awaitDone(dctx, k); err == nil {
		err = derr
	}
	if err != nil {
		a.broken = fmt.Errorf("the allocation ended after launch %d failed: %w", k, err)
	}
	return err
}

// Follow runs, on a rank other than 0, the launches rank 0 publishes, until
// it publishes the end.
func (a *Allocation) Follow(ctx context.Context) error {
	for k := 0; ; k++ {
		msg, err := a.await(ctx, k)
		if err != nil {
			return err
		}
		if msg.End {
			a.next, a.sawEnd = k, true
			if msg.Abort != "" {
				return fmt.Errorf("rank 0 ended the allocation: %s", msg.Abort)
			}
			return nil
		}
		perr := a.part(ctx, msg.Spec, nil)
		if perr != nil {
			a.abort(fmt.Errorf("rank %d: launch %d failed: %w", a.Rank(), k, perr))
			a.store.Set(ctx, fmt.Sprintf("alloc/%d/err/%d", k, a.Rank()), []byte(perr.Error()))
		}
		if err := a.store.Set(ctx, fmt.Sprintf("alloc/%d/done/%d", k, a.Rank()), nil); err != nil {
			return err
		}
		if perr != nil {
			return perr
		}
	}
}

// End closes the allocation: on rank 0 it tells the other ranks, with
// cause when the run that used it failed. Every rank calls it.
func (a *Allocation) End(ctx context.Context, cause error) error {
	var err error
	if a.Rank() == 0 {
		msg := allocMsg{End: true}
		switch {
		case cause != nil:
			msg.Abort = cause.Error()
		case a.broken != nil:
			msg.Abort = a.broken.Error()
		}
		err = a.publish(ctx, a.next, msg)
		if err == nil && msg.Abort == "" {
			// The followers read the end before the store goes away.
			a.awaitDone(ctx, a.next)
		}
		// After a failure some ranks may be gone for good: those alive
		// read the abort, or find the store gone, and end either way.
	} else if a.sawEnd {
		a.store.Set(ctx, fmt.Sprintf("alloc/%d/done/%d", a.next, a.Rank()), nil)
	}
	a.stop()
	a.beats.Wait()
	for _, tr := range a.meshes {
		tr.Close()
	}
	close := a.sess.Close
	if cause != nil || a.broken != nil {
		close = a.sess.Abandon
	}
	if cerr := close(); err == nil {
		err = cerr
	}
	return err
}

// abort tells every rank's mesh that the allocation failed, so that a rank
// still waiting in the launch for a message from this one fails now rather
// than at its operation's deadline.
func (a *Allocation) abort(err error) {
	for _, tr := range a.meshes {
		tr.Abort(err)
	}
}

func (a *Allocation) publish(ctx context.Context, k int, msg allocMsg) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return a.store.Set(ctx, fmt.Sprintf("alloc/%d", k), b)
}

// await waits for launch k's message, for as long as rank 0's heartbeat
// goes on: a launch this rank is not part of may take hours.
func (a *Allocation) await(ctx context.Context, k int) (allocMsg, error) {
	var msg allocMsg
	key := fmt.Sprintf("alloc/%d", k)
	lastBeat, since := int64(-1), time.Now()
	for {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		b, err := a.store.Get(wctx, key)
		cancel()
		if err == nil {
			return msg, json.Unmarshal(b, &msg)
		}
		if ctx.Err() != nil {
			return msg, ctx.Err()
		}
		bctx, cancel := context.WithTimeout(ctx, a.timeout)
		beat, err := a.store.Add(bctx, "alloc/beat", 0)
		cancel()
		if err != nil {
			return msg, fmt.Errorf("waiting for launch %d from rank 0: %w", k, err)
		}
		if beat != lastBeat {
			lastBeat, since = beat, time.Now()
		} else if time.Since(since) > a.timeout {
			return msg, fmt.Errorf("waiting for launch %d: rank 0 made no progress for %v (stopped, stuck, or too starved of CPU to answer)", k, a.timeout.Round(time.Second))
		}
	}
}

// awaitDone waits until every other rank has finished launch k, naming
// those that do not within the timeout, and those that failed.
func (a *Allocation) awaitDone(ctx context.Context, k int) error {
	keys := make([]string, 0, a.Size()-1)
	for r := 1; r < a.Size(); r++ {
		keys = append(keys, fmt.Sprintf("alloc/%d/done/%d", k, r))
	}
	wctx, cancel := context.WithTimeout(ctx, a.timeout)
	err := a.store.Wait(wctx, keys...)
	cancel()
	var failed, missing []string
	for r := 1; r < a.Size(); r++ {
		gctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		if b, gerr := a.store.Get(gctx, fmt.Sprintf("alloc/%d/err/%d", k, r)); gerr == nil {
			failed = append(failed, fmt.Sprintf("rank %d: %s", r, b))
		}
		cancel()
		if err != nil {
			gctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			if _, gerr := a.store.Get(gctx, keys[r-1]); gerr != nil {
				missing = append(missing, fmt.Sprint(r))
			}
			cancel()
		}
	}
	switch {
	case len(failed) > 0:
		return errors.New(strings.Join(failed, "; "))
	case err != nil && len(missing) > 0:
		return fmt.Errorf("launch %d: rank %s did not finish within %v", k, strings.Join(missing, ", "), a.timeout)
	case err != nil:
		return fmt.Errorf("launch %d: waiting for the ranks to finish: %w", k, err)
	}
	return nil
}

// part is this rank's share of a launch: its communicator over the mesh
// for spec's link if it is one of the first spec.NP ranks, nothing
// otherwise.
func (a *Allocation) part(ctx context.Context, spec *job.Spec, emit func(*results.Record) error) error {
	tr, err := a.mesh(ctx, spec)
	if err != nil {
		return err
	}
	if a.Rank() >= spec.NP {
		return a.serve(ctx, spec, tr)
	}
	if emit == nil {
		emit = func(*results.Record) error { return nil }
	}
	comm, err := collective.New(ctx, spec.Strategy, collective.Config{
		Rank: a.Rank(), Size: spec.NP, Transport: tr, Store: a.store, KeepTransport: true,
		Timeout: spec.Timeout, Options: spec.Options, JobID: a.jobID, Token: a.token,
	})
	if err != nil {
		return err
	}
	return closeComm(ctx, comm, work(ctx, comm, spec, emit))
}

// mesh is the allocation's mesh of all N ranks shaped as spec's link says
// (per rank, as the worker's own mesh is), made by every rank together the
// first time a launch names that link.
func (a *Allocation) mesh(ctx context.Context, spec *job.Spec) (driver.Transport, error) {
	link := spec.Link + "\x00" + spec.Transport
	if tr, ok := a.meshes[link]; ok {
		return tr, nil
	}
	shape, err := spec.LinkFor(a.Rank())
	if err != nil {
		return nil, err
	}
	// Each mesh publishes its addresses and hosts under keys of its own,
	// so that a later mesh's ranks never find an earlier one's (closed)
	// listeners in the store the meshes share.
	tr, err := transport.NewTCP(ctx, transport.TCPOptions{
		Rank: a.Rank(), Size: a.Size(), Store: a.store, KeyPrefix: fmt.Sprintf("transport/mesh%d/addr/", len(a.meshes)),
		JobID: fmt.Sprintf("%s/mesh%d", a.jobID, len(a.meshes)), Token: a.token,
		ListenHost: launch.ListenHost(a.getenv), ConnectTimeout: max(a.timeout, time.Minute), Link: shape, Spin: launch.Spin(a.getenv),
		Transport: spec.Transport,
	})
	if err != nil {
		return nil, err
	}
	a.meshes[link] = tr
	return tr, nil
}

// serve is a rank's share of a launch whose strategy runs dedicated
// servers over the mesh: the ranks after the workers are its servers, as an
// engine's last ranks are in a job of its own (engineServer); the rest
// idle.
func (a *Allocation) serve(ctx context.Context, spec *job.Spec, tr driver.Transport) error {
	n, err := meshServers(spec)
	index := a.Rank() - spec.NP
	if err != nil || index >= n {
		return err
	}
	srv, err := serversOf(spec)
	if err != nil {
		return err
	}
	cfg := serverConfig(spec, index, n, a.store, launch.ListenHost(a.getenv), a.jobID, a.token)
	cfg.Transport = tr
	return srv.Serve(ctx, cfg)
}
