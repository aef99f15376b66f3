package job

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// AvailableMemory is what this machine can give a job now and where that
// figure comes from; ok is false where it cannot tell (not Linux), and the
// memory check is then skipped. A variable, so that tests (here and of the
// plan) can set it.
var AvailableMemory = readAvailableMemory

// readAvailableMemory is MemAvailable from /proc/meminfo (MemTotal on
// kernels before 3.14), or the memory cgroup's limit if lower. The limit,
// not the limit less usage: usage counts page cache the kernel would
// reclaim, and a check that refused what would run is worse than none.
func readAvailableMemory() (bytes int64, source string, ok bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, "", false
	}
	bytes, source = parseMemAvailable(f)
	f.Close()
	if bytes <= 0 {
		return 0, "", false
	}
	source += " in /proc/meminfo"
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// "max" (v2) or a huge number (v1) is no limit.
		if limit, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && limit > 0 && limit < bytes {
			bytes, source = limit, "the memory cgroup's limit in "+path
		}
		break
	}
	return bytes, source, true
}

// parseMemAvailable returns MemAvailable from /proc/meminfo's text, or
// MemTotal where the kernel does not say, in bytes, and which it was.
func parseMemAvailable(r io.Reader) (int64, string) {
	var total int64
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || (f[0] != "MemAvailable:" && f[0] != "MemTotal:") {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		if len(f) >= 3 && strings.EqualFold(f[2], "kB") {
			n *= 1024
		}
		if f[0] == "MemAvailable:" {
			return n, "MemAvailable"
		}
		total = n
	}
	return total, "MemTotal"
}

// MemoryError is a launch whose buffers do not fit in this machine's
// memory: started, its workers would die of "runtime: out of memory".
type MemoryError struct {
	Point     Point  // the point that needs the most
	Ranks     int    // ranks on this machine
	PerRank   int64  // Point's buffers on one rank, in bytes
	Available int64  // bytes
	Source    string // where Available comes from
	Over      int    // points of the launch that do not fit
}

func (e *MemoryError) Error() string {
	p := e.Point
	form := "in-place"
	if !p.InPlace {
		form = "out-of-place"
	}
	others := ""
	switch {
	case e.Over == 2:
		others = "; 1 other point does not fit either"
	case e.Over > 2:
		others = fmt.Sprintf("; %d other points do not fit either", e.Over-1)
	}
	return fmt.Sprintf("%s of %s %s %s needs at least %s of memory here (%d ranks × %s of buffers), but %s is available (%s)%s; "+
		"accepted: sizes whose buffers fit, at most %s a rank here",
		p.Collective, approxBytes(p.Bytes), p.DType, form, approxBytes(e.PerRank*int64(e.Ranks)), e.Ranks, approxBytes(e.PerRank),
		approxBytes(e.Available), e.Source, others, approxBytes(e.Available/int64(e.Ranks)))
}

// approxBytes writes n in the largest binary unit not above it, to a tenth:
// 23.1GiB, 2TiB, 512B.
func approxBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + units[i]
}
