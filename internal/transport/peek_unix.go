//go:build unix

package transport

import (
	"net"
	"syscall"
)

// bytesWaiting reports whether c has bytes (or its end) waiting to be read,
// looking without reading or waiting: after a read deadline, it tells a
// silent peer from a reader that ran late. Errors count as waiting, so that
// the next read reports them.
func bytesWaiting(c *net.TCPConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return true
	}
	var perr error
	var b [1]byte
	if err := raw.Control(func(fd uintptr) {
		_, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}); err != nil {
		return true
	}
	return perr != syscall.EAGAIN && perr != syscall.EWOULDBLOCK
}
