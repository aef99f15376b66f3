package units

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"4096", 4096, true}, {"4K", 4096, true}, {"4KiB", 4096, true}, {"4kb", 4096, true},
		{"64MiB", 64 << 20, true}, {"1.5M", 3 << 19, true}, {"1G", 1 << 30, true}, {"8B", 8, true},
		{" 2 MiB ", 2 << 20, true}, {"0", 0, true},
		{"4KB?", 0, false}, {"", 0, false}, {"-1", 0, false}, {"1.5", 0, false}, {"K", 0, false},
		{"NaN", 0, false}, {"1e30", 0, false}, {"12X", 0, false},
		{"Inf", 0, false}, {"1e400", 0, false}, {"-1e400", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestParseBytesLimit: every size up to the stated limit parses, in every
// unit that can write it, and nothing above it does; the error for a size
// above it states the limit that the parser applies.
func TestParseBytesLimit(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1PiB", MaxBytes, true}, {"1P", MaxBytes, true}, {"1pb", MaxBytes, true}, {"1024TiB", MaxBytes, true},
		{"1048576GiB", MaxBytes, true}, {"1125899906842624", MaxBytes, true}, {"0.5PiB", MaxBytes / 2, true},
		{"1TiB", 1 << 40, true}, {"1125899906842623", MaxBytes - 1, true},
		{"1125899906842625", 0, false}, {"1025TiB", 0, false}, {"1.5PiB", 0, false}, {"2P", 0, false}, {"1e400", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if !tt.ok && (err == nil || !strings.Contains(err.Error(), "too large (accepted: at most 1PiB, 1125899906842624 bytes)")) {
			t.Errorf("ParseBytes(%q): error %v, want it to state the limit", tt.in, err)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[int64]string{0: "0B", 1000: "1000B", 4096: "4KiB", 16 << 20: "16MiB", 3 << 30: "3GiB", 1536: "1536B"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"4KiB", "1.5M", "4KB?", "", "1e308G", "1PiB", "1125899906842625"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err == nil && (n < 0 || n > MaxBytes) {
			t.Fatalf("ParseBytes(%q) = %d, outside 0..%d", s, n, int64(MaxBytes))
		}
		if err != nil && strings.Contains(err.Error(), "too large") {
			return
		}
		// Whatever parses, written back in bytes, parses to itself: the
		// limit is the same whichever unit a size is written in.
		if err == nil {
			if m, err := ParseBytes(strconv.FormatInt(n, 10)); err != nil || m != n {
				t.Fatalf("ParseBytes(%q) = %d, but %d reads back as %d, %v", s, n, n, m, err)
			}
		}
	})
}

// FuzzParseBytesLimit: a whole number of bytes parses exactly when it is at
// most MaxBytes, written in bytes or in the largest unit that divides it.
func FuzzParseBytesLimit(f *testing.F) {
	for _, n := range []int64{0, 1, MaxBytes - 1, MaxBytes, MaxBytes + 1, 1 << 62} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		if n < 0 {
			n = -(n + 1)
		}
		forms := []string{strconv.FormatInt(n, 10)}
		for _, u := range []struct {
			s string
			m int64
		}{{"PiB", 1 << 50}, {"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
			if n%u.m == 0 && n > 0 {
				forms = append(forms, strconv.FormatInt(n/u.m, 10)+u.s)
				break
			}
		}
		for _, s := range forms {
			got, err := ParseBytes(s)
			if n <= MaxBytes && (err != nil || got != n) {
				t.Errorf("ParseBytes(%q) = %d, %v; want %d", s, got, err, n)
			}
			if n > MaxBytes && err == nil {
				t.Errorf("ParseBytes(%q) = %d, want an error above %d", s, got, int64(MaxBytes))
			}
		}
	})
}
