package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/harness/launch"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/workloads/train"
)

// WorkerMain is a worker or server process's whole life: join the job, build
// the transport and communicator, measure, report. The launch protocol
// around it (the spec in the environment, records on stdout) is
// launch.Worker's.
func WorkerMain(ctx context.Context, stdout io.Writer, getenv func(string) string) error {
	return launch.Worker(ctx, stdout, getenv, RunRank)
}

// RunRank runs one rank (or server process) of spec in a job whose launcher
// (the local one, mpirun, srun, torchrun, a Kubernetes Job) set the
// environment read through getenv. On rank 0, emit receives the records.
func RunRank(ctx context.Context, spec *job.Spec, getenv func(string) string, emit func(*results.Record) error) (err error) {
	url, jobID, token, err := jobIdentity(getenv)
	if err != nil {
		return err
	}
	joinTimeout := max(spec.Timeout, time.Minute)
	if idx := getenv(launch.EnvServerIndex); idx != "" {
		index, err1 := strconv.Atoi(idx)
		count, err2 := strconv.Atoi(getenv(launch.EnvServerCount))
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("%s/%s: %w", launch.EnvServerIndex, launch.EnvServerCount, err)
		}
		return serverMain(ctx, spec, getenv, url, jobID, token, index, count, launch.ListenHost(getenv), joinTimeout)
	}
	// An engine starts a strategy's servers too, as its last ranks.
	idx, count, workers, err := engineServer(spec, getenv)
	if err != nil {
		return err
	}
	if idx >= 0 {
		return serverMain(ctx, spec, getenv, url, jobID, token, idx, count, launch.ListenHost(getenv), joinTimeout)
	}

	sess, err := rendezvous.Join(ctx, rendezvous.Options{
		URL: url, Rank: -1, Size: workers, Timeout: joinTimeout, JobID: jobID, Token: token, Getenv: getenv,
	})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			sess.Abandon() // a stopped rank would hold the store to the timeout
		} else {
			sess.Close()
		}
	}()
	if sess.Size() != spec.NP {
		return fmt.Errorf("the launcher started %d ranks but the spec asks for np %d: under a launcher, pass --np %d (its world size)", sess.Size(), spec.NP, sess.Size())
	}
	link, err := spec.LinkFor(sess.Rank())
	if err != nil {
		return err
	}
	servers, err := meshServers(spec)
	if err != nil {
		return err
	}
	// The strategy's server processes, if any, are ranks of the mesh too,
	// after the workers.
	tr, err := transport.NewTCP(ctx, transport.TCPOptions{
		Rank: sess.Rank(), Size: sess.Size() + servers, Store: sess.Store(), JobID: jobID, Token: token,
		ListenHost: launch.ListenHost(getenv), ConnectTimeout: joinTimeout, Link: link, Spin: launch.Spin(getenv),
		Transport: spec.Transport,
	})
	if err != nil {
		return err
	}
	comm, err := collective.New(ctx, spec.Strategy, collective.Config{
		Rank: sess.Rank(), Size: sess.Size(), Transport: tr, Store: sess.Store(),
		Timeout: spec.Timeout, Options: spec.Options, JobID: jobID, Token: token,
	})
	if err != nil {
		tr.Close()
		return err
	}
	if werr := work(ctx, comm, spec, emit); werr != nil {
		// The job failed: the store's drain and the mesh's goodbyes, both
		// short now, run side by side so that their waits do not add up.
		done := make(chan struct{})
		go func() {
			defer close(done)
			sess.Abandon()
		}()
		err = closeComm(ctx, comm, werr)
		<-done
		return err
	}
	return closeComm(ctx, comm, nil)
}

// work is what spec asks of a communicator: training, a soak, or points to
// measure.
func work(ctx context.Context, comm collective.Comm, spec *job.Spec, emit func(*results.Record) error) error {
	switch {
	case spec.Train != nil:
		// Training records are made in workloads/train, which does not
		// see the spec: what carried them is said here.
		_, err := train.Run(ctx, comm, *spec.Train, func(r *results.Record) error {
			r.Transport = spec.TransportName()
			return emit(r)
		})
		return err
	case spec.Soak != nil:
		return Soak(ctx, comm, spec, emit)
	}
	return Measure(ctx, comm, spec, emit)
}

