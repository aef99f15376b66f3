//go:build unix

package peers

import (
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// killGroup makes cmd the leader of its own process group and, when its
// context ends, stops the whole group: mpirun's ranks and gloo's spawned
// processes are the peer's children, and killing only the parent would leave
// them running. SIGTERM first (mpirun passes it on and cleans up), SIGKILL
// three seconds later if the peer is still there. Call the returned func once
// Wait has returned, so that no signal goes to a process group id that has
// been reused since.
func killGroup(cmd *exec.Cmd) (waited func()) {
	var mu sync.Mutex
	done := false
	signal := func(sig syscall.Signal) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			syscall.Kill(-cmd.Process.Pid, sig)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		signal(syscall.SIGTERM)
		time.AfterFunc(3*time.Second, func() { signal(syscall.SIGKILL) })
		return nil
	}
	cmd.WaitDelay = 10 * time.Second
	return func() {
		mu.Lock()
		done = true
		mu.Unlock()
	}
}
