// Setting up the shared-memory pairs once the TCP mesh has formed.

//go:build linux

package transport

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/distbench/distbench/internal/linkspec"
)

// setupShm gives every same-host pair a segment, as TCPOptions.Transport
// asks. Per pair, the lower rank creates and maps a segment and publishes
// its name in the store; the higher maps it, unlinks it at once (so that
// nothing stays in /dev/shm, however either process ends later) and says
// whether it could; the lower unlinks it too, whatever the answer. A pair
// that cannot share memory stays on TCP under "auto", and fails the mesh
// under "shm".
func (t *TCP) setupShm(ctx context.Context) error {
	mode := t.o.Transport
	if mode == linkspec.TransportTCP || mode == "" || t.o.Size == 1 {
		return nil
	}
	sweepStale()
	h := fnv.New64a()
	h.Write([]byte(t.o.JobID))
	h.Write([]byte(t.o.KeyPrefix))
	jobTag := fmt.Sprintf("%x", h.Sum64())
	local := 0 // ranks on this host, this one included
	for r := range t.o.Size {
		if t.HostOf(r) == t.o.HostID {
			local++
		}
	}
	ringSize := ringSizeFor(local)
	if t.o.ringSize != 0 {
		ringSize = t.o.ringSize
	}
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		if p.host != t.o.HostID || p.host == "" {
			if mode == linkspec.TransportShm {
				return fmt.Errorf("transport: rank %d: --transport shm, but %s is on another host (%q, this rank on %q); use auto to carry cross-host pairs over TCP",
					t.o.Rank, p.describe(), p.host, t.o.HostID)
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var l *shmLink
			var err error
			if t.o.Rank < p.rank {
				l, err = t.createPair(ctx, p, jobTag, ringSize)
			} else {
				l, err = t.openPair(ctx, p, jobTag)
			}
			if err == nil {
				p.shm = l
				return
			}
			if _, fatal := err.(shmFatal); !fatal && mode == linkspec.TransportAuto {
				t.o.Logf("transport: rank %d: %s stays on TCP: no shared memory: %v", t.o.Rank, p.describe(), err)
				return
			}
			mu.Lock()
			if first == nil {
				first = fmt.Errorf("transport: rank %d: shared memory with %s: %w", t.o.Rank, p.describe(), err)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	for _, p := range t.peers {
		if p != nil && p.shm != nil {
			t.wg.Add(1)
			p.box.shm.Store(p.shm)
			go p.shm.readLoop()
		}
	}
	return nil
}

// shmFatal is a failure after which the two ends of a pair may disagree on
// whether they share memory: the mesh cannot go on, even under "auto".
type shmFatal struct{ error }

// shmKey is where a pair agrees on its segment; the job tag keeps the
// meshes of one store (an allocation's, one per link) apart.
func (t *TCP) shmKey(p *peer, jobTag string) string {
	lo, hi := min(t.o.Rank, p.rank), max(t.o.Rank, p.rank)
	return fmt.Sprintf("%sshm/%s/%d-%d", t.o.KeyPrefix, jobTag, lo, hi)
}

// createPair is the lower rank's side.
func (t *TCP) createPair(ctx context.Context, p *peer, jobTag string, ringSize uint64) (*shmLink, error) {
	key := t.shmKey(p, jobTag)
	seg, path, err := createSegment(jobTag, t.o.Rank, p.rank, ringSize)
	if err != nil {
		if serr := t.o.Store.Set(ctx, key, []byte("!"+err.Error())); serr != nil {
			return nil, shmFatal{serr}
		}
		return nil, err
	}
	seg.hdr.pid[0].Store(int64(os.Getpid()))
	seg.hdr.probe[0].Store(probeAddr())
	err = t.o.Store.Set(ctx, key, []byte(path))
	var ok []byte
	if err == nil {
		ok, err = t.o.Store.Get(ctx, key+"/ok")
	}
	os.Remove(path)
	if err != nil {
		seg.unmap()
		return nil, shmFatal{fmt.Errorf("waiting for the peer to map %s: %w", path, err)}
	}
	if string(ok) != "ok" {
		seg.unmap()
		return nil, fmt.Errorf("the peer could not map %s: %s", path, ok)
	}
	// Direction 1 (the peer to us): may we read the peer's memory?
	seg.hdr.cma[1].Store(t.cmaVerdict(int(seg.hdr.pid[1].Load()), seg.hdr.probe[1].Load()))
	return newShmLink(t, p, seg, 0), nil
}

// openPair is the higher rank's side.
func (t *TCP) openPair(ctx context.Context, p *peer, jobTag string) (*shmLink, error) {
	key := t.shmKey(p, jobTag)
	v, err := t.o.Store.Get(ctx, key)
	if err != nil {
		return nil, shmFatal{fmt.Errorf("waiting for the segment's name: %w", err)}
	}
	path := string(v)
	if reason, failed := strings.CutPrefix(path, "!"); failed {
		return nil, fmt.Errorf("the peer could not create a segment: %s", reason)
	}
	seg, err := openSegment(path)
	if err == nil {
		os.Remove(path)
		seg.hdr.pid[1].Store(int64(os.Getpid()))
		seg.hdr.probe[1].Store(probeAddr())
		seg.hdr.cma[0].Store(t.cmaVerdict(int(seg.hdr.pid[0].Load()), seg.hdr.probe[0].Load()))
	}
	answer := "ok"
	if err != nil {
		answer = err.Error()
	}
	if serr := t.o.Store.Set(ctx, key+"/ok", []byte(answer)); serr != nil {
		seg.unmap()
		return nil, shmFatal{serr}
	}
	if err != nil {
		return nil, err
	}
	return newShmLink(t, p, seg, 1), nil
}

// cmaFrom is the size from which messages go by CMA, 0 for never:
// TCPOptions' in tests, else DISTBENCH_SHM_CMA's (bytes; unset, 0 or off:
// never). See shmEnvCMA for why never is the default.
func (t *TCP) cmaFrom() int {
	if t.o.cmaFrom != 0 {
		return max(t.o.cmaFrom, 0)
	}
	n, err := strconv.Atoi(os.Getenv(shmEnvCMA))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// cmaVerdict is whether this rank, a consumer, reads its producer's memory
// by CMA: only if it would send by CMA itself, and the kernel lets it.
func (t *TCP) cmaVerdict(pid int, addr uint64) uint32 {
	if t.cmaFrom() > 0 && pid > 0 && canReadPeer(pid, addr) {
		return 1
	}
	return 2
}

// stopShm ends every shared-memory link for our own shutdown.
func (t *TCP) stopShm(deadline time.Time) {
	var wg sync.WaitGroup
	for _, p := range t.peers {
		if p != nil && p.shm != nil {
			wg.Add(1)
			go func() { defer wg.Done(); p.shm.stop(deadline) }()
		}
	}
	wg.Wait()
}
