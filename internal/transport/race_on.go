//go:build race

package transport

import (
	"runtime"
	"unsafe"
)

// The race detector cannot see causality that passes through another
// process: this rank sends a chunk, the peer reduces it and sends it back,
// and this rank's reader writes the answer into the very region it sent
// from. golang.org/x/sys/unix.Writev tells the detector about a send's reads
// only after the system call has returned, so when the sending goroutine is
// descheduled after the call, the reader's write (of the answer the send
// caused) is recorded first and reported as a race.
//
// The truth is that the kernel has copied the bytes before the call returns,
// and so before any answer to them can exist. raceSent says so: the reads
// are recorded before the call, then released on socketSync, which every
// reader acquires after its own read (raceReceived), before it writes
// anything it read into a tensor. A receive that lands in a region while
// the region is being sent, which no answer can cause, is still reported:
// the reader's write then precedes the send's recorded reads.
var socketSync byte

func raceSent(bufs [][]byte) {
	for _, b := range bufs {
		if len(b) > 0 {
			runtime.RaceReadRange(unsafe.Pointer(&b[0]), len(b))
		}
	}
	runtime.RaceReleaseMerge(unsafe.Pointer(&socketSync))
}

func raceReceived() { runtime.RaceAcquire(unsafe.Pointer(&socketSync)) }
