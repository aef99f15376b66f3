// Shared memory within a host: the segment of one pair of ranks, its two
// single-producer single-consumer rings, and futex wake-ups.

//go:build linux

package transport

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// shmDir is where segments live while their pair maps them.
var shmDir = "/dev/shm"

// shmPrefix starts every segment's name; the creator's pid follows, so a
// segment whose creator died before its peer unlinked it can be found and
// removed (sweepStale).
const shmPrefix = "distbench-shm."

// shmRingSize is each direction's ring: big enough that a sender of a
// medium message runs ahead of its receiver, small enough to stay in the
// last-level cache of a small machine (4 MiB measured slower at 16 MiB).
// A host of many ranks gets smaller rings (ringSizeFor): every pair has
// its own, in memory the kernel cannot page out.
const shmRingSize = 1 << 20

// shmHostBudget bounds the rings of one host's pairs together, down to
// shmMinRing a ring: a job of more than about 180 ranks on one host goes
// over it.
const (
	shmHostBudget = 1 << 30
	shmMinRing    = 16 << 10
)

// ringSizeFor is the ring size of a pair on a host of k ranks: the largest
// power of two up to shmRingSize that keeps all its pairs' rings within
// shmHostBudget, and at least shmMinRing.
func ringSizeFor(k int) uint64 {
	pairs := uint64(max(1, k*(k-1)/2))
	size := uint64(shmRingSize)
	for size > shmMinRing && 2*size*pairs > shmHostBudget {
		size /= 2
	}
	return size
}

func segLen(ringSize uint64) int { return shmHeader + 2*(shmCtl+int(ringSize)) }

const (
	shmMagic     = 0x6873686d62747364     // "dstbmhsh"
	shmHeader    = 4096                   // segment header page
	shmCtl       = 4096                   // a direction's control page
	shmFrame     = 64                     // a frame header in a ring; frames start 64-byte aligned
	shmParkSlice = 100 * time.Millisecond // a parked waiter looks at its stop condition this often
)

// segHeader is the segment's first page. lo is the lower rank, which
// creates the segment; hi maps it and unlinks it.
type segHeader struct {
	magic    uint64
	ringSize uint64
	pid      [2]atomic.Int64  // lo, hi
	probe    [2]atomic.Uint64 // the address of each end's cmaProbe
	// cma[d]: whether the consumer of direction d reads its producer's
	// memory with process_vm_readv (0 not yet known, 1 yes, 2 no).
	cma [2]atomic.Uint32
}

// ringCtl is a direction's control page. Counters only grow; each is on a
// cache line of its own so that producer and consumer do not share one.
// The futex words are the low halves of head and tail (little-endian), so
// that a waiter parks on exactly the value it saw.
type ringCtl struct {
	head  atomic.Uint64 // bytes the producer has published
	_     [56]byte
	tail  atomic.Uint64 // bytes the consumer has released
	_     [56]byte
	rwait atomic.Uint32 // the consumer is parked (or about to be) on head
	_     [60]byte
	wwait atomic.Uint32 // the producer is parked on tail or ack
	_     [60]byte
	ack   atomic.Uint32 // CMA frames the consumer has finished reading
	_     [60]byte
}

// ring is one direction of a segment as one end sees it.
type ring struct {
	ctl  *ringCtl
	data []byte
	size uint64 // a power of two
	mask uint64
}

// segment is a mapped pair segment.
type segment struct {
	mem  []byte
	hdr  *segHeader
	ring [2]ring // 0: lo to hi, 1: hi to lo
}

func mapSegment(f *os.File, ringSize uint64) (*segment, error) {
	mem, err := unix.Mmap(int(f.Fd()), 0, segLen(ringSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", f.Name(), err)
	}
	s := &segment{mem: mem, hdr: (*segHeader)(unsafe.Pointer(&mem[0]))}
	for d := range 2 {
		off := shmHeader + d*(shmCtl+int(ringSize))
		s.ring[d] = ring{
			ctl:  (*ringCtl)(unsafe.Pointer(&mem[off])),
			data: mem[off+shmCtl : off+shmCtl+int(ringSize)],
			size: ringSize,
			mask: ringSize - 1,
		}
	}
	return s, nil
}

func (s *segment) unmap() {
	if s != nil && s.mem != nil {
		unix.Munmap(s.mem)
		s.mem = nil
	}
}

// createSegment makes, sizes and maps a new segment for the pair lo-hi.
func createSegment(jobTag string, lo, hi int, ringSize uint64) (*segment, string, error) {
	var rnd [8]byte
	if _, err := unix.Getrandom(rnd[:], 0); err != nil {
		return nil, "", err
	}
	name := fmt.Sprintf("%s%d.%s.%d-%d.%x", shmPrefix, os.Getpid(), jobTag, lo, hi, rnd)
	path := filepath.Join(shmDir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	if err := f.Truncate(int64(segLen(ringSize))); err != nil {
		os.Remove(path)
		return nil, "", err
	}
	s, err := mapSegment(f, ringSize)
	if err != nil {
		os.Remove(path)
		return nil, "", err
	}
	s.hdr.magic, s.hdr.ringSize = shmMagic, ringSize
	return s, path, nil
}

// openSegment maps the segment the pair's lower rank created.
func openSegment(path string) (*segment, error) {
	if filepath.Dir(path) != filepath.Clean(shmDir) || !strings.HasPrefix(filepath.Base(path), shmPrefix) {
		return nil, fmt.Errorf("segment %q is not a distbench segment in %s", path, shmDir)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// The creator chose the ring size; the file's size says which.
	ringSize := uint64(max(0, fi.Size()-shmHeader-2*shmCtl) / 2)
	if ringSize < shmMinRing || ringSize > shmRingSize || ringSize&(ringSize-1) != 0 || int64(segLen(ringSize)) != fi.Size() {
		return nil, fmt.Errorf("segment %s has the wrong size, %d bytes (a different distbench version?)", path, fi.Size())
	}
	s, err := mapSegment(f, ringSize)
	if err != nil {
		return nil, err
	}
	if s.hdr.magic != shmMagic || s.hdr.ringSize != ringSize {
		s.unmap()
		return nil, fmt.Errorf("segment %s has the wrong layout (a different distbench version?)", path)
	}
	return s, nil
}

// sweepStale removes segments whose creator has died: a process killed
// between creating a segment and its peer's unlinking it (a moment while
// the mesh forms) leaves one behind, and the next job on the host removes
// it.
func sweepStale() {
	ents, err := os.ReadDir(shmDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), shmPrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, ".")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			os.Remove(filepath.Join(shmDir, e.Name()))
		}
	}
}

