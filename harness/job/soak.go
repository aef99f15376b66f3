package job

import (
	"fmt"
	"time"
)

// SoakConfig makes a launch a soak: checked allreduces of varied sizes,
// dtypes and ops, back to back for Duration, watching every rank's
// goroutines and memory for growth. A soak answers "does it stay right and
// stay small over time", which a point measured for a second cannot.
type SoakConfig struct {
	Duration time.Duration `json:"duration"`
	// MaxBytes is the largest tensor; sizes are drawn log-uniformly from
	// one element up to it, so that small and odd sizes dominate.
	MaxBytes int64 `json:"max_bytes"`
	// Seed fixes the sequence of sizes, dtypes and ops (the same on every
	// rank: they must issue the same operations).
	Seed uint64 `json:"seed"`
	// Checkpoints is how many times, evenly over Duration after the
	// warm-up, every rank records its goroutines and memory.
	Checkpoints int `json:"checkpoints"`
}

// Validate checks the config; errors name the bad value and what is accepted.
func (c *SoakConfig) Validate() error {
	if c.Duration <= 0 {
		return fmt.Errorf("soak duration %v: must be positive", c.Duration)
	}
	if c.MaxBytes < 8 || c.MaxBytes > 1<<30 {
		return fmt.Errorf("soak max bytes %d: must be from 8 B to 1 GiB", c.MaxBytes)
	}
	if c.Checkpoints < 2 || c.Checkpoints > 1000 {
		return fmt.Errorf("soak checkpoints %d: must be from 2 to 1000", c.Checkpoints)
	}
	return nil
}
