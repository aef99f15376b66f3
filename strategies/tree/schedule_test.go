package tree

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

var update = flag.Bool("update", false, "rewrite the golden schedules in testdata/")

// The schedule tests run the real algorithms over a recording transport and
// compare the messages they send, step by step, with testdata/*.txt, so that
// a change to an algorithm shows as a readable diff. Regenerate with
//
//	go test ./strategies/tree/ -run Schedule -update
//
// The recording is deterministic: it runs in a synctest bubble, where
// synctest.Wait tells when every rank is blocked, and the transport moves
// messages only then, one step at a time, in a fixed order. The model is
// synchronous: a message sent during step s is transferred in step s+1 at the
// earliest, and each directed link carries one message per step (the oldest
// first, then the lowest tag), so a rank that has several chunks for one
// peer sends them in successive steps, as a link of finite bandwidth would.
//
// Every element carries its own index plus one on every rank and the
// operation is max, so every partial result does too, and the recorder can
// tell from a message's bytes which elements it carries: x[a:b].

func TestScheduleDoubleTree(t *testing.T) {
	for _, n := range []int{4, 5, 8} {
		golden(t, fmt.Sprintf("dbtree-allreduce-np%d.txt", n), schedule(t, n, algoDBTree, "allreduce", 12, 0))
	}
}

func TestScheduleRecursiveDoubling(t *testing.T) {
	for _, n := range []int{4, 5, 8} {
		golden(t, fmt.Sprintf("rd-allreduce-np%d.txt", n), schedule(t, n, algoRD, "allreduce", 4, 0))
	}
}

func TestScheduleBinomialBroadcast(t *testing.T) {
	for _, tc := range []struct{ n, root int }{{4, 0}, {5, 2}, {8, 0}} {
		golden(t, fmt.Sprintf("binomial-broadcast-np%d-root%d.txt", tc.n, tc.root),
			schedule(t, tc.n, algoAuto, "broadcast", 6, tc.root))
	}
}

// scheduleChunk is the chunk size of the recorded runs: two float32s, so
// that a dozen elements make a pipeline of several chunks.
const scheduleChunk = 8

