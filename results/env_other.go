//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package results

import "runtime"

func kernel() string { return runtime.GOOS }
