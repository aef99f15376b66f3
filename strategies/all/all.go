// Package all registers every strategy distbench ships; the CLI imports it.
package all

import (
	_ "github.com/distbench/distbench/strategies/nccl"
	_ "github.com/distbench/distbench/strategies/ps"
	_ "github.com/distbench/distbench/strategies/ring"
	_ "github.com/distbench/distbench/strategies/tree"
)
