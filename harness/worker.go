package harness

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/workloads/train"
)

// Environment variables through which a launcher hands a worker its job.
// Rank and world size come from the launcher's own variables (RANK and
// WORLD_SIZE from the local launcher or torchrun, OMPI_COMM_WORLD_* from
// mpirun, SLURM_* from srun); see rendezvous.FromEnv.
const (
	EnvSpec        = "DISTBENCH_SPEC"         // the Spec as JSON
	EnvInit        = "DISTBENCH_INIT"         // rendezvous URL; default env://
	EnvJobID       = "DISTBENCH_JOB_ID"       // keeps jobs sharing a store apart
	EnvToken       = "DISTBENCH_TOKEN"        // hex job secret for the transport handshake
	EnvServerIndex = "DISTBENCH_SERVER_INDEX" // set for a strategy's server process
	EnvServerCount = "DISTBENCH_SERVER_COUNT"
	EnvListenHost  = "DISTBENCH_LISTEN_HOST" // interface to bind; default 127.0.0.1
	EnvCPUProfile  = "DISTBENCH_CPUPROFILE"  // write each process's CPU profile to PREFIX.rankN.pprof
	EnvSpin        = "DISTBENCH_SPIN"        // transport busy-read budget, e.g. 50us; see transport.TCPOptions.Spin
	EnvCPUs        = "DISTBENCH_CPUS"        // CPUs to bind this process to, e.g. "2,3"; "none" binds nothing
	// EnvLauncherFD is set by the local launcher: an inherited pipe whose
	// write end only the launcher holds, so that its end of file means the
	// launcher is gone, however it died; the process then exits.
	EnvLauncherFD = "DISTBENCH_LAUNCHER_FD"
)

// RecordPrefix starts each line on which rank 0 writes a record to stdout.
const RecordPrefix = "distbench-record "

// WorkerMain is a worker or server process's whole life: join the job, build
// the transport and communicator, measure, report. Rank 0 writes records to
// stdout as RecordPrefix + JSON, one per line.
func WorkerMain(ctx context.Context, stdout io.Writer, getenv func(string) string) error {
	spec, err := specFromEnv(getenv)
	if err != nil {
		return err
	}
	err = watchLauncher(getenv, func() {
		who := "rank " + getenv("RANK")
		if idx := getenv(EnvServerIndex); idx != "" {
			who = "server " + idx
		}
		fmt.Fprintf(os.Stderr, "distbench: %s: the launcher that started it is gone; exiting\n", who)
		os.Exit(1)
	})
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(stdout)
	emit := func(r *results.Record) error {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		bw.WriteString(RecordPrefix)
		bw.Write(b)
		bw.WriteByte('\n')
		return bw.Flush()
	}
	if cpus := getenv(EnvCPUs); cpus != "" && cpus != "none" {
		if err := bindToCPUs(cpus); err != nil {
			return err
		}
	}
	if prefix := getenv(EnvCPUProfile); prefix != "" {
		stop, err := startCPUProfile(fmt.Sprintf("%s.%s%s.pprof", prefix, roleName(getenv), getenv("RANK")))
		if err != nil {
			return err
		}
		defer stop()
	}
	return RunRank(ctx, spec, getenv, emit)
}

// watchLauncher calls gone once the launcher that set EnvLauncherFD has
// exited: a worker must not outlive it, holding its cores and ports, when it
// is killed (kill -9 gives it no chance to stop its children). Linux also
// has the kernel kill them (launchLinked); this works everywhere.
func watchLauncher(getenv func(string) string, gone func()) error {
	v := getenv(EnvLauncherFD)
	if v == "" {
		return nil // not started by the local launcher
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return fmt.Errorf("%s=%q: want the number of a file descriptor inherited from the launcher (3 or more)", EnvLauncherFD, v)
	}
	f := os.NewFile(uintptr(fd), "launcher pipe")
	if _, err := f.Stat(); err != nil {
		return fmt.Errorf("%s=%d: %w", EnvLauncherFD, fd, err)
	}
	go func() {
		// Nothing is ever written: the read ends at end of file, when the
		// launcher's end has closed with its process.
		io.Copy(io.Discard, f)
		gone()
	}()
	return nil
}

