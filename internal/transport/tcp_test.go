package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/kernels"
	"github.com/distbench/distbench/internal/linkspec"
	"github.com/distbench/distbench/internal/wire"
)

var testToken = []byte("test-token")

// logLines collects a rank's log lines, for tests that check what was (not) said.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

type mesh struct {
	ts   []*TCP
	logs []*logLines
}

// startMesh builds size ranks at once, as size processes would, and returns
// their transports and errors.
func startMesh(size int, store driver.Store, tweak func(rank int, o *TCPOptions)) ([]*TCP, []error, []*logLines) {
	ts := make([]*TCP, size)
	errs := make([]error, size)
	logs := make([]*logLines, size)
	var wg sync.WaitGroup
	for r := range size {
		logs[r] = &logLines{}
		o := TCPOptions{
			Rank: r, Size: size, Store: store, JobID: "test-job", Token: testToken,
			ConnectTimeout: 10 * time.Second, Logf: logs[r].logf,
		}
		if tweak != nil {
			tweak(r, &o)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts[r], errs[r] = NewTCP(context.Background(), o)
		}()
	}
	wg.Wait()
	return ts, errs, logs
}

// newMesh builds a connected mesh that the test's cleanup closes.
func newMesh(t testing.TB, size int, tweak func(rank int, o *TCPOptions)) *mesh {
	t.Helper()
	ts, errs, logs := startMesh(size, newMemStore(), tweak)
	t.Cleanup(func() { closeAll(ts) })
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: NewTCP: %v", r, err)
		}
	}
	return &mesh{ts: ts, logs: logs}
}

func closeAll(ts []*TCP) {
	var wg sync.WaitGroup
	for _, tr := range ts {
		if tr != nil {
			wg.Add(1)
			go func() { defer wg.Done(); tr.Close() }()
		}
	}
	wg.Wait()
}

// killForTest drops every connection without a goodbye, as a crashed process
// would; rst makes them reset rather than close.
func (t *TCP) killForTest(rst bool) {
	t.mu.Lock()
	t.closed = true // its own readers stay quiet
	t.broken.Store(true)
	t.mu.Unlock()
	for _, p := range t.peers {
		if p != nil && p.conn != nil {
			if rst {
				p.conn.SetLinger(0)
			}
			p.conn.Close()
		}
	}
}

// queued reports how many messages under tag wait unclaimed in a mailbox.
func queued(m *Mailbox, tag uint64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.unexpected[tag])
}

// pattern returns n bytes that depend on seed. It fills a block of a prime
// size and doubles it with copy, which is cheap under the race detector; a
// prime block makes misplaced chunks visible.
func pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	m := min(n, 4093)
	for i := range m {
		b[i] = byte(r.Uint32())
	}
	for f := m; f < n; f *= 2 {
		copy(b[f:], b[:f])
	}
	return b
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestTCPMessageSizes(t *testing.T) {
	m := newMesh(t, 4, nil)
	sizes := []int{0, 1, 63, 65, 4099, 1 << 20, 64 << 20} // odd sizes: the padding after them
	for _, size := range sizes {
		for _, order := range []string{"recv first", "send first"} {
			t.Run(fmt.Sprintf("%d bytes/%s", size, order), func(t *testing.T) {
				ctx := ctxFor(t, 30*time.Second)
				// A ring: r sends to r+1. The largest size runs on
				// one link only, to bound the test's memory.
				pairs := [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}}
				if size > 1<<20 {
					pairs = pairs[:1]
				}
				tag := uint64(size)
				var wg sync.WaitGroup
				for _, pr := range pairs {
					src, dst := pr[0], pr[1]
					want := pattern(size, uint64(src))
					got := make([]byte, size)
					recvErr := make(chan error, 1)
					recv := func() { recvErr <- m.ts[dst].Recv(ctx, src, tag, got) }
					wg.Add(1)
					go func() {
						defer wg.Done()
						if order == "recv first" {
							go recv()
							time.Sleep(20 * time.Millisecond) // let it post
						}
						if err := m.ts[src].Send(ctx, dst, tag, want); err != nil {
							t.Errorf("rank %d → %d: Send: %v", src, dst, err)
							return
						}
						if order == "send first" {
							box := m.ts[dst].peers[src].box
							for queued(box, tag) == 0 {
								if ctx.Err() != nil {
									t.Errorf("rank %d ← %d: the message never arrived", dst, src)
									return
								}
								time.Sleep(time.Millisecond)
							}
							go recv()
						}
						if err := <-recvErr; err != nil {
							t.Errorf("rank %d ← %d: Recv: %v", dst, src, err)
							return
						}
						if !bytes.Equal(got, want) {
							t.Errorf("rank %d ← %d: %d bytes differ from what was sent", dst, src, size)
						}
					}()
				}
				wg.Wait()
			})
		}
	}
}

