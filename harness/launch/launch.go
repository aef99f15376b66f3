package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/transport"
	"github.com/distbench/distbench/results"
)

// DefaultSpin is the transport's busy-read budget when every process of a
// local job has a core of its own: how long a connection's reader keeps
// polling its socket, yielding to the process's other goroutines between
// polls, after the last bytes it read. A waiting rank then finds its message
// without the poller and thread wake-ups (and, on a VM, a halted virtual
// CPU's) that cost tens of microseconds per message; a millisecond covers
// the gap between back-to-back operations, and an idle rank stops spinning
// after it. `make tune` compares DISTBENCH_SPIN=0 with 1ms (docs/tuning.md,
// spin).
const DefaultSpin = time.Millisecond

// bindings shares cpus out among procs processes in equal contiguous
// blocks, as "2,3" lists; nil when there are fewer CPUs than processes.
func bindings(procs int, cpus []int) []string {
	if procs < 1 || len(cpus) < procs {
		return nil
	}
	per := len(cpus) / procs
	sets := make([]string, procs)
	for i := range procs {
		var b strings.Builder
		for j, c := range cpus[i*per : (i+1)*per] {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(c))
		}
		sets[i] = b.String()
	}
	return sets
}

// workerProcs returns the GOMAXPROCS and spin budget a local launch gives
// its processes, unless the environment sets them: the machine's cores
// shared out among the job's processes, so that a job never runs more busy
// threads than there are cores (on 2 cores, 2 ranks with 2 threads each
// were slower, not faster), and spinning only when each process has a core
// to spin on (an oversubscribed spinner steals the core of the rank it waits
// for).
func workerProcs(procs, cores int) (maxprocs int, spin time.Duration) {
	maxprocs = max(1, cores/max(1, procs))
	if procs <= cores {
		spin = DefaultSpin
	}
	return maxprocs, spin
}

// Options configure a local launch.
type Options struct {
	Spec *job.Spec
	// Exe and Args start one worker: Exe is the distbench binary (default:
	// this executable), Args the words that make it a worker ("worker").
	Exe  string
	Args []string
	// Emit receives rank 0's records as they arrive.
	Emit func(*results.Record) error
	// Stderr receives the workers' own output, each line prefixed with its rank.
	Stderr io.Writer
	// Grace is how long the other workers get to fail on their own after
	// one has failed, before they are killed; default 10s. Workers abort
	// their peers on failure, so they normally need much less. The
	// strategy's servers are stopped as soon as a worker fails.
	Grace time.Duration
}

