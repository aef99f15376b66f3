package launch

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/distbench/distbench/harness/job"
)

// Environment variables through which a launcher hands a worker its job.
// Rank and world size come from the launcher's own variables (RANK and
// WORLD_SIZE from the local launcher or torchrun, OMPI_COMM_WORLD_* from
// mpirun, SLURM_* from srun); see rendezvous.FromEnv.
const (
	EnvSpec        = "DISTBENCH_SPEC"         // the Spec as JSON
	EnvInit        = "DISTBENCH_INIT"         // rendezvous URL; default env://
	EnvJobID       = "DISTBENCH_JOB_ID"       // keeps jobs sharing a store apart
	EnvToken       = "DISTBENCH_TOKEN"        // hex job secret for the handshakes of the mesh, the store and servers
	EnvServerIndex = "DISTBENCH_SERVER_INDEX" // set for a strategy's server process
	EnvServerCount = "DISTBENCH_SERVER_COUNT"
	EnvListenHost  = "DISTBENCH_LISTEN_HOST" // interface to bind; default: see ListenHost
	EnvCPUProfile  = "DISTBENCH_CPUPROFILE"  // write each process's CPU profile to PREFIX.rankN.pprof
	EnvSpin        = "DISTBENCH_SPIN"        // transport busy-read budget, e.g. 50us; see transport.TCPOptions.Spin
	EnvCPUs        = "DISTBENCH_CPUS"        // CPUs to bind this process to, e.g. "2,3"; "none" binds nothing
	// EnvLauncherFD is set by the local launcher: an inherited pipe whose
	// write end only the launcher holds, so that its end of file means the
	// launcher is gone, however it died; the process then exits.
	EnvLauncherFD = "DISTBENCH_LAUNCHER_FD"
)

// MinTokenBytes is the shortest job secret accepted: 128 bits, which no
// stranger guesses (`openssl rand -hex 16`).
const MinTokenBytes = 16

// TokenHowTo is what a user does about a missing or unusable token.
const TokenHowTo = "export DISTBENCH_TOKEN=$(openssl rand -hex 16) before starting the job, and pass it to every rank " +
	"(mpirun -x DISTBENCH_TOKEN; srun, torchrun and a Kubernetes Secret pass the environment)"

// ErrNoToken is a rank under an external launcher without a usable job
// secret: it refuses to start rather than run on a secret a stranger could
// guess. No external launcher gives its processes one: Slurm's job id, Open
// MPI's and PMIx's namespaces and torchrun's run id are all guessable or
// readable by other users, and torchrun's store has no secret at all.
var ErrNoToken = errors.New("no job secret")

// Token is the job's secret from DISTBENCH_TOKEN: at least MinTokenBytes
// bytes, in hex. The error never quotes the value: a malformed secret may
// still be most of a real one.
func Token(getenv func(string) string) ([]byte, error) {
	raw := strings.TrimSpace(getenv(EnvToken))
	if raw == "" {
		return nil, fmt.Errorf("%w: %s is not set, and no launcher provides a secret strangers cannot learn; %s", ErrNoToken, EnvToken, TokenHowTo)
	}
	b, err := hex.DecodeString(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %s is not hex (accepted: at least %d hex digits); %s", ErrNoToken, EnvToken, 2*MinTokenBytes, TokenHowTo)
	case len(b) < MinTokenBytes:
		return nil, fmt.Errorf("%w: %s has %d bytes, too few to be unguessable (accepted: at least %d, %d hex digits); %s",
			ErrNoToken, EnvToken, len(b), MinTokenBytes, 2*MinTokenBytes, TokenHowTo)
	}
	return b, nil
}

// RecordPrefix starts each line on which rank 0 writes a record to stdout.
const RecordPrefix = "distbench-record "

// Spin is the transport's busy-read budget: DISTBENCH_SPIN when set (the
// local launcher sets it when the job's processes fit the machine's cores),
// else none, since spinning on an oversubscribed machine only takes cores
// from the peers being waited for.
func Spin(getenv func(string) string) time.Duration {
	d, err := time.ParseDuration(getenv(EnvSpin))
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// specFromEnv reads and validates the spec the launcher put in EnvSpec.
func specFromEnv(getenv func(string) string) (*job.Spec, error) {
	raw := getenv(EnvSpec)
	if raw == "" {
		return nil, fmt.Errorf("%s is not set: workers are started by `distbench run` or `distbench sweep`, or by a launcher that sets it", EnvSpec)
	}
	var spec job.Spec
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

// ListenHost is the address a rank's listeners bind: DISTBENCH_LISTEN_HOST
// when set; else, under an engine whose MASTER_ADDR is another host, the
// local address of the route to it (the interface the job's traffic
// leaves by, as torch's c10d finds its own); else loopback, where the
// local launcher's ranks all are.
func ListenHost(getenv func(string) string) string {
	if h := strings.TrimSpace(getenv(EnvListenHost)); h != "" {
		return h
	}
	master := strings.TrimSpace(getenv("MASTER_ADDR"))
	if master == "" || master == "localhost" {
		return "127.0.0.1"
	}
	if ip := net.ParseIP(master); ip != nil && ip.IsLoopback() {
		return "127.0.0.1"
	}
	// A UDP "connection" sends nothing: it only asks the kernel which
	// local address routes to the master.
	c, err := net.DialTimeout("udp", net.JoinHostPort(master, "9"), 2*time.Second)
	if err != nil {
		return "127.0.0.1"
	}
	defer c.Close()
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && !a.IP.IsUnspecified() {
		return a.IP.String()
	}
	return "127.0.0.1"
}
