package rendezvous

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/distbench/distbench/collective"
)

// EnvInfo is what a launcher told this process through its environment.
type EnvInfo struct {
	// Launcher names the variables the rank came from: "torchrun" (RANK,
	// WORLD_SIZE, LOCAL_RANK; torchrun, torch.distributed.launch, and
	// anything that imitates them), "mpirun" (Open MPI's OMPI_COMM_WORLD_*),
	// "mpiexec" (MPICH's PMI_*), or "srun" (Slurm's SLURM_*).
	Launcher  string
	Rank      int
	Size      int
	LocalRank int // -1 when the launcher does not say
	// MasterAddr and MasterPort are MASTER_ADDR and MASTER_PORT, which
	// torchrun sets and env:// needs; "" and 0 when unset.
	MasterAddr string
	MasterPort int
	// AgentStore is TORCHELASTIC_USE_AGENT_STORE: the launcher already
	// hosts the store at MASTER_ADDR:MASTER_PORT, so rank 0 must not.
	AgentStore bool
}

// launcherVars are one launcher's names for rank, size and local rank.
type launcherVars struct {
	name              string
	rank, size, local string
	sizeAlt           string // an older name for size, read when size is unset
}

// launchers in order of precedence: torchrun run inside an srun or mpirun
// allocation sets RANK for its workers while the outer variables describe
// the agent, so torchrun's win.
var launchers = []launcherVars{
	{name: "torchrun", rank: "RANK", size: "WORLD_SIZE", local: "LOCAL_RANK"},
	{name: "mpirun", rank: "OMPI_COMM_WORLD_RANK", size: "OMPI_COMM_WORLD_SIZE", local: "OMPI_COMM_WORLD_LOCAL_RANK"},
	{name: "mpiexec", rank: "PMI_RANK", size: "PMI_SIZE", local: "MPI_LOCALRANKID"},
	{name: "srun", rank: "SLURM_PROCID", size: "SLURM_NTASKS", local: "SLURM_LOCALID", sizeAlt: "SLURM_NPROCS"},
}

const acceptedEnv = "accepted: RANK and WORLD_SIZE (torchrun), " +
	"OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE (Open MPI's mpirun), " +
	"PMI_RANK and PMI_SIZE (MPICH's mpiexec), SLURM_PROCID and SLURM_NTASKS (srun)"

// EnvError is a launcher variable that is missing or garbled.
type EnvError struct {
	Var     string // the variable, or "" when none of the accepted ones is set
	Value   string // its value, when set
	Problem string
}

func (e *EnvError) Error() string {
	switch {
	case e.Var == "":
		return "rendezvous: " + e.Problem
	case e.Value == "":
		return fmt.Sprintf("rendezvous: %s: %s", e.Var, e.Problem)
	}
	return fmt.Sprintf("rendezvous: %s=%q: %s", e.Var, e.Value, e.Problem)
}

// Is makes errors.Is(err, collective.ErrInvalid) true.
func (e *EnvError) Is(target error) bool { return target == collective.ErrInvalid }

// FromEnv reads rank, world size and local rank as torchrun, mpirun,
// mpiexec or srun set them, and MASTER_ADDR and MASTER_PORT if present.
// getenv is os.Getenv outside tests. A missing or garbled variable is an
// *EnvError naming it and what is accepted.
func FromEnv(getenv func(string) string) (EnvInfo, error) {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	info := EnvInfo{LocalRank: -1}

	var lv *launcherVars
	for i := range launchers {
		l := &launchers[i]
		if get(l.rank) != "" || get(l.size) != "" || (l.sizeAlt != "" && get(l.sizeAlt) != "") {
			lv = l
			break
		}
	}
	if lv == nil {
		return info, &EnvError{Problem: "no rank in the environment (" + acceptedEnv + ")"}
	}
	info.Launcher = lv.name

	sizeVar, sizeVal := lv.size, get(lv.size)
	if sizeVal == "" && lv.sizeAlt != "" && get(lv.sizeAlt) != "" {
		sizeVar, sizeVal = lv.sizeAlt, get(lv.sizeAlt)
	}
	switch {
	case sizeVal == "":
		return info, &EnvError{Var: lv.size, Problem: fmt.Sprintf("not set, though %s is (%s sets both; %s)", lv.rank, lv.name, acceptedEnv)}
	case get(lv.rank) == "":
		return info, &EnvError{Var: lv.rank, Problem: fmt.Sprintf("not set, though %s is (%s sets both; %s)", sizeVar, lv.name, acceptedEnv)}
	}
	size, err := strconv.Atoi(sizeVal)
	if err != nil || size < 1 {
		return info, &EnvError{Var: sizeVar, Value: sizeVal, Problem: "not a world size (accepted: an integer of at least 1)"}
	}
	rankVal := get(lv.rank)
	rank, err := strconv.Atoi(rankVal)
	if err != nil || rank < 0 || rank >= size {
		return info, &EnvError{Var: lv.rank, Value: rankVal,
			Problem: fmt.Sprintf("not a rank for %s=%d (accepted: an integer in 0..%d)", sizeVar, size, size-1)}
	}
	info.Rank, info.Size = rank, size
	if v := get(lv.local); v != "" {
		lr, err := strconv.Atoi(v)
		if err != nil || lr < 0 || lr >= size {
			return info, &EnvError{Var: lv.local, Value: v,
				Problem: fmt.Sprintf("not a local rank for %s=%d (accepted: an integer in 0..%d)", sizeVar, size, size-1)}
		}
		info.LocalRank = lr
	}

	return info, info.readStoreVars(get)
}

// readStoreVars reads MASTER_ADDR, MASTER_PORT and
// TORCHELASTIC_USE_AGENT_STORE, which env:// needs even when rank and size
// are given in Options.
func (info *EnvInfo) readStoreVars(get func(string) string) error {
	info.MasterAddr = get("MASTER_ADDR")
	if v := get("MASTER_PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			return &EnvError{Var: "MASTER_PORT", Value: v, Problem: "not a TCP port (accepted: an integer in 1..65535)"}
		}
		info.MasterPort = p
	}
	if v := get("TORCHELASTIC_USE_AGENT_STORE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return &EnvError{Var: "TORCHELASTIC_USE_AGENT_STORE", Value: v, Problem: "not a boolean (accepted: True, False, 1, 0)"}
		}
		info.AgentStore = b
	}
	return nil
}
