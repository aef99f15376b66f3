package results

import (
	"bufio"
	"debug/buildinfo"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/distbench/distbench/internal/kernels"
)

// CaptureEnv describes the machine and build this process runs on. It is
// best effort: a field it cannot learn is "unknown" (or 0), never an error,
// because a missing CPU model must not stop a benchmark.
func CaptureEnv() Env {
	e := Env{
		Host:      "unknown",
		CPUModel:  "unknown",
		Cores:     runtime.NumCPU(),
		Kernel:    kernel(),
		GoVersion: runtime.Version(),
		Commit:    commit(debug.ReadBuildInfo()),
		Reduce:    kernels.Name(),
		Args:      os.Args,
		StartedAt: time.Now().UTC(),
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		e.Host = h
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		if m := parseCPUInfo(f); m != "" {
			e.CPUModel = m
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		e.MemBytes = parseMemInfo(f)
		f.Close()
	}
	return e
}

// parseCPUInfo returns the CPU model named in /proc/cpuinfo: "model name" on
// x86, "Model"/"Hardware"/"cpu" lines on ARM and POWER, in that order of
// preference.
func parseCPUInfo(r io.Reader) string {
	prefs := []string{"model name", "Model", "Hardware", "cpu"}
	found := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if _, seen := found[k]; !seen && v != "" {
			found[k] = v
		}
	}
	for _, k := range prefs {
		if v := found[k]; v != "" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}

// parseMemInfo returns MemTotal from /proc/meminfo in bytes, 0 if absent.
func parseMemInfo(r io.Reader) int64 {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			if len(f) >= 3 && strings.EqualFold(f[2], "kB") {
				n *= 1024
			}
			return n
		}
	}
	return 0
}

// CommitOf is the VCS revision the Go binary at path was built from, as
// Env.Commit gives it for the running one ("unknown" when the binary does
// not say).
func CommitOf(path string) string {
	bi, err := buildinfo.ReadFile(path)
	return commit(bi, err == nil)
}

// BuildCommit is the VCS revision recorded in bi, as Env.Commit gives it
// ("unknown" for a nil bi or one that does not say).
func BuildCommit(bi *debug.BuildInfo) string { return commit(bi, bi != nil) }

// commit is the VCS revision the binary was built from, with "-dirty" when
// the tree had local changes; for a binary built by go install from the
// module proxy, what its module version says of the commit; otherwise
// "unknown" (go run, go test, -buildvcs=false).
func commit(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "unknown"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		// go install MODULE/cmd/distbench@VERSION builds from the module
		// proxy's zip, without VCS settings: a pseudo-version ends in the
		// commit's 12-digit prefix, and a release tag names one commit.
		return moduleCommit(bi.Main.Version)
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return rev
}

// pseudoVersion matches a Go pseudo-version's tail (go.dev/ref/mod#pseudo-versions):
// a 14-digit UTC time, then the commit's 12-hex-digit prefix.
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-([0-9a-f]{12})(\+incompatible)?$`)

// releaseTag matches a semantic version tag, v1.2.3 with an optional
// pre-release part.
var releaseTag = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+incompatible)?$`)

// moduleCommit is the commit a module version names: a pseudo-version's
// commit prefix, "tag v1.2.3" for a release tag, or "unknown" ("(devel)",
// "").
func moduleCommit(v string) string {
	if m := pseudoVersion.FindStringSubmatch(v); m != nil {
		return m[1]
	}
	if releaseTag.MatchString(v) {
		return "tag " + v
	}
	return "unknown"
}
