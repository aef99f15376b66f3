package plan

import (
	"os"

	"github.com/distbench/distbench/strategies/nccl"
)

// The goldens must not depend on whether this machine has NCCL: point the
// nccl strategy at a library that exists nowhere, so that it is unavailable
// everywhere, with the same reason, before any test asks.
func init() { os.Setenv(nccl.EnvNCCLLib, "/nonexistent/libnccl.so.2") }
