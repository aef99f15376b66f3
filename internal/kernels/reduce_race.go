//go:build race && amd64 && !purego

package kernels

import (
	"runtime"
	"unsafe"
)

// raceAccess tells the race detector about the kernels' loads and stores,
// which it cannot see in assembly, so that -race still catches a buffer
// reduced into while another goroutine uses it.
func raceAccess(dst, src []byte) {
	if len(dst) > 0 {
		runtime.RaceReadRange(unsafe.Pointer(&src[0]), len(src))
		runtime.RaceWriteRange(unsafe.Pointer(&dst[0]), len(dst))
	}
}