// Every frame the transport writes occupies a multiple of wire.FrameAlign
// bytes: header, payload, zero padding; so every payload starts aligned in
// the stream, which is what makes the kernel's copies fast (internal/wire).
func TestTCPFramesAligned(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{0, 1, 23, 24, 63, 64, 65, 4099, 1<<16 + 5}
	p := &peer{conn: c.(*net.TCPConn)}
	go func() {
		defer c.Close()
		for i, n := range sizes {
			h := wire.Header{Kind: wire.KindData, Tag: uint64(i), Length: uint64(n)}
			if _, err := p.writeLocked(h, pattern(n, uint64(i)), time.Now().Add(10*time.Second)); err != nil {
				t.Errorf("frame %d: %v", i, err)
				return
			}
		}
	}()
	r, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer r.Close()
	r.SetReadDeadline(time.Now().Add(10 * time.Second))
	stream, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for i, n := range sizes {
		end := off + int(wire.FrameSize(uint64(n)))
		if off%wire.FrameAlign != 0 || end > len(stream) {
			t.Fatalf("frame %d (%d bytes) at offset %d of a %d-byte stream", i, n, off, len(stream))
		}
		var hb [wire.HeaderSize]byte
		copy(hb[:], stream[off:])
		h, err := wire.DecodeHeader(&hb, 1<<20)
		if err != nil || h.Tag != uint64(i) || h.Length != uint64(n) {
			t.Fatalf("frame %d: header %+v, %v", i, h, err)
		}
		payload := stream[off+wire.HeaderSize : off+wire.HeaderSize+n]
		if !bytes.Equal(payload, pattern(n, uint64(i))) {
			t.Errorf("frame %d: payload differs", i)
		}
		if pad := stream[off+wire.HeaderSize+n : end]; len(pad) != wire.PadLen(uint64(n)) || bytes.Count(pad, []byte{0}) != len(pad) {
			t.Errorf("frame %d: padding %x", i, pad)
		}
		off = end
	}
	if off != len(stream) {
		t.Errorf("%d bytes after the last frame", len(stream)-off)
	}
}

// Many tags interleaved on every link: each (source, tag) stream arrives
// whole and in order, whatever the receivers' pace.
func TestTCPManyTagsFIFO(t *testing.T) {
	const (
		size  = 4
		tags  = 5
		count = 30
	)
	m := newMesh(t, size, nil)
	ctx := ctxFor(t, 30*time.Second)
	msgSize := func(src, tag, seq int) int { return 8 + (src*131+tag*17+seq*7)%300 }
	var wg sync.WaitGroup
	for src := range size {
		for dst := range size {
			if src == dst {
				continue
			}
			wg.Add(1)
			go func() { // one sender per link, tags round-robin
				defer wg.Done()
				for seq := range count {
					for tag := range tags {
						b := make([]byte, msgSize(src, tag, seq))
						binary.LittleEndian.PutUint32(b, uint32(seq))
						binary.LittleEndian.PutUint32(b[4:], uint32(src<<8|tag))
						if err := m.ts[src].Send(ctx, dst, uint64(tag), b); err != nil {
							t.Errorf("Send %d→%d tag %d #%d: %v", src, dst, tag, seq, err)
							return
						}
					}
				}
			}()
			for tag := range tags {
				wg.Add(1)
				go func() { // one receiver per stream, at its own pace
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(src), uint64(dst*tags+tag)))
					for seq := range count {
						if r.IntN(4) == 0 {
							time.Sleep(time.Duration(r.IntN(2000)) * time.Microsecond)
						}
						b := make([]byte, msgSize(src, tag, seq))
						if err := m.ts[dst].Recv(ctx, src, uint64(tag), b); err != nil {
							t.Errorf("Recv %d←%d tag %d #%d: %v", dst, src, tag, seq, err)
							return
						}
						gotSeq, gotID := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
						if gotSeq != uint32(seq) || gotID != uint32(src<<8|tag) {
							t.Errorf("Recv %d←%d tag %d: got message #%d from stream %#x, want #%d", dst, src, tag, gotSeq, gotID, seq)
							return
						}
					}
				}()
			}
		}
	}
	wg.Wait()
}