// cmaProbe is what a peer reads with process_vm_readv to learn whether it
// may read this process's memory (ptrace rules, seccomp, containers).
var cmaProbe uint64 = shmMagic

func probeAddr() uint64 { return uint64(uintptr(unsafe.Pointer(&cmaProbe))) }

// canReadPeer tries a process_vm_readv of the peer's probe.
func canReadPeer(pid int, addr uint64) bool {
	var v uint64
	n, err := cmaRead(pid, unsafe.Slice((*byte)(unsafe.Pointer(&v)), 8), addr)
	return err == nil && n == 8 && v == shmMagic
}

// cmaRead reads len(dst) bytes of process pid's memory at addr: one copy,
// by the kernel, from the sender's buffer into dst.
func cmaRead(pid int, dst []byte, addr uint64) (int, error) {
	local := []unix.Iovec{{Base: &dst[0]}}
	local[0].SetLen(len(dst))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(dst)}}
	return unix.ProcessVMReadv(pid, local, remote, 0)
}

// readFull is cmaRead until dst is full.
func cmaReadFull(pid int, dst []byte, addr uint64) error {
	for off := 0; off < len(dst); {
		n, err := cmaRead(pid, dst[off:], addr+uint64(off))
		if err != nil {
			return fmt.Errorf("process_vm_readv: %w", err)
		}
		if n == 0 {
			return errors.New("process_vm_readv: read nothing")
		}
		off += n
	}
	return nil
}

func futexWait(w *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWaitOp, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

func futexWake(w *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWakeOp, 1<<30, 0, 0, 0)
}

func lo32(a *atomic.Uint64) *uint32 { return (*uint32)(unsafe.Pointer(a)) }

// waiter is how one end waits for its ring: it polls without system calls
// while spinning is allowed (TCPOptions.Spin, which the launcher sets only
// when every process has a core of its own), yielding to the process's
// goroutines between polls, then parks on a futex. The other end wakes a
// parked waiter only when its flag says so, so a spinning pair makes no
// system calls at all.
type waiter struct {
	spin time.Duration
	// look, when not nil, is called every few hundred polls: it wakes the
	// transport's parked TCP sockets, which Go's poller neglects while
	// something spins (see spin.go).
	look func()
}

// shmEagerPolls is how many polls even a waiter that may not spin makes
// before it parks: a few Gosched calls, which let the goroutine the
// message is for run first, and cost no system call.
const shmEagerPolls = 8

// shmPollsPerYield is how many polls a spinning waiter makes between yields.
const shmPollsPerYield = 16

// await returns nil once ready holds, or stop's error. w is the futex word
// whose change ready waits for, flag the parked flag its other end reads.
func (wt *waiter) await(w *uint32, flag *atomic.Uint32, ready func() bool, stop func() error) error {
	var until time.Time
	spinning := wt.spin > 0
	for i := 0; ; i++ {
		if ready() {
			return nil
		}
		if i < shmEagerPolls {
			runtime.Gosched()
			continue
		}
		if spinning {
			if i%64 == 0 { // the clock and the stop condition, now and then
				now := time.Now()
				if until.IsZero() {
					until = now.Add(wt.spin)
				}
				if err := stop(); err != nil {
					return err
				}
				if wt.look != nil && i%1024 == 0 {
					wt.look()
				}
				spinning = now.Before(until)
			}
			if spinning {
				// A few polls between yields: Gosched takes the
				// scheduler's lock, which costs more than a poll, and a
				// goroutine that this one readied runs at the first.
				for range shmPollsPerYield {
					if ready() {
						return nil
					}
				}
				runtime.Gosched()
				continue
			}
		}
		if err := stop(); err != nil {
			return err
		}
		val := atomic.LoadUint32(w)
		flag.Store(1)
		if ready() {
			flag.Store(0)
			return nil
		}
		futexWait(w, val, shmParkSlice)
		flag.Store(0)
		// Spin again after a wake-up: more is likely to follow.
		i, until, spinning = 0, time.Time{}, wt.spin > 0
	}
}

// wake wakes the other end if it is parked on w.
func wake(w *uint32, flag *atomic.Uint32) {
	if flag.Load() != 0 {
		futexWake(w)
	}
}

// Futex operations, shared (not FUTEX_PRIVATE_FLAG): the word is in memory
// two processes map.
const (
	futexWaitOp = 0
	futexWakeOp = 1
)
