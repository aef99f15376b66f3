package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/reports/nccltests"
	"github.com/distbench/distbench/results"
)

// ncclOutput holds the options of nccl-tests' that shape what run prints
// (nccltests.Config has their meanings).
type ncclOutput struct {
	average     int
	perIter     bool
	perIterSkip int
	timestamps  bool
	args        []string
}

// tableConfig is what run's table says of spec beyond its records.
func (f *runFlags) tableConfig(spec *job.Spec, out ncclOutput) nccltests.Config {
	c := nccltests.Config{
		Args: out.args, Strategy: spec.Strategy, NP: spec.NP, Transport: spec.TransportName(), Link: spec.Link, Options: spec.Options,
		Warmup: spec.Warmup, Iters: spec.Iters, MinBytes: f.lo, MaxBytes: f.hi, StepFactor: f.stepFactor, Modes: f.inplace,
		Average: out.average, PerIter: out.perIter, PerIterSkip: out.perIterSkip, Timestamps: out.timestamps,
		MinBusBW: minBusBW(), Version: versionLine(), Env: captureEnv(), Now: time.Now,
	}
	if f.stepB != "" {
		c.StepBytes = f.stepBytes
	}
	if spec.Check {
		c.CheckRuns = max(f.check.n, 1)
	}
	return c
}

// minBusBW is NCCL_TESTS_MIN_BW, the average bus bandwidth (GB/s) below
// whose 90% nccl-tests fails a run, for health checks; 0 when unset.
func minBusBW() float64 {
	v, err := strconv.ParseFloat(os.Getenv("NCCL_TESTS_MIN_BW"), 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v
}

// versionLine and captureEnv are variables so that tests fix what differs
// between machines and builds.
var (
	versionLine = buildVersion
	captureEnv  = func() *results.Env { e := results.CaptureEnv(); return &e }
)

// buildVersion is this build's version line, as --version prints it.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	return version(bi, ok)
}