func TestTCPSizeMismatch(t *testing.T) {
	m := newMesh(t, 2, nil)
	for _, order := range []string{"recv first", "send first"} {
		t.Run(order, func(t *testing.T) {
			ctx := ctxFor(t, 10*time.Second)
			errc := make(chan error, 1)
			buf := make([]byte, 12)
			if order == "recv first" {
				go func() { errc <- m.ts[1].Recv(ctx, 0, 5, buf) }()
				time.Sleep(20 * time.Millisecond)
			}
			if err := m.ts[0].Send(ctx, 1, 5, make([]byte, 10)); err != nil {
				t.Fatal(err)
			}
			if order == "send first" {
				for queued(m.ts[1].peers[0].box, 5) == 0 {
					time.Sleep(time.Millisecond)
				}
				go func() { errc <- m.ts[1].Recv(ctx, 0, 5, buf) }()
			}
			err := <-errc
			var me *collective.MismatchError
			if !errors.As(err, &me) || me.Want != 12 || me.Got != 10 || !errors.Is(err, collective.ErrMismatch) {
				t.Fatalf("got %v, want a MismatchError of 12 vs 10 bytes", err)
			}
			// The link is still in step: the next message arrives whole.
			if err := m.ts[0].Send(ctx, 1, 5, []byte("next")); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 4)
			if err := m.ts[1].Recv(ctx, 0, 5, got); err != nil || string(got) != "next" {
				t.Fatalf("next message: %q, %v", got, err)
			}
		})
	}
}

// A rank with the wrong token, job id or world size is refused, and both
// sides say why.
func TestTCPRefused(t *testing.T) {
	tests := []struct {
		name     string
		tweak    func(o *TCPOptions)
		want     error
		badText  string // in the bad rank's error
		goodText string // in the good rank's error
	}{
		{"wrong token", func(o *TCPOptions) { o.Token = []byte("guess") }, wire.ErrAuth,
			"does not match this job's token", "refused 1 connection(s)"},
		{"wrong job id", func(o *TCPOptions) { o.JobID = "other-job" }, wire.ErrJobMismatch,
			"the peer belongs to another job", "job id mismatch"},
		{"wrong world size", func(o *TCPOptions) { o.Size = 3 }, wire.ErrSizeMismatch,
			"world size 2, the peer says 3", "world size mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			ts, errs, _ := startMesh(2, newMemStore(), func(rank int, o *TCPOptions) {
				o.ConnectTimeout = time.Second
				if rank == 1 {
					tt.tweak(o)
				}
			})
			defer closeAll(ts)
			bad, good := errs[1], errs[0]
			t.Logf("bad rank: %v\ngood rank: %v", bad, good)
			if !errors.Is(bad, tt.want) || !strings.Contains(bad.Error(), tt.badText) {
				t.Errorf("bad rank: got %v, want %v saying %q", bad, tt.want, tt.badText)
			}
			if bad != nil && !strings.Contains(bad.Error(), "rank 0 (127.0.0.1:") {
				t.Errorf("bad rank's error does not name rank 0 and its address: %v", bad)
			}
			if good == nil || !strings.Contains(good.Error(), tt.goodText) || !strings.Contains(good.Error(), "ranks [1]") {
				t.Errorf("good rank: got %v, want a refusal saying %q and naming rank 1", good, tt.goodText)
			}
			if el := time.Since(start); el > 30*time.Second { // a hang, not a slow machine
				t.Errorf("took %v with a 1s connect timeout", el)
			}
		})
	}
}