func roleName(getenv func(string) string) string {
	if idx := getenv(EnvServerIndex); idx != "" {
		return "server" + idx + "-"
	}
	return "rank"
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvCPUProfile, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", EnvCPUProfile, err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// RunRank runs one rank (or server process) of spec in a job whose launcher
// (the local one, mpirun, srun, torchrun, a Kubernetes Job) set the
// environment read through getenv. On rank 0, emit receives the records.
func RunRank(ctx context.Context, spec *Spec, getenv func(string) string, emit func(*results.Record) error) error {
	var err error
	url := getenv(EnvInit)
	if url == "" {
		url = "env://"
	}
	jobID := getenv(EnvJobID)
	if jobID == "" {
		jobID = "distbench"
	}
	token := []byte(jobID)
	if t := getenv(EnvToken); t != "" {
		if token, err = hex.DecodeString(t); err != nil {
			return fmt.Errorf("%s: not hex: %w", EnvToken, err)
		}
	}
	joinTimeout := max(spec.Timeout, time.Minute)
	if idx := getenv(EnvServerIndex); idx != "" {
		return serverMain(ctx, spec, url, jobID, token, idx, getenv(EnvServerCount), getenv(EnvListenHost), joinTimeout)
	}

	sess, err := rendezvous.Join(ctx, rendezvous.Options{
		URL: url, Rank: -1, Size: -1, Timeout: joinTimeout, JobID: jobID, Getenv: getenv,
	})
	if err != nil {
		return err
	}
	defer sess.Close()
	if sess.Size() != spec.NP {
		return fmt.Errorf("the launcher started %d ranks but the spec asks for np %d", sess.Size(), spec.NP)
	}
	var link *transport.Link
	if spec.Link != "" {
		l, err := transport.ParseLink(spec.Link)
		if err != nil {
			return err
		}
		link = &l
	}
	tr, err := transport.NewTCP(ctx, transport.TCPOptions{
		Rank: sess.Rank(), Size: sess.Size(), Store: sess.Store(), JobID: jobID, Token: token,
		ListenHost: getenv(EnvListenHost), ConnectTimeout: joinTimeout, Link: link, Spin: spin(getenv),
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
	switch {
	case spec.Train != nil:
		_, err = train.Run(ctx, comm, *spec.Train, emit)
	case spec.Soak != nil:
		err = Soak(ctx, comm, spec, emit)
	default:
		err = Measure(ctx, comm, spec, emit)
	}
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

// spin is the transport's busy-read budget: DISTBENCH_SPIN when set (the
// local launcher sets it when the job's processes fit the machine's cores),
// else none, since spinning on an oversubscribed machine only takes cores
// from the peers being waited for.
func spin(getenv func(string) string) time.Duration {
	d, err := time.ParseDuration(getenv(EnvSpin))
	if err != nil || d < 0 {
		return 0
	}
	return d
}

func specFromEnv(getenv func(string) string) (*Spec, error) {
	raw := getenv(EnvSpec)
	if raw == "" {
		return nil, fmt.Errorf("%s is not set: workers are started by `distbench run` or `distbench sweep`, or by a launcher that sets it", EnvSpec)
	}
	var spec Spec
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvSpec, err)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return &spec, nil
}

func serverMain(ctx context.Context, spec *Spec, url, jobID string, token []byte, idx, count, host string, timeout time.Duration) error {
	st, err := collective.Lookup(spec.Strategy)
	if err != nil {
		return err
	}
	srv, ok := st.(driver.Servers)
	if !ok {
		return fmt.Errorf("strategy %s runs no server processes", spec.Strategy)
	}
	index, err1 := strconv.Atoi(idx)
	n, err2 := strconv.Atoi(count)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("%s/%s: %w", EnvServerIndex, EnvServerCount, err)
	}
	ep, err := rendezvous.ParseURL(url)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, ep, jobID, timeout)
	if err != nil {
		return err
	}
	defer store.Close()
	cfg := driver.ServerConfig{
		Index: index, Count: n, Workers: spec.NP, Store: store, Timeout: spec.Timeout,
		Options: spec.Options, ListenHost: host, JobID: jobID, Token: token,
		Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) },
	}
	if spec.Link != "" {
		// The server's NIC is shaped like every worker's.
		l, err := transport.ParseLink(spec.Link)
		if err != nil {
			return err
		}
		cfg.ShapeConn = transport.NewNIC(l).Conn
	}
	return srv.Serve(ctx, cfg)
}

// openStore connects a process that is not a rank (a strategy's server) to
// the job's store.
func openStore(ctx context.Context, ep rendezvous.Endpoint, jobID string, timeout time.Duration) (driver.Store, error) {
	switch ep.Scheme {
	case "tcp":
		return rendezvous.Dial(ctx, ep.Addr, rendezvous.ClientOptions{JobID: jobID, Timeout: timeout})
	case "file":
		return rendezvous.OpenFile(ctx, ep.Path, rendezvous.FileOptions{Timeout: timeout})
	default:
		info, err := rendezvous.FromEnv(os.Getenv)
		if err != nil && info.MasterAddr == "" {
			return nil, err
		}
		addr := fmt.Sprintf("%s:%d", info.MasterAddr, info.MasterPort)
		return rendezvous.Dial(ctx, addr, rendezvous.ClientOptions{JobID: jobID, Timeout: timeout})
	}
}
