//go:build !linux

package launch

import "os/exec"

// dieWithLauncher does nothing here: the workers' pipe to the launcher
// (watchLauncher) is what ends them when it dies.
func dieWithLauncher(*exec.Cmd) {}

// stopped cannot tell here: a stopped worker is killed after the grace.
func stopped(int) bool { return false }