// A stray connection (here, an HTTP client) is refused without disturbing
// the mesh.
func TestTCPStrayConnection(t *testing.T) {
	store := newMemStore()
	opts := func(rank int, logf func(string, ...any)) TCPOptions {
		return TCPOptions{Rank: rank, Size: 2, Store: store, JobID: "j", Token: testToken, ConnectTimeout: 10 * time.Second, Logf: logf}
	}
	logs := &logLines{}
	done := make(chan struct{})
	var rank0 *TCP
	var err0 error
	go func() {
		defer close(done)
		rank0, err0 = NewTCP(context.Background(), opts(0, logs.logf))
	}()
	addr, err := store.Get(ctxFor(t, 5*time.Second), DefaultKeyPrefix+"0")
	if err != nil {
		t.Fatal(err)
	}
	stray, err := net.Dial("tcp", string(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	stray.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	for !strings.Contains(logs.String(), "refused") {
		time.Sleep(5 * time.Millisecond)
	}
	rank1, err1 := NewTCP(context.Background(), opts(1, nil))
	<-done
	defer closeAll([]*TCP{rank0, rank1})
	if err0 != nil || err1 != nil {
		t.Fatalf("rank 0: %v; rank 1: %v", err0, err1)
	}
	if !strings.Contains(logs.String(), "bad magic") {
		t.Errorf("rank 0's log does not say why it refused the stray:\n%s", logs)
	}
	ctx := ctxFor(t, 5*time.Second)
	if err := rank1.Send(ctx, 0, 1, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 2)
	if err := rank0.Recv(ctx, 1, 1, got); err != nil || string(got) != "hi" {
		t.Fatalf("after the stray: %q, %v", got, err)
	}
}

// gatedStore holds every Get until open is closed: the ranks publish their
// addresses, and dial only once the test lets them.
type gatedStore struct {
	driver.Store
	open chan struct{}
}

func (g gatedStore) Get(ctx context.Context, key string) ([]byte, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Store.Get(ctx, key)
}

// Hundreds of strangers that connect to every listening rank while the mesh
// forms, before any rank dials, neither keep a rank out nor hold the mesh up
// until their handshakes time out; and a mesh that does fail says so in one
// line that counts them rather than lists them.
func TestTCPStrangersWhileForming(t *testing.T) {
	const (
		strangers = 200 // per listener
		// Longer than the test's bound, so that a mesh that waits for
		// the strangers' handshakes to end fails it.
		handshakeTimeout = 40 * time.Second
		bound            = 20 * time.Second
	)
	tests := []struct {
		name    string
		size    int
		say     []byte        // what each stranger writes, if anything
		absent  int           // a rank that never starts, or -1
		connect time.Duration // ConnectTimeout
	}{
		{"idle strangers", 4, nil, -1, time.Minute},
		{"strangers speaking HTTP, a rank absent", 2, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 1, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newMemStore()
			gate := gatedStore{store, make(chan struct{})}
			ts := make([]*TCP, tt.size)
			errs := make([]error, tt.size)
			var wg sync.WaitGroup
			for r := range tt.size {
				if r == tt.absent {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					ts[r], errs[r] = NewTCP(context.Background(), TCPOptions{
						Rank: r, Size: tt.size, Store: gate, JobID: "test-job", Token: testToken,
						ConnectTimeout: tt.connect, HandshakeTimeout: handshakeTimeout,
					})
				}()
			}
			var conns []net.Conn
			var opening sync.Once
			open := func() { opening.Do(func() { close(gate.open) }) }
			defer func() {
				open() // if the test failed before the ranks could dial
				wg.Wait()
				closeAll(ts)
				for _, c := range conns {
					c.Close()
				}
			}()
			for r := range tt.size - 1 { // every rank but the last accepts
				if r == tt.absent {
					continue
				}
				addr, err := store.Get(ctxFor(t, time.Minute), DefaultKeyPrefix+strconv.Itoa(r))
				if err != nil {
					t.Fatal(err)
				}
				for range strangers {
					c, err := net.Dial("tcp", string(addr))
					if err != nil {
						if tt.absent >= 0 {
							break // the failing rank gave up already: a slow machine
						}
						t.Fatalf("stranger to rank %d: %v", r, err)
					}
					conns = append(conns, c)
					if tt.say != nil {
						c.Write(tt.say)
					}
				}
			}
			start := time.Now()
			open()
			wg.Wait()
			elapsed := time.Since(start)

			if tt.absent < 0 {
				for r, err := range errs {
					if err != nil {
						t.Fatalf("rank %d: %v", r, err)
					}
				}
				if elapsed > bound {
					t.Errorf("the mesh took %v to form beside %d strangers per listener; want well under the %v handshake timeout", elapsed, strangers, handshakeTimeout)
				}
				ctx := ctxFor(t, 10*time.Second)
				last := tt.size - 1
				if err := ts[last].Send(ctx, 0, 1, []byte("hi")); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, 2)
				if err := ts[0].Recv(ctx, last, 1, got); err != nil || string(got) != "hi" {
					t.Fatalf("after the strangers: %q, %v", got, err)
				}
				return
			}
			err := errs[0]
			t.Logf("%d bytes: %v", len(fmt.Sprint(err)), err)
			if err == nil {
				t.Fatal("rank 0 formed a mesh without rank 1")
			}
			msg := err.Error()
			if len(msg) > 1000 || strings.Contains(msg, "\n") || !strings.Contains(msg, "ranks [1]") ||
				!regexp.MustCompile(`refused \d+ connection\(s\), the first: .*bad magic`).MatchString(msg) {
				t.Errorf("want one line of at most 1000 bytes naming rank 1 and counting the refused strangers, got %d bytes: %s", len(msg), msg)
			}
		})
	}
}

