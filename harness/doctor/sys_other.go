//go:build !linux

package doctor

import (
	"errors"
	"os/exec"
)

var errUnchecked = errors.New("not checked on this platform")

func statfs(string) (uint64, error) { return 0, errUnchecked }

func limits() (nofile, nproc uint64, err error) { return 0, 0, errUnchecked }

func lookPath(name string) (string, error) { return exec.LookPath(name) }
