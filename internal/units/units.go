// Package units parses and formats byte sizes the way distbench's flags and
// reports write them: 4096, 4K, 4KiB, 4KB (all 1024-based, as nccl-tests
// reads -b 4K), 1.5MiB, 64M, 1G, up to MaxBytes (1PiB).
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxBytes is the largest size ParseBytes accepts, 1 PiB: far beyond any
// one machine's memory, and small enough that a size times a world size or
// an element count never overflows an int64.
const MaxBytes = 1 << 50

var suffixes = []struct {
	s string
	m int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"pib", 1 << 50},
	{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40}, {"pb", 1 << 50},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"p", 1 << 50},
	{"b", 1},
}

// ParseBytes parses a size such as "4KiB" into bytes.
func ParseBytes(s string) (int64, error) {
	in := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, suf := range suffixes {
		if strings.HasSuffix(in, suf.s) {
			in, mult = strings.TrimSpace(strings.TrimSuffix(in, suf.s)), suf.m
			break
		}
	}
	f, err := strconv.ParseFloat(in, 64)
	// 1e400 is a number, only too large for a float64: say so below.
	tooLarge := errors.Is(err, strconv.ErrRange) && math.IsInf(f, 1)
	if !tooLarge && (err != nil || in == "" || math.IsNaN(f) || math.IsInf(f, 0) || f < 0) {
		return 0, fmt.Errorf("malformed size %q (accepted: a number of bytes with an optional unit K, KiB, KB, M, MiB, MB, G, GiB, GB, T, TiB, TB, P, PiB, PB, e.g. 4KiB or 64M)", s)
	}
	v := f * float64(mult)
	if v > MaxBytes {
		return 0, fmt.Errorf("size %q too large (accepted: at most 1PiB, %d bytes)", s, int64(MaxBytes))
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int64(v), nil
}

// FormatBytes writes n in the largest binary unit that divides it exactly
// (16MiB, 4KiB, 1000B), so names stay exact and sortable by eye.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return fmt.Sprintf("%d%s", n/u.m, u.s)
		}
	}
	return fmt.Sprintf("%dB", n)
}