// A peer that dies (its connections closed or reset without a goodbye)
// fails the receives waiting on it, promptly, with an error naming its rank
// and address; receives from the living are not disturbed.
func TestTCPKilledPeer(t *testing.T) {
	for _, mode := range []string{"close", "reset"} {
		t.Run(mode, func(t *testing.T) {
			m := newMesh(t, 4, nil)
			const dead = 3
			deadAddr := m.ts[dead].Addr()
			ctx := ctxFor(t, 20*time.Second)
			errc := make(chan error, dead)
			for r := range dead {
				go func() { errc <- m.ts[r].Recv(ctx, dead, 9, make([]byte, 4)) }()
			}
			living := make(chan error, 1)
			go func() { living <- m.ts[0].Recv(ctx, 1, 9, make([]byte, 4)) }()
			time.Sleep(20 * time.Millisecond)

			start := time.Now()
			m.ts[dead].killForTest(mode == "reset")
			for range dead {
				err := <-errc
				t.Log(err)
				var pe *collective.PeerError
				if !errors.As(err, &pe) || pe.Rank != dead || pe.Addr != deadAddr {
					t.Fatalf("got %v, want a PeerError naming rank %d (%s)", err, dead, deadAddr)
				}
				if !strings.Contains(err.Error(), "connection") {
					t.Errorf("error %q does not say what happened", err)
				}
			}
			// Well before the receives' 20s deadline and the 30s peer
			// timeout, with room for a machine 10 times slower.
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("receivers learned after %v", el)
			}
			// Sends to the dead fail the same way.
			var pe *collective.PeerError
			if err := m.ts[0].Send(ctx, dead, 9, []byte("x")); !errors.As(err, &pe) || pe.Rank != dead {
				t.Errorf("Send to the dead: %v", err)
			}
			// The living still talk.
			if err := m.ts[1].Send(ctx, 0, 9, []byte("live")); err != nil {
				t.Fatal(err)
			}
			if err := <-living; err != nil {
				t.Errorf("receive from a living rank: %v", err)
			}
		})
	}
}

// Abort on one rank fails every rank's pending receives, from every peer,
// naming the aborting rank and its reason.
func TestTCPAbort(t *testing.T) {
	// A close timeout far above the bounds below, so that an abort that
	// waited for it, not for the peers' acknowledgements, fails them.
	m := newMesh(t, 4, func(_ int, o *TCPOptions) { o.CloseTimeout = 30 * time.Second })
	const aborter = 1
	ctx := ctxFor(t, 20*time.Second)
	type result struct {
		rank, from int
		err        error
	}
	results := make(chan result, 16)
	n := 0
	for r := range 4 {
		for from := range 4 {
			if from == r {
				continue
			}
			n++
			go func() { results <- result{r, from, m.ts[r].Recv(ctx, from, 77, make([]byte, 8))} }()
		}
	}
	time.Sleep(30 * time.Millisecond)
	start := time.Now()
	m.ts[aborter].Abort(errors.New("disk on fire"))
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("Abort took %v", el)
	}
	for range n {
		res := <-results
		t.Logf("rank %d from %d: %v", res.rank, res.from, res.err)
		if res.rank == aborter {
			if !errors.Is(res.err, collective.ErrClosed) {
				t.Errorf("the aborting rank's own receive: %v, want ErrClosed", res.err)
			}
			continue
		}
		var pe *collective.PeerError
		if !errors.As(res.err, &pe) || pe.Rank != aborter || pe.Addr != m.ts[aborter].Addr() || !strings.Contains(res.err.Error(), "aborted: disk on fire") {
			t.Errorf("rank %d receiving from %d: got %v, want rank %d's abort", res.rank, res.from, res.err, aborter)
		}
	}
	if el := time.Since(start); el > 10*time.Second { // the receives' deadline is 20s
		t.Errorf("the abort took %v to reach every rank", el)
	}
	// The job is dead: sends fail too, with the same story.
	if err := m.ts[2].Send(ctx, 3, 1, []byte("x")); err == nil || !strings.Contains(err.Error(), "aborted: disk on fire") {
		t.Errorf("Send after the abort: %v", err)
	}
}

