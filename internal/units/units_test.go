package units

import "testing"

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
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
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
	for _, s := range []string{"4KiB", "1.5M", "4KB?", "", "1e308G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseBytes(%q) = %d", s, n)
		}
	})
}
