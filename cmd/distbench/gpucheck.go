package main

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/harness/gpucheck"
)

func newGPUCheckCmd(stdout io.Writer) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "gpu-check",
		Short: "Say which CUDA runtime, driver, NCCL and NVML a run here loads, from where, and the GPUs they see",
		Long: `gpu-check loads what a GPU run loads (the CUDA runtime and the driver, NCCL, NVML),
found as a run finds them: the variables DISTBENCH_CUDART_LIB, DISTBENCH_NCCL_LIB and
DISTBENCH_NVML_LIB when set, else the system's library path, the driver's directories,
CUDA toolkits (CUDA_HOME, /usr/local/cuda*) and the NVIDIA wheels of Python
environments (VIRTUAL_ENV, the python on PATH). It prints each library's file, where it
was found and its version, the GPUs the runtime sees (named by NVML), the GPU this
process would use as the rank its launcher's variables name, and one line for each
thing missing. Exit status 0 when nothing is missing, 1 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r := gpucheck.Check()
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else if err := r.WriteText(stdout); err != nil {
				return err
			}
			if !r.OK() {
				return exitError{1}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}