func TestTCPTimeout(t *testing.T) {
	m := newMesh(t, 2, nil)
	if got, want := m.ts[0].PeerAddr(1), m.ts[1].Addr(); got != want || !strings.HasPrefix(got, "127.0.0.1:") {
		t.Errorf("PeerAddr(1) = %q, want %q", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := m.ts[0].Recv(ctx, 1, 3, make([]byte, 1))
	t.Log(err)
	var te *collective.TimeoutError
	if !errors.Is(err, collective.ErrTimeout) || !errors.As(err, &te) {
		t.Fatalf("got %v, want a TimeoutError", err)
	}
	if want := "rank 1 (" + m.ts[1].Addr() + ")"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
	// A send whose deadline has passed times out too, naming the peer,
	// and leaves the link usable.
	err = m.ts[0].Send(ctx, 1, 3, []byte("late"))
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "rank 1 (") {
		t.Fatalf("Send after the deadline: %v", err)
	}
	ctx2 := ctxFor(t, 5*time.Second)
	if err := m.ts[0].Send(ctx2, 1, 3, []byte("ok")); err != nil {
		t.Fatalf("Send after a timed-out send: %v", err)
	}
	if err := m.ts[1].Recv(ctx2, 0, 3, make([]byte, 2)); err != nil {
		t.Fatal(err)
	}
}

// Close says goodbye: what was sent before still arrives, the peer's later
// receives fail at once with ErrPeerClosed rather than at their deadline,
// and nobody logs a lost peer.
func TestTCPGracefulClose(t *testing.T) {
	// A close timeout far above the bound below: a Close that waited for
	// it, not for the peer's acknowledgement, fails it.
	m := newMesh(t, 2, func(_ int, o *TCPOptions) { o.CloseTimeout = 30 * time.Second })
	ctx := ctxFor(t, 20*time.Second)
	if err := m.ts[0].Send(ctx, 1, 1, []byte("last words")); err != nil {
		t.Fatal(err)
	}
	pending := make(chan error, 1)
	go func() { pending <- m.ts[0].Recv(ctx, 1, 2, make([]byte, 1)) }()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	m.ts[0].Close()
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("Close took %v: the peer did not acknowledge", el)
	}
	if err := <-pending; !errors.Is(err, collective.ErrClosed) {
		t.Errorf("pending receive on the closed rank: %v, want ErrClosed", err)
	}
	got := make([]byte, 10)
	if err := m.ts[1].Recv(ctx, 0, 1, got); err != nil || string(got) != "last words" {
		t.Fatalf("message sent before Close: %q, %v", got, err)
	}
	err := m.ts[1].Recv(ctx, 0, 1, got)
	var pe *collective.PeerError
	if !errors.Is(err, ErrPeerClosed) || !errors.As(err, &pe) || pe.Rank != 0 || pe.Addr != m.ts[0].Addr() {
		t.Errorf("receive from the closed rank: %v, want ErrPeerClosed naming rank 0", err)
	}
	if err := m.ts[1].Send(ctx, 0, 1, got); !errors.Is(err, ErrPeerClosed) {
		t.Errorf("send to the closed rank: %v, want ErrPeerClosed", err)
	}
	if err := m.ts[0].Send(ctx, 1, 1, got); !errors.Is(err, collective.ErrClosed) {
		t.Errorf("send on the closed rank: %v, want ErrClosed", err)
	}
	m.ts[1].Close()
	for r, l := range m.logs {
		if s := l.String(); strings.Contains(s, "lost") {
			t.Errorf("rank %d logged a lost peer on an orderly close:\n%s", r, s)
		}
	}
}

