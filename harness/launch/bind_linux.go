//go:build linux

package launch

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// allowedCPUs lists the CPUs this process may run on (its affinity mask,
// which a container's cpuset narrows), in order; nil if unknown.
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// bindToCPUs pins every thread of this process to cpus ("2,3"). Threads the
// Go runtime starts later inherit the mask from the thread that starts them.
func bindToCPUs(list string) error {
	var set unix.CPUSet
	for _, f := range strings.Split(list, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 0 {
			return fmt.Errorf("%s=%q: want CPU numbers separated by commas", EnvCPUs, list)
		}
		set.Set(c)
	}
	// A thread started while the first pass runs, by a thread not yet
	// bound, inherits the old mask: a second pass catches it.
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("%s: %w", EnvCPUs, err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("%s=%s: binding thread %d: %w", EnvCPUs, list, tid, err)
			}
		}
	}
	return nil
}
