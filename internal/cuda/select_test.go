package cuda

import "testing"

// TestPlace: the GPU follows the launcher's local rank, as torchrun, Open
// MPI, MPICH and Slurm set it, modulo the GPUs seen (which
// CUDA_VISIBLE_DEVICES has already narrowed), not the global rank.
func TestPlace(t *testing.T) {
	tests := []struct {
		name        string
		rank, count int
		env         map[string]string
		want        Placement
	}{
		{"no launcher: the rank", 5, 4, nil, Placement{1, 5, "rank"}},
		{"torchrun, second node", 9, 8, map[string]string{"RANK": "9", "LOCAL_RANK": "1"}, Placement{1, 1, "LOCAL_RANK"}},
		{"torchrun, more ranks than GPUs: shared", 3, 2, map[string]string{"RANK": "3", "LOCAL_RANK": "3"}, Placement{1, 3, "LOCAL_RANK"}},
		{"one GPU visible (CUDA_VISIBLE_DEVICES=3): ordinal 0", 1, 1, map[string]string{"RANK": "1", "LOCAL_RANK": "1", "CUDA_VISIBLE_DEVICES": "3"}, Placement{0, 1, "LOCAL_RANK"}},
		{"mpirun", 6, 4, map[string]string{"OMPI_COMM_WORLD_RANK": "6", "OMPI_COMM_WORLD_LOCAL_RANK": "2"}, Placement{2, 2, "OMPI_COMM_WORLD_LOCAL_RANK"}},
		{"MPICH", 6, 4, map[string]string{"PMI_RANK": "6", "MPI_LOCALRANKID": "3"}, Placement{3, 3, "MPI_LOCALRANKID"}},
		{"srun", 6, 4, map[string]string{"SLURM_PROCID": "6", "SLURM_LOCALID": "2"}, Placement{2, 2, "SLURM_LOCALID"}},
		{"torchrun under srun: torchrun's worker, not the agent's step",
			5, 4, map[string]string{"RANK": "5", "LOCAL_RANK": "1", "SLURM_PROCID": "0", "SLURM_LOCALID": "0"}, Placement{1, 1, "LOCAL_RANK"}},
		{"mpirun inside a Slurm allocation", 3, 4, map[string]string{"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_LOCAL_RANK": "3", "SLURM_PROCID": "0", "SLURM_LOCALID": "0"}, Placement{3, 3, "OMPI_COMM_WORLD_LOCAL_RANK"}},
		{"the variables describe another rank (ranks in one process)", 2, 4, map[string]string{"RANK": "0", "LOCAL_RANK": "0"}, Placement{2, 2, "rank"}},
		{"local rank without a global one", 2, 4, map[string]string{"LOCAL_RANK": "3"}, Placement{3, 3, "LOCAL_RANK"}},
		{"garbled local rank: the next launcher's, or the rank", 2, 4, map[string]string{"LOCAL_RANK": "x"}, Placement{2, 2, "rank"}},
		{"no GPU count: as one", 2, 0, nil, Placement{0, 2, "rank"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Place(tc.rank, tc.count, func(k string) string { return tc.env[k] })
			if got != tc.want {
				t.Errorf("Place(%d, %d) = %+v, want %+v", tc.rank, tc.count, got, tc.want)
			}
		})
	}
}
