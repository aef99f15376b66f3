package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal's follower side: what mpirun gives its
// ranks as stdout, and what a user's shell gives distbench.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	leader, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { leader.Close() })
	if err := unix.IoctlSetPointerInt(int(leader.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlocking a pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(leader.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("naming a pseudo-terminal: %v", err)
	}
	follower, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { follower.Close() })
	go io.Copy(io.Discard, leader) // drain, so that writes never block
	return follower
}

// TestStatusWriter: run's and train's status lines go to stderr, and only
// where it is the user's terminal under the local launcher. A rank that an
// external launcher started may sit on a terminal of the launcher's (mpirun
// gives its ranks ptys) whose bytes the launcher forwards into the job's
// output, where a status line broke the table that scripts parse.
func TestStatusWriter(t *testing.T) {
	tty := openPTY(t)
	for _, tc := range []struct {
		launcher string
		stderr   io.Writer
		want     bool
	}{
		{"local", tty, true},
		{"local", &bytes.Buffer{}, false},
		{"env", tty, false},
		{"mpirun", tty, false},
		{"srun", tty, false},
		{"env", &bytes.Buffer{}, false},
	} {
		got := statusWriter(tc.launcher, tc.stderr) != nil
		if got != tc.want {
			t.Errorf("statusWriter(%q, terminal=%v): status %v, want %v", tc.launcher, tc.stderr == tty, got, tc.want)
		}
	}
}
