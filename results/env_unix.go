//go:build linux || darwin || freebsd || netbsd || openbsd

package results

import (
	"strings"

	"golang.org/x/sys/unix"
)

// kernel is uname's "sysname release machine", e.g. "Linux 6.1.0-18-amd64 x86_64".
func kernel() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return strings.Join([]string{unix.ByteSliceToString(u.Sysname[:]),
		unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Machine[:])}, " ")
}
