// Package peers runs reference implementations of allreduce beside
// distbench's own strategies: Open MPI (through mpi4py) and
// torch.distributed's gloo backend. Each is a small script of ours, embedded
// in the binary, that measures as the harness does (warm-up, timed
// iterations, the slowest rank's time per iteration, an exact #wrong count)
// and prints distbench records; the statistics and bus bandwidth are
// computed here, by results.Fill, so that peers and strategies are
// summarised by the same code and share the report's plots.
//
// A peer that is not installed is not an error to hide: [Available] says
// why and how to install it (Debian's openmpi-bin and python3-mpi4py, or
// python3-torch), and the sweep records or notes it as skipped.
//
// The scripts also run by hand, without distbench:
//
//	mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self -n 2 \
//	    /usr/bin/python3 peers/mpi_allreduce.py --sizes 4K,1M,16M --check
//	/usr/bin/python3 peers/gloo_allreduce.py --np 2 --sizes 4K,1M,16M --check
package peers

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/distbench/distbench/results"
)

//go:embed mpi_allreduce.py gloo_allreduce.py
var scripts embed.FS

// RecordPrefix starts each line on which a script prints a record; the same
// as launch.RecordPrefix, so that one grep finds both.
const RecordPrefix = "distbench-record "

// Job is one run of a peer: every size at one world size, float32 sum
// allreduce in place.
type Job struct {
	NP     int
	Sizes  []int64 // bytes, multiples of 4
	Iters  int
	Warmup int
	Check  bool
	// Timeout bounds each operation (gloo enforces it itself; MPI has no
	// such knob). The whole run is bounded by Timeout per size plus a
	// minute for start-up, so that a hung peer cannot stall a sweep.
	Timeout time.Duration
	// TimeBudget caps each size's timed iterations as job.Spec's does.
	TimeBudget time.Duration
}

type peer struct {
	script  string
	modules string // what its python must import
	needs   string // a program it needs on PATH, "" for none
	install string
	// command is the program and arguments that run script for job.
	command func(python, script string, job Job) (string, []string)
}

var peers = map[string]peer{
	"mpi": {
		script: "mpi_allreduce.py", modules: "mpi4py, numpy", needs: "mpirun",
		install: "apt-get install openmpi-bin python3-mpi4py",
		command: func(python, script string, job Job) (string, []string) {
			// tcp,self: loopback TCP like distbench's own transport, not
			// shared memory, so the comparison is of algorithms and
			// software stacks over the same kind of link.
			args := []string{"--allow-run-as-root", "--oversubscribe", "--mca", "btl", "tcp,self",
				"-n", strconv.Itoa(job.NP), python, script}
			return "mpirun", append(args, scriptArgs(job)...)
		},
	},
	"gloo": {
		script: "gloo_allreduce.py", modules: "torch", install: "apt-get install python3-torch",
		command: func(python, script string, job Job) (string, []string) {
			args := append([]string{script, "--np", strconv.Itoa(job.NP)}, scriptArgs(job)...)
			if job.Timeout > 0 {
				args = append(args, "--timeout", strconv.FormatFloat(job.Timeout.Seconds(), 'f', -1, 64))
			}
			return python, args
		},
	},
}

func scriptArgs(job Job) []string {
	sizes := make([]string, len(job.Sizes))
	for i, s := range job.Sizes {
		sizes[i] = strconv.FormatInt(s, 10)
	}
	args := []string{"--sizes", strings.Join(sizes, ","), "--iters", strconv.Itoa(job.Iters), "--warmup", strconv.Itoa(job.Warmup)}
	if job.Check {
		args = append(args, "--check")
	}
	if job.TimeBudget > 0 {
		args = append(args, "--time-budget", strconv.FormatFloat(job.TimeBudget.Seconds(), 'f', -1, 64))
	}
	return args
}

