package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// nccl-tests compatibility: the flags of nccl-tests 2.19.6 (src/common.cu's
// getopt table) that run accepts beyond its own, and the program names
// (all_reduce_perf, ...) under which distbench behaves as `distbench run
// --collective ...`, so that command lines pasted from runbooks run.

// ncclPrograms maps nccl-tests' programs to distbench's collectives; ""
// marks a program distbench has no counterpart for.
var ncclPrograms = map[string]string{
	"all_reduce_perf":     "allreduce",
	"all_gather_perf":     "allgather",
	"broadcast_perf":      "broadcast",
	"reduce_perf":         "reduce",
	"reduce_scatter_perf": "reducescatter",
	"alltoall_perf":       "alltoall",
	"sendrecv_perf":       "sendrecv",
	"gather_perf":         "gather",
	"scatter_perf":        "scatter",
	"hypercube_perf":      "",
	"alltoallv_perf":      "",
}

// ncclProgramNames lists, sorted, the program names distbench answers to
// (`make perf-links` installs them).
func ncclProgramNames() []string {
	var out []string
	for name, coll := range ncclPrograms {
		if coll != "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// asNCCLProgram turns the command line of a binary named like one of
// nccl-tests' programs into distbench's: `all_reduce_perf -b 8 -e 128M`
// becomes `run --collective=allreduce` with nccl-tests' defaults, then
// `-b 8 -e 128M`. ok is false for
// any other name, and for a first argument that is not a flag (the
// launchers start a copy of the binary as `worker`, or `run`), which
// then runs as distbench's own command line.
func asNCCLProgram(argv0 string, args []string) (out []string, ok bool, err error) {
	// nccl-tests built with MPI=1 names its programs all_reduce_perf_mpi.
	prog := strings.TrimSuffix(filepath.Base(argv0), "_mpi")
	coll, known := ncclPrograms[prog]
	if !known || (len(args) > 0 && !strings.HasPrefix(args[0], "-")) {
		return args, false, nil
	}
	if coll == "" {
		return nil, true, fmt.Errorf("%s: distbench has no counterpart of this nccl-tests program (accepted: %s)", prog, strings.Join(ncclProgramNames(), ", "))
	}
	// nccl-tests' defaults where distbench's differ, before the line's own
	// flags (the last of a flag wins): 32M only, steps of -i (1M) unless
	// -f says otherwise, one warm-up iteration, and (--nccl-tests) one
	// rank a process unless -t and -g say more.
	out = []string{"run", "--collective=" + coll, "--nccl-tests", "-b", "32M", "-e", "32M", "-f", "1", "-w", "1"}
	if !explicitLauncher(args) && engineEnv(os.Getenv) {
		// Started by mpirun (or torchrun) as nccl-tests' programs are:
		// this process is one rank.
		out = append(out, "--launcher=env")
	}
	return append(out, args...), true, nil
}

func explicitLauncher(args []string) bool {
	for _, a := range args {
		if a == "--launcher" || strings.HasPrefix(a, "--launcher=") {
			return true
		}
	}
	return false
}

// engineEnv reports whether an engine started this process as one of its
// ranks: Open MPI's mpirun, MPICH's (Hydra) mpiexec, or torchrun.
func engineEnv(getenv func(string) string) bool {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "WORLD_SIZE"} {
		if getenv(v) != "" {
			return true
		}
	}
	return false
}

// joinSeparatedValues rewrites "--check N" as "--check=N": nccl-tests'
// --check takes its value as the next argument, and distbench's --check
// also stands alone (meaning 1), which pflag reads without looking at the
// next argument. Only a next argument that is a count or a boolean is
// taken.
func joinSeparatedValues(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "--check" && i+1 < len(args) && isCheckValue(args[i+1]) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

func isCheckValue(s string) bool {
	if _, err := strconv.Atoi(s); err == nil {
		return true
	}
	switch strings.ToLower(s) {
	case "true", "false":
		return true
	}
	return false
}

// secondsValue is --timeout/-T: nccl-tests' whole seconds ("60"), or a Go
// duration ("90s", "2m"). 0 is nccl-tests' "no timeout"; distbench always
// has a deadline (a stalled peer must become an error), so 0 keeps the
// default, with a note.
type secondsValue struct {
	d    *time.Duration
	def  time.Duration
	zero bool // 0 was given
}

func (v *secondsValue) String() string { return v.d.String() }
func (v *secondsValue) Type() string   { return "duration" }
func (v *secondsValue) Set(s string) error {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > math.MaxInt64/int64(time.Second) {
			return fmt.Errorf("want whole seconds (0 or more, as nccl-tests' -T) or a duration such as 90s")
		}
		v.zero = n == 0
		if n == 0 {
			*v.d = v.def
			return nil
		}
		*v.d = time.Duration(n) * time.Second
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want whole seconds (as nccl-tests' -T 60) or a duration such as 90s")
	}
	*v.d, v.zero = d, false
	return nil
}

// averageValue is -a/--average: nccl-tests' 0..3, or "median" (also -1)
// for distbench's robust statistic.
type averageValue struct{ n *int }

func (v averageValue) String() string {
	if *v.n < 0 {
		return "median"
	}
	return strconv.Itoa(*v.n)
}
func (v averageValue) Type() string { return "0|1|2|3|median" }
func (v averageValue) Set(s string) error {
	switch strings.ToLower(s) {
	case "median", "-1":
		*v.n = -1
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 3 {
		return fmt.Errorf("want 0 (rank 0), 1 (mean over ranks), 2 (min), 3 (max) or median")
	}
	*v.n = n
	return nil
}

// ncclOnlyFlags are nccl-tests' flags that shape how NCCL and CUDA run
// (threads, GPUs, streams, graphs, registration, kernels): accepted, and
// where a value would change what nccl-tests does, answered with one note
// on stderr saying why it does not apply here. neutral is the value that
// changes nothing there either, which draws no note.
var ncclOnlyFlags = []struct {
	long, short, neutral, usage, why string
}{
	{"agg_iters", "m", "1", "nccl-tests: operations aggregated per timed iteration", "distbench times every operation on its own; each iteration here is one operation"},
	{"parallel_init", "p", "0", "nccl-tests: initialise NCCL communicators in parallel threads", "there are no communicator threads to initialise here"},
	{"blocking", "z", "0", "nccl-tests: 1 waits on every operation (barrier), 2 never, 3 each outer iteration", "distbench waits for every operation on every rank and times the slowest rank, whatever -z says"},
	{"stream_null", "y", "0", "nccl-tests: run on CUDA's default stream", "there are no CUDA streams to choose on host buffers"},
	{"cudagraph", "G", "0", "nccl-tests: launch the iterations as this many CUDA graphs", "CUDA graphs need device buffers and NCCL launches; distbench issues each operation itself"},
	{"report_cputime", "C", "0", "nccl-tests: report CPU time instead of CUDA event time", ""},
	{"local_register", "R", "0", "nccl-tests: register buffers with NCCL (1 local, 2 symmetric)", "distbench does not register buffers with NCCL"},
	{"cta_policy", "x", "", "nccl-tests: NCCL's CTA policy", "distbench does not set NCCL's CTA policy; set NCCL_CTA_POLICY in the environment for the nccl strategy"},
	{"device_implementation", "D", "0", "nccl-tests: a device-side implementation of the collective", "distbench has no device-side implementations"},
	{"device_cta_count", "V", "", "nccl-tests: CTAs of -D's device implementation", "distbench has no device-side implementations"},
	{"memory", "M", "0", "nccl-tests: report GPU memory use", "distbench's buffers are host memory, whose use 'distbench run' checks before it starts"},
	{"unalign", "u", "0", "nccl-tests: misalign the buffers by this many elements", "distbench's buffers are always aligned"},
}

// ncclRanksFlags holds nccl-tests' -t (threads per process) and -g (GPUs
// per thread), whose product is the ranks one process drives.
type ncclRanksFlags struct {
	threads, gpus int
	// programDefaults is set under nccl-tests' program names: --np then
	// defaults to -t × -g (1), as nccl-tests runs one rank a GPU.
	programDefaults bool
}

// addNCCLFlags registers nccl-tests' flags that distbench has no concept
// of (hidden: --help lists distbench's own) and -t, -g.
func addNCCLFlags(fl *pflag.FlagSet, r *ncclRanksFlags) map[string]*string {
	vals := map[string]*string{}
	for _, f := range ncclOnlyFlags {
		v := new(string)
		*v = f.neutral
		fl.StringVarP(v, f.long, f.short, f.neutral, f.usage)
		fl.MarkHidden(f.long)
		vals[f.long] = v
	}
	fl.IntVarP(&r.threads, "nthreads", "t", 1, "nccl-tests' threads per process: ranks per process are -t × -g (local launcher: --np defaults to it)")
	fl.IntVarP(&r.gpus, "ngpus", "g", 1, "nccl-tests' GPUs per thread: ranks per process are -t × -g")
	fl.BoolVar(&r.programDefaults, "nccl-tests", false, "run as nccl-tests' programs do: --np defaults to -t × -g")
	fl.MarkHidden("nccl-tests")
	return vals
}

// ncclNotes writes one line for each nccl-tests flag given a value that
// does not apply here.
func ncclNotes(w io.Writer, fl *pflag.FlagSet, vals map[string]*string) {
	for _, f := range ncclOnlyFlags {
		if !fl.Changed(f.long) || f.why == "" || *vals[f.long] == f.neutral {
			continue
		}
		fmt.Fprintf(w, "distbench: -%s %s (--%s) does not apply here: %s\n", f.short, *vals[f.long], f.long, f.why)
	}
}

// ncclCompat resolves what nccl-tests' flags mean here, before the spec is
// built, and writes the notes of those that do not apply (rank 0 only,
// once per run).
func (f *runFlags) ncclCompat(fl *pflag.FlagSet, stderr io.Writer) error {
	t, g := f.ncclRanks.threads, f.ncclRanks.gpus
	if t < 1 || g < 1 {
		return fmt.Errorf("-t %d -g %d: threads and GPUs per process must be at least 1", t, g)
	}
	notes := io.Discard
	if isRank0(f.launcher) {
		notes = stderr
	}
	ncclNotes(notes, fl, f.ncclOnly)
	if f.timeoutArg != nil && f.timeoutArg.zero {
		fmt.Fprintf(notes, "distbench: -T 0 (no timeout) does not apply here: every operation keeps a deadline, %v, so that a stalled peer becomes an error\n", f.timeout)
	}
	if perProcess := t * g; fl.Changed("nthreads") || fl.Changed("ngpus") || f.ncclRanks.programDefaults {
		switch {
		case f.launcher == "local" && !fl.Changed("np"):
			f.np = perProcess // nccl-tests' one process driving -t × -g ranks
		case f.launcher != "local" && perProcess != 1:
			fmt.Fprintf(notes, "distbench: -t %d -g %d (%d ranks a process) does not apply under --launcher %s: each process is one rank; start %d times as many\n",
				t, g, perProcess, f.launcher, perProcess)
		case f.launcher == "local" && f.np != perProcess && (fl.Changed("nthreads") || fl.Changed("ngpus")):
			fmt.Fprintf(notes, "distbench: -t %d -g %d (%d ranks) gives way to --np %d\n", t, g, perProcess, f.np)
		}
	}
	// nccl-tests steps by -f when it is above 1, else by -i (1M by
	// default); distbench's own default factor is 2, so -i alone steps by
	// bytes too.
	switch {
	case fl.Changed("stepfactor") && f.stepFactor > 1:
		f.stepB = ""
	case f.stepFactor >= 0 && f.stepFactor <= 1 && f.stepB == "":
		f.stepB = "1M"
	}
	return nil
}
