package harness

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/distbench/distbench/collective"
)

// TestBufferBytes holds bufferBytes to what each benchmark's alloc really
// allocates, on every rank, so that the memory check counts what runs.
func TestBufferBytes(t *testing.T) {
	for _, name := range Collectives() {
		for _, np := range []int{1, 3, 4} {
			for _, inplace := range []bool{false, true} {
				for _, dt := range []collective.DType{collective.Uint8, collective.Float64} {
					p := Point{Collective: name, Bytes: int64(24 * dt.Size()), DType: dt.String(), Op: "sum", InPlace: inplace}
					want := p.bufferBytes(np)
					for r := range np {
						inst := &instance{n: np, r: r, dt: dt, count: effectiveCount(p, dt, np), inplace: inplace}
						benchmarks[name].alloc(inst)
						if got := allocated(inst.in.Data, inst.out.Data); got != want {
							t.Errorf("%s np %d rank %d in-place %v %s: alloc takes %d bytes, bufferBytes says %d", name, np, r, inplace, dt, got, want)
						}
					}
				}
			}
		}
	}
}

// allocated is the bytes of memory a and b take, once where one lies in
// the other (an in-place form's view).
func allocated(a, b []byte) int64 {
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(b) == 0 {
		return int64(len(a))
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if pb >= pa && pb+uintptr(len(b)) <= pa+uintptr(len(a)) {
		return int64(len(a))
	}
	return int64(len(a) + len(b))
}

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
	defer func(f func() (int64, string, bool)) { availableMemory = f }(availableMemory)
	availableMemory = func() (int64, string, bool) {
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
