package job

import (
	"strings"
	"testing"
)

func TestParseMemAvailable(t *testing.T) {
	tests := []struct {
		in     string
		want   int64
		source string
	}{
		{"MemTotal:       24683620 kB\nMemFree:        23346844 kB\nMemAvailable:   24198988 kB\n", 24198988 << 10, "MemAvailable"},
		{"MemTotal:       2048 kB\nMemFree:        1024 kB\n", 2048 << 10, "MemTotal"}, // before Linux 3.14
		{"garbage\n", 0, "MemTotal"},
	}
	for _, tt := range tests {
		got, source := parseMemAvailable(strings.NewReader(tt.in))
		if got != tt.want || source != tt.source {
			t.Errorf("parseMemAvailable(%q) = %d, %s; want %d, %s", tt.in, got, source, tt.want, tt.source)
		}
	}
}

func TestCheckMemory(t *testing.T) {
	defer func(f func() (int64, string, bool)) { AvailableMemory = f }(AvailableMemory)
	AvailableMemory = func() (int64, string, bool) {
		return 1 << 30, "the memory cgroup's limit in /sys/fs/cgroup/memory.max", true
	}
	spec := &Spec{Strategy: "ring", NP: 8, Points: []Point{
		{Collective: "allreduce", Bytes: 64 << 20, DType: "float32", InPlace: true},   // 8 × 64MiB fits
		{Collective: "sendrecv", Bytes: 128 << 20, DType: "float32", InPlace: true},   // 8 × 256MiB does not
		{Collective: "allreduce", Bytes: 256 << 20, DType: "float32", InPlace: false}, // 8 × 512MiB does not
	}}
	err := spec.CheckMemory(8)
	want := "allreduce of 256MiB float32 out-of-place needs at least 4GiB of memory here (8 ranks × 512MiB of buffers), " +
		"but 1GiB is available (the memory cgroup's limit in /sys/fs/cgroup/memory.max); 1 other point does not fit either; " +
		"accepted: sizes whose buffers fit, at most 128MiB a rank here"
	if err == nil || err.Error() != want {
		t.Errorf("CheckMemory(8) = %v\nwant %s", err, want)
	}
	if err := spec.CheckMemory(1); err != nil {
		t.Errorf("one rank here (the others on other hosts) fits: %v", err)
	}
	if got := approxBytes(24779898880); got != "23.1GiB" {
		t.Errorf("approxBytes = %s", got)
	}
}
