package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/harness/doctor"
	"github.com/distbench/distbench/harness/gpucheck"
)

func newDoctorCmd(stdout io.Writer) *cobra.Command {
	var (
		timeout    time.Duration
		localRanks int
		gpu        bool
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Preflight: what would keep a job from starting, one line per problem",
		Long: `doctor checks, in a few seconds, what makes distributed jobs hang or fail at
start. Run it under the same launcher and environment as the job: each process
checks the job's secret (DISTBENCH_TOKEN), the interface it would bind, /dev/shm,
its open-file and process limits (and the GPU libraries with --gpu); then every
rank reports to rank 0 at MASTER_ADDR:MASTER_PORT, where the job's store will be,
and rank 0 compares them: the same secret (by an HMAC, never the secret itself),
the interfaces they bind, their clocks. Rank 0 prints one line per problem, each
naming the fix; exit 0 when the job would start, 1 when not.`,
		Example: `  distbench doctor
  export DISTBENCH_TOKEN=$(openssl rand -hex 16)
  mpirun -n 4 -x DISTBENCH_TOKEN -x MASTER_ADDR=$(hostname) -x MASTER_PORT=29500 distbench doctor
  torchrun --nproc_per_node 4 --no_python distbench doctor`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < time.Second {
				return usagef("--timeout %v: too short (accepted: 1s or more)", timeout)
			}
			o := doctor.Options{Timeout: timeout, LocalRanks: localRanks}
			if gpu {
				o.GPU = func() []string { return gpucheck.Check().Problems }
			}
			r := doctor.Run(cmd.Context(), o)
			for _, p := range r.Problems {
				fmt.Fprintln(stdout, p)
			}
			if r.Rank != 0 {
				if len(r.Problems) > 0 {
					return exitError{1}
				}
				return nil
			}
			for _, n := range r.Notes {
				fmt.Fprintln(stdout, "# "+n)
			}
			if len(r.Problems) > 0 {
				fmt.Fprintf(stdout, "# doctor: %d problem(s) across %d rank(s)\n", len(r.Problems), r.Size)
				return exitError{1}
			}
			fmt.Fprintf(stdout, "# doctor: no problem found across %d rank(s): the job would start\n", r.Size)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&timeout, "timeout", 10*time.Second, "how long rank 0 waits to hear from every rank")
	fl.IntVar(&localRanks, "local-ranks", 0, "ranks the job runs on this host, for /dev/shm and limits (default: LOCAL_WORLD_SIZE, else 1)")
	fl.BoolVar(&gpu, "gpu", false, "check the GPU libraries too (CUDA runtime, driver, NCCL, NVML), as gpu-check does")
	return cmd
}
