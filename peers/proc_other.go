//go:build !unix

package peers

import "os/exec"

// killGroup leaves cmd as it is: without process groups only the peer's
// parent process is killed when its context ends.
func killGroup(cmd *exec.Cmd) (waited func()) { return func() {} }