// schedule runs one operation of count float32 elements on an n-rank world
// over the recording transport and returns its schedule.
func schedule(t *testing.T, n int, a algo, op string, count, root int) string {
	var out string
	synctest.Test(t, func(t *testing.T) {
		w := newRecWorld(n)
		comms := make([]collective.Comm, n)
		for r := range n {
			cfg := collective.Config{Rank: r, Size: n, Transport: w.ranks[r]}
			g, err := core.New(Name, cfg, func(*core.Group) (core.Algorithms, error) {
				return &algorithms{algo: a, chunk: scheduleChunk}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			comms[r] = g
		}
		tensors := make([]collective.Tensor, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for r, c := range comms {
			tensors[r] = collective.NewTensor(collective.Float32, count)
			x := tensors[r].Float32s()
			if op == "allreduce" || r == root {
				for i := range x {
					x[i] = float32(i + 1)
				}
			}
			wg.Go(func() {
				if op == "allreduce" {
					errs[r] = c.AllReduce(t.Context(), tensors[r], collective.Max)
				} else {
					errs[r] = c.Broadcast(t.Context(), tensors[r], root)
				}
			})
		}
		w.drive()
		wg.Wait()
		for r, c := range comms {
			c.Close()
			if errs[r] != nil {
				t.Fatalf("rank %d: %v", r, errs[r])
			}
			for i, v := range tensors[r].Float32s() {
				if v != float32(i+1) {
					t.Fatalf("rank %d: element %d is %v, want %d", r, i, v, i+1)
				}
			}
		}
		var b strings.Builder
		switch {
		case op == "broadcast":
			fmt.Fprintf(&b, "# tree binomial broadcast from root %d", root)
		default:
			fmt.Fprintf(&b, "# tree algo=%s allreduce (max)", a)
		}
		fmt.Fprintf(&b, ", np=%d, %d float32 elements (%d B), chunk %d B\n", n, count, 4*count, scheduleChunk)
		switch {
		case op == "broadcast":
			fmt.Fprintf(&b, "# tree: %s\n", topology(n, func(r int) node { return binomial(n, root, r) }))
		case a == algoDBTree:
			for i := range 2 {
				lo, hi := core.Block(count, 2, i)
				fmt.Fprintf(&b, "# tree %d (ch%d, x[%d:%d]): %s\n", i, i, lo, hi,
					topology(n, func(r int) node { return dtree(n, r)[i] }))
			}
		}
		out = b.String() + w.format()
	})
	return out
}

// topology writes a tree as "parent -> children" for every interior rank.
func topology(n int, place func(r int) node) string {
	var parts []string
	for r := range n {
		if nd := place(r); len(nd.children) > 0 {
			parts = append(parts, fmt.Sprintf("%d -> %s", r, strings.Trim(fmt.Sprint(nd.children), "[]")))
		}
	}
	return strings.Join(parts, "; ")
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s: schedule changed (run with -update to accept):\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines of want and got that differ, position by position.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d:\n  - %s\n  + %s\n", i+1, w, g)
		}
	}
	return b.String()
}

// recWorld is an in-memory transport world that delivers messages only when
// its driver says so, and records them.
type recWorld struct {
	ranks []*recTransport

	mu      sync.Mutex
	step    int
	queued  map[[2]int][]recMsg // per directed link (src, dst), in send order
	boxes   map[recKey][][]byte // delivered, per (dst, src, tag)
	changed []chan struct{}     // per rank: closed and replaced on a delivery to it
	log     []recMsg
	failed  error
}

type recKey struct {
	dst, src int
	tag      uint64
}

type recMsg struct {
	src, dst   int
	tag        uint64
	data       []byte
	sent, step int // the step it was sent in, and transferred in
}

func newRecWorld(n int) *recWorld {
	w := &recWorld{queued: map[[2]int][]recMsg{}, boxes: map[recKey][][]byte{}, changed: make([]chan struct{}, n)}
	for r := range n {
		w.ranks = append(w.ranks, &recTransport{w: w, rank: r})
		w.changed[r] = make(chan struct{})
	}
	return w
}

// drive moves messages until none is left to move: each time every rank is
// blocked, every link with messages queued transfers its oldest one.
func (w *recWorld) drive() {
	for {
		synctest.Wait()
		w.mu.Lock()
		links := make([][2]int, 0, len(w.queued))
		for l, q := range w.queued {
			if len(q) > 0 {
				links = append(links, l)
			}
		}
		if len(links) == 0 {
			w.mu.Unlock()
			return
		}
		w.step++
		slices.SortFunc(links, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
		for _, l := range links {
			q := w.queued[l]
			i := 0
			for j, m := range q {
				if m.sent < q[i].sent || m.sent == q[i].sent && m.tag < q[i].tag {
					i = j
				}
			}
			m := q[i]
			w.queued[l] = slices.Delete(q, i, i+1)
			m.step = w.step
			w.log = append(w.log, m)
			k := recKey{m.dst, m.src, m.tag}
			w.boxes[k] = append(w.boxes[k], m.data)
			close(w.changed[m.dst])
			w.changed[m.dst] = make(chan struct{})
		}
		w.mu.Unlock()
	}
}

// format writes the log, one line per message, grouped by step.
func (w *recWorld) format() string {
	var b bytes.Buffer
	b.WriteString("# step s: the messages transferred in step s: src -> dst, channel, elements, bytes\n")
	step := 0
	for _, m := range w.log {
		if m.step != step {
			step = m.step
			fmt.Fprintf(&b, "step %d\n", step)
		}
		fmt.Fprintf(&b, "  %d -> %d  ch%d  %-8s %3d B\n", m.src, m.dst, m.tag&0xff, elements(m.data), len(m.data))
	}
	fmt.Fprintf(&b, "# %d steps, %d messages\n", step, len(w.log))
	return b.String()
}

// elements names the elements a message carries from their values (index+1).
func elements(data []byte) string {
	x := collective.Tensor{DType: collective.Float32, Data: data}
	if x.Count() == 0 {
		return "x[]"
	}
	first := int(x.Float64At(0)) - 1
	for i := range x.Count() {
		if int(x.Float64At(i))-1 != first+i {
			return fmt.Sprintf("x?%v", x.Float32s()) // not a contiguous range: show the values
		}
	}
	return fmt.Sprintf("x[%d:%d]", first, first+x.Count())
}

// recTransport is one rank's end of a recWorld.
type recTransport struct {
	w    *recWorld
	rank int
}

var _ collective.Transport = (*recTransport)(nil)

func (t *recTransport) Rank() int           { return t.rank }
func (t *recTransport) Size() int           { return len(t.w.ranks) }
func (t *recTransport) PeerAddr(int) string { return "" }
func (t *recTransport) Close() error        { return nil }

func (t *recTransport) Abort(err error) {
	w := t.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed == nil {
		w.failed = fmt.Errorf("rank %d aborted: %w", t.rank, err)
		for r := range w.changed {
			close(w.changed[r])
			w.changed[r] = make(chan struct{})
		}
	}
}

func (t *recTransport) Send(ctx context.Context, peer int, tag uint64, data []byte) error {
	w := t.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return w.failed
	}
	l := [2]int{t.rank, peer}
	w.queued[l] = append(w.queued[l], recMsg{src: t.rank, dst: peer, tag: tag, data: bytes.Clone(data), sent: w.step})
	return nil
}

func (t *recTransport) Recv(ctx context.Context, peer int, tag uint64, buf []byte) error {
	w := t.w
	k := recKey{t.rank, peer, tag}
	for {
		w.mu.Lock()
		if q := w.boxes[k]; len(q) > 0 {
			w.boxes[k] = q[1:]
			w.mu.Unlock()
			if len(q[0]) != len(buf) {
				return &collective.MismatchError{What: "message size in bytes", Want: int64(len(buf)), Got: int64(len(q[0]))}
			}
			copy(buf, q[0])
			return nil
		}
		if w.failed != nil {
			w.mu.Unlock()
			return w.failed
		}
		ch := w.changed[t.rank]
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