func TestTCPSizeOne(t *testing.T) {
	tr, err := NewTCP(context.Background(), TCPOptions{Rank: 0, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.Rank() != 0 || tr.Size() != 1 {
		t.Errorf("rank %d of %d", tr.Rank(), tr.Size())
	}
	if err := tr.Send(context.Background(), 0, 0, nil); !errors.Is(err, collective.ErrInvalid) {
		t.Errorf("send to self: %v, want ErrInvalid", err)
	}
}

func TestTCPOptionsValidate(t *testing.T) {
	store := newMemStore()
	ok := TCPOptions{Rank: 1, Size: 2, Store: store, Token: testToken}
	tests := []struct {
		name  string
		tweak func(o *TCPOptions)
		text  string
	}{
		{"size", func(o *TCPOptions) { o.Size = 0 }, "world size 0"},
		{"rank", func(o *TCPOptions) { o.Rank = 2 }, "rank 2 out of range"},
		{"store", func(o *TCPOptions) { o.Store = nil }, "rendezvous store"},
		{"token", func(o *TCPOptions) { o.Token = nil }, "empty job token"},
		{"job id", func(o *TCPOptions) { o.JobID = strings.Repeat("x", 200) }, "job id of 200 bytes"},
		{"max message", func(o *TCPOptions) { o.MaxMessage = -1 }, "negative MaxMessage"},
		{"liveness", func(o *TCPOptions) { o.HeartbeatInterval, o.PeerTimeout = time.Second, time.Second }, "at least twice"},
		{"probe", func(o *TCPOptions) { o.ProbeTimeout = -time.Second }, "probe -1s"},
		{"link", func(o *TCPOptions) { o.Link = &linkspec.Link{Rate: -1} }, "negative rate"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for _, tt := range tests {
		o := ok
		tt.tweak(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.text)
		}
		if _, err := NewTCP(context.Background(), o); err == nil {
			t.Errorf("%s: NewTCP accepted invalid options", tt.name)
		}
	}
}

func TestTCPMessageLimit(t *testing.T) {
	m := newMesh(t, 2, func(rank int, o *TCPOptions) { o.MaxMessage = 1 << 10 })
	err := m.ts[0].Send(ctxFor(t, 5*time.Second), 1, 0, make([]byte, 1<<10+1))
	if !errors.Is(err, collective.ErrInvalid) || !strings.Contains(err.Error(), "1024-byte limit") {
		t.Errorf("got %v", err)
	}
}

func benchMesh(b *testing.B, link *linkspec.Link) *mesh {
	return newMesh(b, 2, func(rank int, o *TCPOptions) { o.Link = link })
}

func BenchmarkTCPPingPong(b *testing.B) {
	for _, size := range []int{8, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) { pingPong(b, benchMesh(b, nil), size) })
	}
}

// pingPong times b.N round trips of size bytes between ranks 0 and 1 of m.
func pingPong(b *testing.B, m *mesh, size int) {
	ctx := ctxFor(b, 10*time.Minute)
	ping, pong := make([]byte, size), make([]byte, size)
	done := make(chan error, 1)
	go func() {
		for range b.N {
			if err := m.ts[1].Recv(ctx, 0, 1, pong); err != nil {
				done <- err
				return
			}
			if err := m.ts[1].Send(ctx, 0, 2, pong); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	b.SetBytes(int64(2 * size))
	b.ResetTimer()
	for range b.N {
		if err := m.ts[0].Send(ctx, 1, 1, ping); err != nil {
			b.Fatal(err)
		}
		if err := m.ts[0].Recv(ctx, 1, 2, ping); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkTCPShapedPingPong reports the one-way latency a shaped link
// gives small messages, against the setting.
func BenchmarkTCPShapedPingPong(b *testing.B) {
	for _, spec := range []string{"none", "lan", "10g", "1Gbit,1ms"} {
		b.Run(spec, func(b *testing.B) {
			link, err := linkspec.ParseLink(spec)
			if err != nil {
				b.Fatal(err)
			}
			pingPong(b, benchMesh(b, &link), 8)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/2, "µs/one-way")
		})
	}
}

// BenchmarkTCPStream measures one-way throughput of 16 MiB messages; the
// receiver keeps a receive posted, so payloads land in place.
func BenchmarkTCPStream(b *testing.B) {
	const size = 16 << 20
	m := benchMesh(b, nil)
	ctx := ctxFor(b, 10*time.Minute)
	src, dst := make([]byte, size), make([]byte, size)
	done := make(chan error, 1)
	go func() {
		for range b.N {
			if err := m.ts[1].Recv(ctx, 0, 1, dst); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		if err := m.ts[0].Send(ctx, 1, 1, src); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// Closing every rank while traffic flows ends every loop with an error, not
// a hang, and leaves no goroutine behind.
func TestTCPCloseDuringTraffic(t *testing.T) {
	before := runtime.NumGoroutine()
	ts, errs, _ := startMesh(3, newMemStore(), nil)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	ctx := ctxFor(t, 20*time.Second)
	var wg sync.WaitGroup
	for src := range 3 {
		for dst := range 3 {
			if src == dst {
				continue
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				b := make([]byte, 64<<10)
				for ts[src].Send(ctx, dst, 1, b) == nil {
				}
			}()
			go func() {
				defer wg.Done()
				b := make([]byte, 64<<10)
				for ts[dst].Recv(ctx, src, 1, b) == nil {
				}
			}()
		}
	}
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	closeAll(ts)
	wg.Wait()
	if el := time.Since(start); el > 30*time.Second { // a hang, not a slow machine
		t.Errorf("closing under traffic took %v", el)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// A large message that arrives before its receive is read in chunks, and a
// receive posted part-way through takes over: what was read so far is moved
// into its buffer and the rest lands there directly. A shaped link slows
// the message down enough to post at chosen points.
func TestTCPClaimMidMessage(t *testing.T) {
	m := newMesh(t, 2, func(rank int, o *TCPOptions) { o.Link = &linkspec.Link{Rate: 200e6} })
	const size = 8 << 20 // 336ms at 200 Mbit/s
	tests := []struct {
		name  string
		after time.Duration // when to post the receive
		buf   int
	}{
		{"while staging", 60 * time.Millisecond, size},
		{"after staging", 250 * time.Millisecond, size},
		{"wrong size", 60 * time.Millisecond, size - 1},
		{"reduce, while staging", 60 * time.Millisecond, size},
		{"reduce, after staging", 250 * time.Millisecond, size},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t, 20*time.Second)
			tag := uint64(100 + i)
			want := pattern(size, tag)
			sent := make(chan error, 1)
			go func() { sent <- m.ts[0].Send(ctx, 1, tag, want) }()
			time.Sleep(tt.after)
			got := make([]byte, tt.buf)
			if strings.HasPrefix(tt.name, "reduce") {
				// Reducing into zeros with uint8 max leaves the message.
				rv, err := m.ts[1].PostRecvReduce(0, tag, got, kernels.Reduction(collective.Uint8, collective.Max))
				if err == nil {
					err = rv.Wait(ctx)
				}
				if err := <-sent; err != nil {
					t.Fatal(err)
				}
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("reduce receive: %v; content equal: %v", err, bytes.Equal(got, want))
				}
				return
			}
			err := m.ts[1].Recv(ctx, 0, tag, got)
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if tt.buf != size {
				var me *collective.MismatchError
				if !errors.As(err, &me) || me.Got != size {
					t.Fatalf("got %v, want a MismatchError", err)
				}
			} else if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("Recv: %v; content equal: %v", err, bytes.Equal(got, want))
			}
			if n := queued(m.ts[1].peers[0].box, tag); n != 0 {
				t.Errorf("%d messages left in the unexpected queue", n)
			}
			// The stream is still in step.
			if err := m.ts[0].Send(ctx, 1, tag, []byte("next")); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 4)
			if err := m.ts[1].Recv(ctx, 0, tag, b); err != nil || string(b) != "next" {
				t.Fatalf("next message: %q, %v", b, err)
			}
		})
	}
}

// A rank that gives up while the mesh forms aborts it; a rank still
// waiting for a peer that never came must fail with that abort at once,
// not crash on the missing peer's mailbox nor wait out its own
// ConnectTimeout.
func TestTCPAbortWhileForming(t *testing.T) {
	store := newMemStore()
	errs := make(chan error, 2)
	start := time.Now()
	for r := range 2 { // rank 2 of 3 never starts
		connect := time.Minute
		if r == 1 {
			connect = 500 * time.Millisecond
		}
		go func() {
			tr, err := NewTCP(context.Background(), TCPOptions{
				Rank: r, Size: 3, Store: store, JobID: "test-job", Token: testToken, ConnectTimeout: connect,
			})
			if tr != nil {
				tr.Close()
			}
			errs <- err
		}()
	}
	for range 2 {
		err := <-errs
		if err == nil {
			t.Fatal("a mesh missing rank 2 formed")
		}
		t.Log(err)
		if strings.HasPrefix(err.Error(), "transport: rank 0:") && !regexp.MustCompile(`rank 1 \(127\.0\.0\.1:\d+\).*aborted`).MatchString(err.Error()) {
			t.Errorf("rank 0's error does not say that rank 1 aborted the job: %v", err)
		}
	}
	// Rank 0 waited with a minute's ConnectTimeout; rank 1's abort must end
	// that wait. Half of the minute holds at 10x slowdown.
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("rank 0 failed after %v, at its own ConnectTimeout, not at rank 1's abort", el)
	}
}
