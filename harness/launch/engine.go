package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Engines are the job engines distbench can start its ranks through for the
// user (`--launcher mpirun`, `--launcher srun`): it builds the engine's
// command line, runs it, and forwards an interrupt. Every rank runs
// `distbench ... --launcher env` and finds its rank in the engine's
// environment.
func Engines() []string { return []string{"mpirun", "srun"} }

// Engine is one engine's run of np ranks of Self with Args.
type Engine struct {
	Name string   // "mpirun" or "srun"
	NP   int      // ranks
	Self string   // the distbench binary every rank runs
	Args []string // its arguments, already saying --launcher env
	// Extra goes to the engine before the program (a hostfile, a
	// partition): --launcher-arg, repeatable.
	Extra []string
	// Getenv reads the environment the engine is started from: a
	// MASTER_ADDR or MASTER_PORT set there is kept.
	Getenv func(string) string
	// MPI is the mpirun on PATH, which speaks its own dialect: OpenMPI
	// (the default) or MPICH (Hydra). Run asks mpirun --version.
	MPI MPIFlavor
}

// MPIFlavor is an mpirun's implementation, whose options differ: Open MPI
// exports a variable with -x VAR and needs --oversubscribe for more ranks
// than cores, and --allow-run-as-root; MPICH's Hydra exports with
// -genvlist VAR,VAR and needs neither.
type MPIFlavor int

const (
	OpenMPI MPIFlavor = iota
	MPICH
)

// mpiFlavor asks the mpirun at path which it is; one that does not say is
// taken for Open MPI, the most common.
func mpiFlavor(ctx context.Context, path string) MPIFlavor {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if v := string(out); strings.Contains(v, "HYDRA") || strings.Contains(v, "MPICH") {
		return MPICH
	}
	return OpenMPI
}

// Command returns the engine's command line and the environment it runs
// with. The rendezvous (MASTER_ADDR, MASTER_PORT) and a fresh job token are
// put in that environment and exported by name, so the token never appears
// on the printed line.
//
// MASTER_ADDR defaults to this host's name under mpirun, where Open MPI
// and MPICH place rank 0 on the first host of the allocation (this one, unless a
// hostfile says otherwise: then set MASTER_ADDR to its first host). Under
// srun it is left to the ranks, which take the first host of
// SLURM_STEP_NODELIST.
func (e Engine) Command() (argv, env []string, err error) {
	getenv := e.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if e.NP < 1 {
		return nil, nil, fmt.Errorf("%s: --np %d: must be at least 1", e.Name, e.NP)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, nil, err
	}
	// Open MPI's odls_base_sigkill_timeout is left at its 1s: an abort
	// (Ctrl-C, or a rank exiting with an error) sends SIGCONT, then SIGTERM
	// and SIGKILL that timeout apart, and mpirun forwards nothing and ends
	// nothing meanwhile. At 30s a job whose rank was stopped ended a minute
	// after every survivor's diagnosis; rank 0's records are on disk as it
	// measures them, so the 1s after SIGTERM loses at most the final marker.
	env = []string{EnvToken + "=" + hex.EncodeToString(secret)}
	addr, port := getenv("MASTER_ADDR"), getenv("MASTER_PORT")
	if port == "" {
		if port, err = freePort(); err != nil {
			return nil, nil, err
		}
		env = append(env, "MASTER_PORT="+port)
	}
	exported := []string{EnvToken, "MASTER_PORT"}
	switch e.Name {
	case "mpirun":
		if addr == "" {
			if addr, err = os.Hostname(); err != nil {
				return nil, nil, err
			}
			env = append(env, "MASTER_ADDR="+addr)
		}
		exported = append(exported, "MASTER_ADDR")
		argv = []string{"mpirun", "-n", strconv.Itoa(e.NP)}
		if e.MPI == MPICH {
			argv = append(argv, "-genvlist", strings.Join(exported, ","))
			break
		}
		if os.Geteuid() == 0 {
			// Open MPI refuses root without it; containers often are root.
			argv = append(argv, "--allow-run-as-root")
		}
		if len(e.Extra) == 0 && getenv("SLURM_JOB_ID") == "" && e.NP > runtime.NumCPU() {
			// On this host alone, Open MPI's slots are its cores; more
			// ranks than cores is what the local launcher runs too.
			argv = append(argv, "--oversubscribe")
		}
		for _, v := range exported {
			argv = append(argv, "-x", v)
		}
	case "srun":
		if addr != "" {
			exported = append(exported, "MASTER_ADDR")
		}
		argv = []string{"srun", "-n", strconv.Itoa(e.NP), "--export=ALL," + strings.Join(exported, ",")}
	default:
		return nil, nil, fmt.Errorf("unknown engine %q (accepted: %s)", e.Name, strings.Join(Engines(), ", "))
	}
	argv = append(argv, e.Extra...)
	argv = append(argv, e.Self)
	argv = append(argv, e.Args...)
	return argv, env, nil
}

// freePort is a TCP port free on this host now, for rank 0's store.
func freePort() (string, error) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// ExitError is an engine that ran and failed: its exit status, to pass on.
type ExitError struct {
	Engine string
	Code   int
}

func (e *ExitError) Error() string { return fmt.Sprintf("%s exited with status %d", e.Engine, e.Code) }

// Run runs the engine, its output to stdout and stderr, having printed the
// command line to stderr. When ctx ends (Ctrl-C), the engine gets SIGTERM,
// which mpirun and srun both forward to the ranks (they stop, and rank 0
// keeps what it measured; srun takes a single SIGINT as a request for
// status), then SIGKILL after a grace period.
func (e Engine) Run(ctx context.Context, stdout, stderr io.Writer) error {
	argv, env, err := e.Command()
	if err != nil {
		return err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("--launcher %s: %s not found on PATH (install it, or run the engine yourself with --launcher env)", e.Name, argv[0])
	}
	if e.Name == "mpirun" {
		if e.MPI = mpiFlavor(ctx, path); e.MPI == MPICH {
			if argv, env, err = e.Command(); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(stderr, "distbench: running %s\n", strings.Join(argv, " "))
	cmd := exec.Command(path, argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		werr = stop(cmd, done)
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		return &ExitError{Engine: e.Name, Code: max(ee.ExitCode(), 1)}
	}
	return werr
}

// stop interrupts the engine, and insists if it does not end.
func stop(cmd *exec.Cmd, done <-chan error) error {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Kill} {
		cmd.Process.Signal(sig)
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
		}
	}
	return <-done
}