// Launch runs spec as NP local worker processes (plus the strategy's server
// processes, if it has any) over loopback, with a rendezvous store hosted
// here, and returns when all have exited. Records are emitted as they come,
// so a launch that fails or is interrupted keeps what it measured.
func Launch(ctx context.Context, o Options) error {
	spec := o.Spec
	if err := spec.Validate(); err != nil {
		return err
	}
	exe := o.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("finding the distbench binary to start workers: %w", err)
		}
	}
	grace := o.Grace
	if grace == 0 {
		grace = 10 * time.Second
	}
	stderr := o.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	jobID := "distbench-" + randomHex(6)
	// The job's secret: the store, the mesh and a strategy's servers all
	// refuse a process that cannot prove it holds it.
	secret := make([]byte, 32)
	rand.Read(secret)
	token := hex.EncodeToString(secret)
	store, err := rendezvous.Listen("127.0.0.1:0", rendezvous.ServerOptions{JobID: jobID, Token: secret})
	if err != nil {
		return fmt.Errorf("starting the rendezvous store: %w", err)
	}
	defer store.Close()
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	servers := 0
	if st, _ := collective.Lookup(spec.Strategy); st != nil {
		if s, ok := st.(driver.Servers); ok {
			if servers, err = s.ServerProcesses(spec.Options, spec.NP); err != nil {
				return err
			}
		}
	}
	base := append(os.Environ(),
		EnvSpec+"="+string(specJSON),
		EnvInit+"=tcp://"+store.Addr(),
		EnvJobID+"="+jobID,
		EnvToken+"="+token,
	)
	maxprocs, spinFor := workerProcs(spec.NP+servers, runtime.NumCPU())
	if os.Getenv("GOMAXPROCS") == "" {
		base = append(base, "GOMAXPROCS="+strconv.Itoa(maxprocs))
	}
	switch {
	case os.Getenv(EnvSpin) != "":
		spinFor = Spin(os.Getenv) // the user's choice, which binding follows
	case spinFor > 0:
		base = append(base, EnvSpin+"="+spinFor.String())
	}
	// Spinning processes are bound to CPUs of their own, as mpirun binds
	// ranks to cores: otherwise the OS may, for a while, run two of them
	// on one core while the other serves something else, and a 4 KiB
	// allreduce that takes 20 µs takes 90.
	var cpuSets []string
	if spinFor > 0 && os.Getenv(EnvCPUs) == "" {
		cpuSets = bindings(spec.NP+servers, allowedCPUs())
	}
	cpuEnv := func(i int) []string {
		if i < len(cpuSets) {
			return []string{EnvCPUs + "=" + cpuSets[i]}
		}
		return nil
	}
	// The children must not outlive this process, even killed with no
	// chance to stop them: each inherits the read end of a pipe whose write
	// end only this process holds (see watchLauncher), and on Linux the
	// kernel kills them when the thread that started them exits, so this
	// goroutine keeps that thread until they have all exited.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lifeline, held, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("creating the pipe that tells workers the launcher is alive: %w", err)
	}
	defer held.Close()
	defer lifeline.Close()
	base = append(base, EnvLauncherFD+"=3") // ExtraFiles[0]

	out := &prefixWriter{w: stderr}
	hostEnv, err := simulatedHosts(spec, jobID)
	if err != nil {
		return err
	}
	var procs []*proc
	for r := range spec.NP {
		env := append(base[:len(base):len(base)],
			"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(spec.NP))
		env = append(env, hostEnv(r)...)
		env = append(env, cpuEnv(r)...)
		procs = append(procs, &proc{name: fmt.Sprintf("rank %d", r), rank: r, env: env})
	}
	for i := range servers {
		env := append(base[:len(base):len(base)],
			EnvServerIndex+"="+strconv.Itoa(i), EnvServerCount+"="+strconv.Itoa(servers))
		env = append(env, cpuEnv(spec.NP+i)...)
		procs = append(procs, &proc{name: fmt.Sprintf("server %d", i), rank: -1, env: env})
	}

	var emitErr error
	var emitMu sync.Mutex
	onRecord := func(line string) {
		var rec results.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			out.line("rank 0", "unreadable record: "+err.Error())
			return
		}
		if o.Emit != nil {
			emitMu.Lock()
			if err := o.Emit(&rec); err != nil && emitErr == nil {
				emitErr = err
			}
			emitMu.Unlock()
		}
	}
	exited := make(chan *proc, len(procs))
	for _, p := range procs {
		if err := p.start(exe, o.Args, lifeline, out, onRecord); err != nil {
			for _, q := range procs {
				q.kill()
			}
			return fmt.Errorf("starting %s: %w", p.name, err)
		}
		go func() { p.wait(); exited <- p }()
	}
	lifeline.Close() // the children have it

	var failures []string
	causes := 0 // failures[:causes] are deaths by a signal, in order
	workersLeft, total := spec.NP, len(procs)
	var deadline, stoppedTick <-chan time.Time
	interrupted := false
	for done := 0; done < total; {
		select {
		case p := <-exited:
			done++
			if p.rank >= 0 {
				workersLeft--
			}
			if p.failedOnItsOwn() && !interrupted {
				f := p.describeFailure()
				if p.diedBySignal() {
					// A process a signal ended is a cause; the ones that
					// exit with an error meanwhile are usually its
					// consequences, and may be reaped first (a mesh peer
					// sees the reset before the launcher sees the death).
					failures = slices.Insert(failures, causes, f)
					causes++
				} else {
					failures = append(failures, f)
				}
			}
			if p.rank >= 0 && p.err != nil {
				// The job has failed, and the strategy's servers serve
				// only it: stop them now rather than after the grace
				// (they may be waiting for the dead worker), which also
				// fails the workers still waiting on them.
				for _, q := range procs {
					if q.rank < 0 {
						q.kill()
					}
				}
			}
			if (p.err != nil || workersLeft == 0) && deadline == nil {
				deadline = time.After(grace)
				if p.err != nil {
					look := time.NewTicker(100 * time.Millisecond)
					defer look.Stop()
					stoppedTick = look.C
				}
			}
		case <-stoppedTick:
			// After a failure, a stopped worker is the likely culprit and
			// will never end on its own: the grace is for ranks writing
			// their results, which a stopped one is not.
			for _, p := range procs {
				if p.isStopped() {
					if p.rank >= 0 {
						// The likely cause: first, as deaths by a signal are.
						failures = slices.Insert(failures, causes, p.name+" was stopped (SIGSTOP or a debugger); killed")
						causes++
					}
					p.kill()
				}
			}
		case <-deadline:
			for _, p := range procs {
				if !p.exited() {
					if workersLeft > 0 && p.rank >= 0 {
						failures = append(failures, fmt.Sprintf("%s still running %v after the first failure; killed", p.name, grace))
					}
					p.kill()
				}
			}
			deadline = nil
		case <-ctx.Done():
			if !interrupted {
				interrupted = true
				for _, p := range procs {
					p.kill()
				}
			}
		}
	}
	if interrupted {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if len(failures) > 0 {
		return failureError(filepath.Join(os.TempDir(), jobID+"-failures.txt"), failures)
	}
	return emitErr
}

