package harness

import (
	"fmt"
	"strings"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/internal/rendezvous"
)

// Under an engine (mpirun, srun, torchrun, a Kubernetes Job) every process
// is started by the engine, a strategy's server processes too: a parameter
// server's dedicated servers take the engine's last ranks, after the
// workers, as the local launcher starts them after its workers. So a job of
// np workers and k servers is one engine launch of np+k ranks.

// ServerProcesses is how many server processes strategy runs beside np
// workers with opts (0 for a strategy without servers).
func ServerProcesses(strategy string, opts map[string]string, np int) (int, error) {
	st, err := collective.Lookup(strategy)
	if err != nil {
		return 0, err
	}
	sv, ok := st.(driver.Servers)
	if !ok {
		return 0, nil
	}
	return sv.ServerProcesses(opts, np)
}

// EngineNP is the number of workers of a job under `--launcher env`: the
// engine's world size less the server processes the strategy runs beside
// the workers. np is --np, and explicit says the user gave it: np workers
// and their servers must then be the engine's world size, else one error
// naming both.
func EngineNP(getenv func(string) string, strategy string, opts map[string]string, np int, explicit bool) (int, error) {
	info, err := rendezvous.FromEnv(getenv)
	if err != nil {
		return 0, err
	}
	world := info.Size
	if explicit {
		k, err := ServerProcesses(strategy, opts, np)
		switch {
		case err != nil:
			return 0, err
		case np+k == world:
			return np, nil
		case k == 0:
			return 0, fmt.Errorf("--np %d, but %s started %d ranks: under --launcher env the world size is the launcher's; leave --np out or give --np %d",
				np, info.Launcher, world, world)
		}
		return 0, fmt.Errorf("--np %d with %s's %d server processes needs %d ranks, but %s started %d: start %d, or leave --np out",
			np, strategy, k, np+k, info.Launcher, world, np+k)
	}
	var tried []string
	for n := world; n >= 1; n-- {
		k, err := ServerProcesses(strategy, opts, n)
		if err != nil {
			return 0, err
		}
		if n+k == world {
			return n, nil
		}
		if len(tried) < 3 {
			tried = append(tried, fmt.Sprintf("np %d needs %d", n, n+k))
		}
	}
	return 0, fmt.Errorf("%s started %d ranks, but no number of workers with %s's server processes makes %d (%s, ...): start a number that does, or give --np",
		info.Launcher, world, strategy, world, strings.Join(tried, ", "))
}

// engineServer says whether this process, started by an engine, is one of
// spec's server processes (an engine rank after the np workers), and if so
// which, of how many. workers is the world size a worker must join with:
// spec.NP when the engine also started servers, else -1 (the engine's).
func engineServer(spec *job.Spec, getenv func(string) string) (index, count, workers int, err error) {
	info, err := rendezvous.FromEnv(getenv)
	if err != nil {
		// Not under an engine: the rendezvous says why, or needs nothing.
		return -1, 0, -1, nil
	}
	k, err := ServerProcesses(spec.Strategy, spec.Options, spec.NP)
	if err != nil || k == 0 || info.Size != spec.NP+k {
		return -1, 0, -1, err
	}
	if info.Rank >= spec.NP {
		return info.Rank - spec.NP, k, spec.NP, nil
	}
	return -1, k, spec.NP, nil
}
