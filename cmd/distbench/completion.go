package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/harness/plan"
	"github.com/distbench/distbench/internal/linkspec"
)

// completedFlags are the flags whose values come from a fixed set, with the
// set: the registries, not copies of them, so a new strategy or collective
// completes without a change here.
var completedFlags = map[string]func(c *cobra.Command, typed string) []string{
	"strategy": func(c *cobra.Command, typed string) []string {
		names := collective.Strategies()
		// A plan also takes "all", which makes sense alone.
		if c.Flags().Lookup("plan") != nil && !strings.Contains(typed, ",") {
			names = append(names, plan.AllStrategies)
		}
		return names
	},
	"collective": func(*cobra.Command, string) []string { return job.Collectives() },
	"dtype":      func(c *cobra.Command, _ string) []string { return withAll(c, dtypeNames()) },
	"op": func(c *cobra.Command, _ string) []string {
		var names []string
		for _, o := range collective.Ops() {
			names = append(names, o.String())
		}
		return withAll(c, names)
	},
	"average": func(*cobra.Command, string) []string { return []string{"0", "1", "2", "3"} },
	// A link is also RATE[,LATENCY]; only its names can be offered.
	"link":      func(*cobra.Command, string) []string { return append(linkspec.LinkPresets(), "none") },
	"transport": func(*cobra.Command, string) []string { return linkspec.Transports },
	"device": func(*cobra.Command, string) []string {
		return []string{collective.CPU.String(), collective.CUDA.String()}
	},
}

// withAll adds run's "all" (nccl-tests' -d all, -o all) to names.
func withAll(c *cobra.Command, names []string) []string {
	if c.Name() == "run" {
		names = append(names, "all")
	}
	return names
}

// registerCompletions offers those values to the shell (cobra's completion
// command) on every command that has one of the flags, so that no command
// is forgotten when it gains one.
func registerCompletions(c *cobra.Command) {
	for name, values := range completedFlags {
		f := c.Flags().Lookup(name)
		if f == nil {
			continue
		}
		list := f.Value.Type() == "stringSlice" // comma-separated
		c.RegisterFlagCompletionFunc(name, func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return complete(values(c, toComplete), toComplete, list), cobra.ShellCompDirectiveNoFileComp
		})
	}
	for _, sub := range c.Commands() {
		registerCompletions(sub)
	}
}

// complete returns the values that start with what was typed; in a list,
// with what was typed, it completes the last element and leaves out those
// already given.
func complete(values []string, typed string, list bool) []string {
	var before string
	var given []string
	if list {
		if i := strings.LastIndexByte(typed, ','); i >= 0 {
			before, typed = typed[:i+1], typed[i+1:]
			given = strings.Split(before[:i], ",")
		}
	}
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, typed) && !slices.Contains(given, v) {
			out = append(out, before+v)
		}
	}
	return out
}