// jobIdentity is the job's rendezvous URL, id and token, as the launcher
// set them: env:// by default, and DISTBENCH_TOKEN, without which a rank
// does not start (see launch.Token).
func jobIdentity(getenv func(string) string) (url, jobID string, token []byte, err error) {
	if url = getenv(launch.EnvInit); url == "" {
		url = "env://"
	}
	if jobID = getenv(launch.EnvJobID); jobID == "" {
		jobID = "distbench"
	}
	if token, err = launch.Token(getenv); err != nil {
		return "", "", nil, err
	}
	return url, jobID, token, nil
}

// closeComm closes comm after its work ended with err: waiting for the
// other ranks where the strategy needs that (a parameter server's
// colocated servers serve them to the end) and the work went well.
func closeComm(ctx context.Context, comm collective.Comm, err error) error {
	var cerr error
	if cw, ok := comm.(collective.CloseWaiter); ok && err == nil {
		cerr = cw.CloseAndWait(ctx)
	} else {
		cerr = comm.Close()
	}
	if err == nil {
		err = cerr
	}
	return err
}

func serverMain(ctx context.Context, spec *job.Spec, getenv func(string) string, url, jobID string, token []byte, index, n int, host string, timeout time.Duration) error {
	srv, err := serversOf(spec)
	if err != nil {
		return err
	}
	ep, err := rendezvous.ParseURL(url)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, ep, getenv, jobID, token, timeout)
	if err != nil {
		return err
	}
	defer store.Close()
	cfg := serverConfig(spec, index, n, store, host, jobID, token)
	// The server's NIC is shaped by the default link, as the workers'
	// without an override of their own.
	link, err := spec.LinkFor(-1)
	if err != nil {
		return err
	}
	if link != nil {
		cfg.ShapeConn = transport.NewNIC(*link).Conn
	}
	if inMesh, err := meshServers(spec); err != nil {
		return err
	} else if inMesh > 0 {
		// The server is a rank of the job's mesh, after the workers.
		tr, err := transport.NewTCP(ctx, transport.TCPOptions{
			Rank: spec.NP + index, Size: spec.NP + n, Store: store, JobID: jobID, Token: token,
			ListenHost: host, ConnectTimeout: timeout, Link: link, Spin: launch.Spin(getenv),
			Transport: spec.Transport,
		})
		if err != nil {
			return fmt.Errorf("server %d: joining the job's mesh: %w", index, err)
		}
		defer tr.Close()
		cfg.Transport = tr
	}
	return srv.Serve(ctx, cfg)
}

// serversOf is spec's strategy as the runner of its server processes.
func serversOf(spec *job.Spec) (driver.Servers, error) {
	st, err := collective.Lookup(spec.Strategy)
	if err != nil {
		return nil, err
	}
	srv, ok := st.(driver.Servers)
	if !ok {
		return nil, fmt.Errorf("strategy %s runs no server processes", spec.Strategy)
	}
	return srv, nil
}

// serverConfig is server index of n's configuration for spec, however it
// was started (the local launcher, an engine, an allocation's ranks).
func serverConfig(spec *job.Spec, index, n int, store driver.Store, host, jobID string, token []byte) driver.ServerConfig {
	return driver.ServerConfig{
		Index: index, Count: n, Workers: spec.NP, Store: store, Timeout: spec.Timeout,
		Options: spec.Options, ListenHost: host, JobID: jobID, Token: token,
		Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) },
	}
}

// meshServers is how many server processes spec's strategy runs beside the
// workers as ranks of the job's mesh (0 for most).
func meshServers(spec *job.Spec) (int, error) {
	st, err := collective.Lookup(spec.Strategy)
	if err != nil {
		return 0, err
	}
	if m, ok := st.(driver.MeshServers); !ok || !m.ServersInMesh(spec.Options) {
		return 0, nil
	}
	return ServerProcesses(spec.Strategy, spec.Options, spec.NP)
}

// openStore connects a process that is not a rank (a strategy's server) to
// the job's store.
func openStore(ctx context.Context, ep rendezvous.Endpoint, getenv func(string) string, jobID string, token []byte, timeout time.Duration) (driver.Store, error) {
	switch ep.Scheme {
	case "tcp":
		return rendezvous.Dial(ctx, ep.Addr, rendezvous.ClientOptions{JobID: jobID, Token: token, Timeout: timeout})
	case "file":
		return rendezvous.OpenFile(ctx, ep.Path, rendezvous.FileOptions{Timeout: timeout})
	default:
		return rendezvous.DialEnv(ctx, getenv, rendezvous.ClientOptions{JobID: jobID, Token: token, Timeout: timeout})
	}
}
