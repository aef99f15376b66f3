package cuda

import (
	"os"
	"strconv"
	"strings"
)

// localRankVars are the launchers' names for a process's rank among those
// on its host, each beside the global rank it describes, in the order
// internal/rendezvous reads launchers: torchrun's first, since torchrun run
// under srun or mpirun sets LOCAL_RANK for each worker while the outer
// variables describe its agent; then Open MPI's, MPICH's and Slurm's.
var localRankVars = [][2]string{
	{"LOCAL_RANK", "RANK"},
	{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_RANK"},
	{"MPI_LOCALRANKID", "PMI_RANK"},
	{"SLURM_LOCALID", "SLURM_PROCID"},
}

// Placement is the GPU a rank uses and why.
type Placement struct {
	Ordinal int    // among the GPUs the runtime sees (CUDA_VISIBLE_DEVICES's, where set)
	Local   int    // the rank's position on its host that Ordinal follows
	From    string // the variable Local came from, or "rank" where none applies
}

// Place chooses rank's GPU among count: its local rank, as the launcher
// that started this process set it, modulo count (ranks beyond the GPUs
// share them, which ring, tree and ps allow and NCCL refuses); the global
// rank modulo count where no launcher says, or where the variables
// describe another rank (several ranks in one process, as in tests).
// CUDA_VISIBLE_DEVICES needs nothing here: the runtime numbers only the
// GPUs it names, from 0.
func Place(rank, count int, getenv func(string) string) Placement {
	if count < 1 {
		count = 1
	}
	for _, v := range localRankVars {
		local, err := strconv.Atoi(strings.TrimSpace(getenv(v[0])))
		if err != nil || local < 0 {
			continue
		}
		if g := strings.TrimSpace(getenv(v[1])); g != "" && g != strconv.Itoa(rank) {
			continue
		}
		return Placement{Ordinal: local % count, Local: local, From: v[0]}
	}
	return Placement{Ordinal: rank % count, Local: rank, From: "rank"}
}

// DeviceFor is the GPU ordinal rank uses in this process (Place with the
// runtime's device count and this process's environment): the nccl
// strategy's communicator and --device cuda's buffers both follow it.
func DeviceFor(rank int) (int, error) {
	n, err := DeviceCount()
	if err != nil {
		return 0, err
	}
	return Place(rank, n, os.Getenv).Ordinal, nil
}
