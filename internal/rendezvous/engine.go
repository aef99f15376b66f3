package rendezvous

import (
	"context"
	"net"
	"strconv"
	"strings"

	"github.com/distbench/distbench/collective/driver"
)

// Where env:// finds its store when the engine does not say outright.
//
// torchrun sets MASTER_ADDR and MASTER_PORT. Slurm does not, but it names
// the step's hosts, and srun starts task 0 on the first of them, so under
// srun MASTER_ADDR defaults to the first host of SLURM_STEP_NODELIST (then
// SLURM_JOB_NODELIST, SLURM_NODELIST), and MASTER_PORT to
// SlurmPortBase + SLURM_JOB_ID mod 10000: a port in 15000..24999 that two
// jobs sharing a node are unlikely to share (the range PyTorch Lightning
// uses under Slurm). Open MPI and MPICH say nothing about hosts to their
// ranks, so there the variables must be passed, and the error says how.

// SlurmPortBase is the low end of the ports derived from SLURM_JOB_ID.
const SlurmPortBase = 15000

// slurmNodelists are Slurm's host-list variables, the step's first.
var slurmNodelists = []string{"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}

// detectLauncher names the launcher whose variables are set, or "".
func detectLauncher(get func(string) string) string {
	for _, l := range launchers {
		if get(l.rank) != "" || get(l.size) != "" || (l.sizeAlt != "" && get(l.sizeAlt) != "") {
			return l.name
		}
	}
	return ""
}

// resolveMaster fills info's MasterAddr and MasterPort from the engine's
// facts where the variables are unset, or says which variable to pass and
// how. info's store variables must have been read (readStoreVars).
func (info *EnvInfo) resolveMaster(get func(string) string) error {
	launcher := info.Launcher
	if launcher == "" {
		launcher = detectLauncher(get)
	}
	if launcher == "srun" {
		if info.MasterAddr == "" {
			for _, v := range slurmNodelists {
				if list := get(v); list != "" {
					host, err := FirstHost(list)
					if err != nil {
						return &EnvError{Var: v, Value: list, Problem: err.Error() + "; export MASTER_ADDR instead"}
					}
					info.MasterAddr = host
					break
				}
			}
		}
		if info.MasterPort == 0 {
			if v := get("SLURM_JOB_ID"); v != "" {
				id, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return &EnvError{Var: "SLURM_JOB_ID", Value: v, Problem: "not a job id (accepted: digits); export MASTER_PORT instead"}
				}
				info.MasterPort = SlurmPortBase + int(id%10000)
			}
		}
	}
	missing := ""
	switch {
	case info.MasterAddr == "":
		missing = "MASTER_ADDR"
	case info.MasterPort == 0:
		missing = "MASTER_PORT"
	default:
		return nil
	}
	return &EnvError{Var: missing, Problem: "not set; " + masterHelp(launcher)}
}

// masterHelp says how to give env:// its store under launcher.
func masterHelp(launcher string) string {
	const file = "or give every rank a store file on a filesystem all hosts share, DISTBENCH_INIT=file:///shared/path/job.store"
	switch launcher {
	case "mpirun":
		return "Open MPI tells its ranks no host of the job: pass the host of rank 0 and a free port to every rank, " +
			"mpirun -x MASTER_ADDR=$(hostname) -x MASTER_PORT=29500 ... (with $(hostname) the first host of the host list, " +
			"where rank 0 runs), " + strings.Replace(file, "DISTBENCH_INIT=", "-x DISTBENCH_INIT=", 1)
	case "mpiexec":
		return "MPICH tells its ranks no host of the job: pass the host of rank 0 and a free port to every rank, " +
			"mpiexec -genv MASTER_ADDR $(hostname) -genv MASTER_PORT 29500 ..., " +
			strings.Replace(file, "DISTBENCH_INIT=", "-genv DISTBENCH_INIT ", 1)
	case "srun":
		return "srun set neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST nor SLURM_JOB_ID, from which they default: " +
			"export MASTER_ADDR (the first host of the step) and MASTER_PORT, " + file
	}
	return "env:// needs MASTER_ADDR and MASTER_PORT: torchrun sets them; elsewhere export the address of rank 0's host " +
		"and a free port (in Kubernetes, a headless Service's name), " + file
}

// DialEnv connects a process that is not a rank (a strategy's server) to
// the store env:// names: torch's TCPStore where TORCHELASTIC_USE_AGENT_STORE
// says the launcher's agent hosts it, else the store rank 0 hosts, at
// MASTER_ADDR:MASTER_PORT or the engine's defaults for them.
func DialEnv(ctx context.Context, getenv func(string) string, o ClientOptions) (driver.Store, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	var info EnvInfo
	if err := info.readStoreVars(get); err != nil {
		return nil, err
	}
	if err := info.resolveMaster(get); err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(info.MasterAddr, strconv.Itoa(info.MasterPort))
	if info.AgentStore {
		return DialTorch(ctx, addr, TorchOptions{Timeout: o.Timeout, Prefix: agentPrefix(get)})
	}
	return Dial(ctx, addr, o)
}

// agentPrefix keeps distbench's keys in torchrun's agent store apart per
// run and per restart: torchrun restarts its workers (--max_restarts) with
// the same store, and TORCHELASTIC_RESTART_COUNT counts them, so a
// restarted job does not meet its dead predecessors' registrations.
func agentPrefix(get func(string) string) string {
	p := "/distbench/"
	if id := get("TORCHELASTIC_RUN_ID"); id != "" {
		p += id + "/"
	}
	if n := get("TORCHELASTIC_RESTART_COUNT"); n != "" {
		p += "restart-" + n + "/"
	}
	return p
}

// ResolveMaster fills MasterAddr and MasterPort where the launcher implies
// them (srun: the step's first host, a port from the job id), as env://
// does, or says which variable is missing and how to set it under this
// launcher. getenv is os.Getenv outside tests.
func (info *EnvInfo) ResolveMaster(getenv func(string) string) error {
	return info.resolveMaster(func(k string) string { return strings.TrimSpace(getenv(k)) })
}