// Bounds of the job's failure line, which every failed process would
// otherwise lengthen by a line of its own (5.7 KB at np 16).
const (
	maxCulprit    = 1000 // bytes of the first failure kept in the line
	maxOtherNames = 8    // other failed processes named in it
)

// failureError is a failed job in one bounded line: the first failure (a
// process a signal ended, or one found stopped, else the first to fail),
// then how many others failed and which, and the file that holds every
// failure in full, one a line.
func failureError(path string, failures []string) error {
	if len(failures) == 1 {
		return errors.New(clipText(failures[0], maxCulprit))
	}
	var names []string
	for i, f := range failures[1:] {
		if i == maxOtherNames {
			names = append(names, fmt.Sprintf("%d more", len(failures)-1-i))
			break
		}
		name, _, _ := strings.Cut(f, " (pid")
		name, _, _ = strings.Cut(name, ": ")
		names = append(names, clipText(name, 40))
	}
	where := "written to " + path
	if err := os.WriteFile(path, []byte(strings.Join(failures, "\n")+"\n"), 0o600); err != nil {
		where = fmt.Sprintf("not kept (%v)", err)
	}
	return fmt.Errorf("%s; and %d other process(es) failed (%s): every failure %s",
		clipText(failures[0], maxCulprit), len(failures)-1, strings.Join(names, ", "), where)
}

// clipText cuts s to at most n bytes, on a rune boundary, marking the cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// simulatedHosts returns the environment that places rank r on its host:
// with spec.Hosts, a host identity of its own per simulated host (the
// transport's EnvHostID, which every rank publishes as the mesh forms)
// and the rank's place within that host; without, one host of every rank.
func simulatedHosts(spec *job.Spec, jobID string) (func(r int) []string, error) {
	if spec.Hosts == "" {
		return func(r int) []string {
			return []string{"LOCAL_RANK=" + strconv.Itoa(r), "LOCAL_WORLD_SIZE=" + strconv.Itoa(spec.NP)}
		}, nil
	}
	hostOf, err := job.HostsOf(spec.Hosts, spec.NP)
	if err != nil {
		return nil, err
	}
	first, size := map[int]int{}, map[int]int{} // per host: its first rank, its ranks
	for r, h := range hostOf {
		if _, ok := first[h]; !ok {
			first[h] = r
		}
		size[h]++
	}
	return func(r int) []string {
		h := hostOf[r]
		return []string{
			transport.EnvHostID + "=" + jobID + "/host" + strconv.Itoa(h),
			"LOCAL_RANK=" + strconv.Itoa(r-first[h]), "LOCAL_WORLD_SIZE=" + strconv.Itoa(size[h]),
		}
	}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
