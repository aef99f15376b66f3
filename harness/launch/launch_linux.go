//go:build linux

package launch

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// dieWithLauncher has the kernel kill cmd's process when the thread that
// starts it exits: Launch holds that thread until its children have exited,
// so this happens only when the launcher dies.
func dieWithLauncher(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// stopped says whether process pid is stopped (SIGSTOP, a debugger): state
// T or t in /proc/PID/stat, after the command name in parentheses.
func stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'T' || b[i+2] == 't'
}
