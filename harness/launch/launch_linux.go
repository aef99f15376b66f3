//go:build linux

package launch

import (
	"os/exec"
	"syscall"
)

// dieWithLauncher has the kernel kill cmd's process when the thread that
// starts it exits: Launch holds that thread until its children have exited,
// so this happens only when the launcher dies.
func dieWithLauncher(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