// Names lists the peers, sorted.
func Names() []string {
	var names []string
	for n := range peers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// UnavailableError says that a peer cannot run here, and how to fix that.
type UnavailableError struct {
	Peer, Reason, Install string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("peer %s is not installed here: %s (install: %s)", e.Peer, e.Reason, e.Install)
}

// Available reports whether the peer can run here: nil, or an
// *UnavailableError naming what is missing and the install line.
func Available(name string) error {
	p, ok := peers[name]
	if !ok {
		return fmt.Errorf("unknown peer %q (accepted: %s)", name, strings.Join(Names(), ", "))
	}
	if _, err := find(p); err != nil {
		return &UnavailableError{Peer: name, Reason: err.Error(), Install: p.install}
	}
	return nil
}

var (
	pythonMu    sync.Mutex
	pythonFound = map[string]pythonResult{}
)

type pythonResult struct {
	path string
	err  error
}

// find returns the python that can import p's modules. Debian's packages
// install into /usr/bin/python3's path, which a pyenv or virtualenv python3
// first on PATH does not see, so /usr/bin/python3 is asked first.
func find(p peer) (string, error) {
	if p.needs != "" {
		if _, err := exec.LookPath(p.needs); err != nil {
			return "", fmt.Errorf("no %s on PATH", p.needs)
		}
	}
	pythonMu.Lock()
	defer pythonMu.Unlock()
	if r, ok := pythonFound[p.modules]; ok {
		return r.path, r.err
	}
	candidates := []string{"/usr/bin/python3"}
	if py, err := exec.LookPath("python3"); err == nil && py != candidates[0] {
		candidates = append(candidates, py)
	}
	r := pythonResult{err: fmt.Errorf("no python3 can import %s", p.modules)}
	for _, py := range candidates {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := exec.CommandContext(ctx, py, "-c", "import "+p.modules).Run()
		cancel()
		if err == nil {
			r = pythonResult{path: py}
			break
		}
	}
	pythonFound[p.modules] = r
	return r.path, r.err
}

// PointID is the Record.Point of a peer's point, stable across runs.
func PointID(name string, np int, bytes int64) string {
	return fmt.Sprintf("allreduce/peer=%s/np=%d/bytes=%d/float32/sum/inplace=true", name, np, bytes)
}

// Skeleton is the record of a peer's point without measurements.
func Skeleton(name string, np int, bytes int64) *results.Record {
	return &results.Record{
		Kind: results.KindCollective, Point: PointID(name, np, bytes), Peer: name, Collective: "allreduce",
		NP: np, Bytes: bytes, Count: bytes / 4, DType: "float32", Op: "sum", Root: -1, InPlace: true, Wrong: -1,
	}
}

// Run runs job through the named peer and emits one record per size as the
// script prints it. The peer's own output (Open MPI's warnings, Python
// tracebacks) goes to stderr. A record that does not match the job is an
// error, not a result.
func Run(ctx context.Context, name string, job Job, emit func(*results.Record) error, stderr io.Writer) error {
	p, ok := peers[name]
	if !ok {
		return fmt.Errorf("unknown peer %q (accepted: %s)", name, strings.Join(Names(), ", "))
	}
	if job.NP < 1 || len(job.Sizes) == 0 || job.Iters < 1 {
		return fmt.Errorf("peer %s: np %d, %d sizes, iters %d: nothing to run", name, job.NP, len(job.Sizes), job.Iters)
	}
	python, err := find(p)
	if err != nil {
		return &UnavailableError{Peer: name, Reason: err.Error(), Install: p.install}
	}
	dir, err := os.MkdirTemp("", "distbench-peer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src, _ := scripts.ReadFile(p.script)
	script := filepath.Join(dir, p.script)
	if err := os.WriteFile(script, src, 0o644); err != nil {
		return err
	}
	limit := time.Minute
	if job.Timeout > 0 {
		limit += job.Timeout * time.Duration(len(job.Sizes))
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	prog, args := p.command(python, script, job)
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1", "PYTHONUNBUFFERED=1")
	cmd.Stderr = stderr
	waited := killGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("peer %s: %w", name, err)
	}
	readErr := read(out, name, job, emit, stderr)
	if readErr != nil {
		cancel() // stop the peer: its records can no longer be kept
	}
	waitErr := cmd.Wait()
	waited()
	switch {
	case readErr != nil:
		return readErr
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("peer %s: still running after %v; killed", name, limit)
	case waitErr != nil:
		return fmt.Errorf("peer %s: %s: %w", name, filepath.Base(prog), waitErr)
	}
	return nil
}

// read turns the script's record lines into records; other lines are the
// peer's own output and are passed on.
func read(r io.Reader, name string, job Job, emit func(*results.Record) error, stderr io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	last := time.Now()
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), RecordPrefix)
		if !ok {
			fmt.Fprintf(stderr, "[%s] %s\n", name, sc.Text())
			continue
		}
		rec, err := decode([]byte(line), name, job)
		if err != nil {
			return err
		}
		now := time.Now()
		rec.StartedAt, rec.FinishedAt = last, now
		if rec.ElapsedSecs > 0 {
			rec.StartedAt = now.Add(-time.Duration(rec.ElapsedSecs * float64(time.Second)))
		}
		rec.ElapsedSecs = now.Sub(rec.StartedAt).Seconds()
		last = now
		if err := emit(rec); err != nil {
			return err
		}
	}
	return sc.Err()
}

func decode(line []byte, name string, job Job) (*results.Record, error) {
	var rec results.Record
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("peer %s: unreadable record: %w", name, err)
	}
	switch {
	case rec.Kind != results.KindCollective || rec.Peer != name || rec.Collective != "allreduce":
		return nil, fmt.Errorf("peer %s: a %s record of peer %q for %q, not an allreduce of %s", name, rec.Kind, rec.Peer, rec.Collective, name)
	case rec.NP != job.NP:
		return nil, fmt.Errorf("peer %s: a record for np %d in a run of np %d", name, rec.NP, job.NP)
	case !slices.Contains(job.Sizes, rec.Bytes):
		return nil, fmt.Errorf("peer %s: a record for %d bytes, which the job did not ask for", name, rec.Bytes)
	case len(rec.SamplesUs) == 0:
		return nil, fmt.Errorf("peer %s: the record for %d bytes has no samples", name, rec.Bytes)
	}
	sk := Skeleton(name, job.NP, rec.Bytes)
	sk.Iters, sk.Warmup, sk.Wrong, sk.ElapsedSecs = len(rec.SamplesUs), rec.Warmup, rec.Wrong, rec.ElapsedSecs
	if err := results.Fill(sk, rec.SamplesUs); err != nil {
		return nil, fmt.Errorf("peer %s: %w", name, err)
	}
	return sk, nil
}
