package doctor

import (
	"os/exec"
	"syscall"
)

// rlimitNproc is RLIMIT_NPROC on Linux (not in package syscall).
const rlimitNproc = 6

func statfs(path string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

func limits() (nofile, nproc uint64, err error) {
	var f, p syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &f); err != nil {
		return 0, 0, err
	}
	if err := syscall.Getrlimit(rlimitNproc, &p); err != nil {
		return 0, 0, err
	}
	return f.Cur, p.Cur, nil
}

func lookPath(name string) (string, error) { return exec.LookPath(name) }
