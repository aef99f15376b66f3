package results

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestParseCPUInfo(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"x86", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R)  CPU @ 2.20GHz\nflags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R)  CPU @ 2.20GHz\n",
			"Intel(R) Xeon(R) CPU @ 2.20GHz"},
		{"raspberry pi", "processor\t: 0\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n", "Raspberry Pi 4 Model B Rev 1.4"},
		{"power", "processor\t: 0\ncpu\t\t: POWER9 (architected), altivec supported\n", "POWER9 (architected), altivec supported"},
		{"empty", "", ""},
		{"no model", "processor : 0\nflags : fpu\n", ""},
	}
	for _, tt := range tests {
		if got := parseCPUInfo(strings.NewReader(tt.in)); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestParseMemInfo(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"MemTotal:       131899428 kB\nMemFree:         1000 kB\n", 131899428 * 1024},
		{"MemFree: 1 kB\nMemTotal: 2048 kB\n", 2048 * 1024},
		{"MemTotal: 4096\n", 4096},
		{"MemTotal: lots kB\n", 0},
		{"", 0},
	}
	for _, tt := range tests {
		if got := parseMemInfo(strings.NewReader(tt.in)); got != tt.want {
			t.Errorf("parseMemInfo(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestCommit(t *testing.T) {
	bi := func(kv ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{}
		for i := 0; i < len(kv); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return b
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "unknown"},
		{"no vcs", bi("GOOS", "linux"), true, "unknown"},
		{"clean", bi("vcs.revision", "abc123", "vcs.modified", "false"), true, "abc123"},
		{"dirty", bi("vcs.revision", "abc123", "vcs.modified", "true"), true, "abc123-dirty"},
		{"go install of a commit", withVersion(bi(), "v0.0.0-20261126002610-4ae8784abcde"), true, "4ae8784abcde"},
		{"go install after a tag", withVersion(bi(), "v0.1.1-0.20261126002610-4ae8784abcde"), true, "4ae8784abcde"},
		{"go install after a pre-release", withVersion(bi(), "v0.2.0-rc.1.0.20261126002610-4ae8784abcde"), true, "4ae8784abcde"},
		{"go install of a tag", withVersion(bi(), "v0.1.0"), true, "tag v0.1.0"},
		{"go install of a pre-release tag", withVersion(bi(), "v0.2.0-rc.1"), true, "tag v0.2.0-rc.1"},
		{"devel without vcs", withVersion(bi(), "(devel)"), true, "unknown"},
		{"vcs wins over the version", withVersion(bi("vcs.revision", "abc123"), "v0.1.0"), true, "abc123"},
	}
	for _, tt := range tests {
		if got := commit(tt.bi, tt.ok); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func withVersion(b *debug.BuildInfo, v string) *debug.BuildInfo {
	b.Main.Version = v
	return b
}

func TestCaptureEnv(t *testing.T) {
	e := CaptureEnv()
	if e.Cores != runtime.NumCPU() || e.GoVersion != runtime.Version() {
		t.Errorf("cores %d go %q", e.Cores, e.GoVersion)
	}
	if e.Host == "" || e.CPUModel == "" || e.Kernel == "" || e.Commit == "" || e.Reduce == "" {
		t.Errorf("empty field in %+v (unknown values must say so)", e)
	}
	if e.StartedAt.IsZero() {
		t.Errorf("StartedAt not set")
	}
	if runtime.GOOS == "linux" && e.MemBytes <= 0 {
		t.Errorf("MemBytes = %d on linux", e.MemBytes)
	}
}
