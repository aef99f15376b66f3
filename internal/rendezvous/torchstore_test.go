package rendezvous

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTorch is a TCPStore master daemon in Go, written from torch's
// TCPStoreMasterDaemon (TCPStoreBackend.cpp in 2.x, TCPStore.cpp in 1.13):
// single-threaded in effect (one mutex), waiters answered on set, and in
// the 2.x dialect a connection whose first request is not VALIDATE with
// the magic number is dropped. It records each connection's bytes.
type fakeTorch struct {
	dialect    torchDialect
	ignoreMisc bool // as the libuv backend, leave an unvalidated connection unanswered and open
	ln         net.Listener

	mu      sync.Mutex
	kv      map[string][]byte
	waiters []*fakeWaiter
	got     [][]byte // each connection's requests, in order of accepting
}

type fakeWaiter struct {
	keys []string
	w    io.Writer
}

func newFakeTorch(t *testing.T, d torchDialect) *fakeTorch {
	return newFakeTorchOpts(t, d, false)
}

func newFakeTorchOpts(t *testing.T, d torchDialect, ignoreMisc bool) *fakeTorch {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeTorch{dialect: d, ignoreMisc: ignoreMisc, ln: ln, kv: map[string][]byte{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.got = append(f.got, nil)
			i := len(f.got) - 1
			f.mu.Unlock()
			go f.serve(c, i)
		}
	}()
	return f
}

func (f *fakeTorch) addr() string { return f.ln.Addr().String() }

// recorder appends what the connection reads to f.got[i].
type recorder struct {
	f *fakeTorch
	i int
	r io.Reader
}

func (r recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.f.mu.Lock()
	r.f.got[r.i] = append(r.f.got[r.i], p[:n]...)
	r.f.mu.Unlock()
	return n, err
}

func (f *fakeTorch) serve(c net.Conn, i int) {
	defer c.Close()
	br := bufio.NewReader(recorder{f, i, c})
	str := func() string {
		var n uint64
		binary.Read(br, binary.LittleEndian, &n)
		b := make([]byte, min(n, 1<<20))
		io.ReadFull(br, b)
		return string(b)
	}
	u64 := func() uint64 {
		var n uint64
		binary.Read(br, binary.LittleEndian, &n)
		return n
	}
	vec := func(b []byte) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, uint64(len(b))), b...)
	}
	first := true
	for {
		qb, err := br.ReadByte()
		if err != nil {
			return
		}
		q := torchQuery(qb)
		if f.dialect == torch1 {
			q++
		}
		if f.dialect == torch2 && first != (q == tqValidate) {
			if f.ignoreMisc {
				io.Copy(io.Discard, br) // the libuv backend: no answer, no close
			}
			return // "Miscellaneous client without VALIDATE query is detected"
		}
		first = false
		f.mu.Lock()
		switch q {
		case tqValidate:
			var m uint32
			binary.Read(br, binary.LittleEndian, &m)
			if m != torchValidationMagic {
				f.mu.Unlock()
				return
			}
		case tqSet:
			k := str()
			v := []byte(str())
			f.set(k, v)
		case tqGet:
			k := str()
			v, ok := f.kv[k]
			if !ok {
				f.mu.Unlock()
				return // std::out_of_range from tcpStore_.at
			}
			c.Write(vec(v))
		case tqAdd:
			k := str()
			d := int64(u64())
			old, _ := strconv.ParseInt(string(f.kv[k]), 10, 64)
			f.set(k, []byte(strconv.FormatInt(old+d, 10)))
			c.Write(binary.LittleEndian.AppendUint64(nil, uint64(old+d)))
		case tqCompareSet:
			k, exp, des := str(), []byte(str()), []byte(str())
			cur, ok := f.kv[k]
			switch {
			case !ok && len(exp) == 0:
				f.set(k, des)
				c.Write(vec(des))
			case !ok:
				c.Write(vec(exp))
			default:
				if bytes.Equal(cur, exp) {
					f.set(k, des)
				}
				c.Write(vec(f.kv[k]))
			}
		case tqCheck, tqWait:
			keys := make([]string, u64())
			for j := range keys {
				keys[j] = str()
			}
			ready := f.have(keys)
			switch {
			case q == tqCheck && ready:
				c.Write([]byte{torchReady})
			case q == tqCheck:
				c.Write([]byte{torchNotReady})
			case ready:
				c.Write([]byte{torchStopWaiting})
			default:
				f.waiters = append(f.waiters, &fakeWaiter{keys, c})
			}
		case tqPing:
			var nonce uint32
			binary.Read(br, binary.LittleEndian, &nonce)
			c.Write(binary.LittleEndian.AppendUint32(nil, nonce))
		case tqGetNumKeys:
			c.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(f.kv))))
		default:
			f.mu.Unlock()
			return // "Unexpected query type"
		}
		f.mu.Unlock()
	}
}

func (f *fakeTorch) have(keys []string) bool {
	for _, k := range keys {
		if _, ok := f.kv[k]; !ok {
			return false
		}
	}
	return true
}

func (f *fakeTorch) set(k string, v []byte) {
	f.kv[k] = v
	rest := f.waiters[:0]
	for _, w := range f.waiters {
		if f.have(w.keys) {
			w.w.Write([]byte{torchStopWaiting})
		} else {
			rest = append(rest, w)
		}
	}
	f.waiters = rest
}

func (f *fakeTorch) requests() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][]byte, len(f.got))
	for i, b := range f.got {
		out[i] = append([]byte(nil), b...)
	}
	return out
}

// The byte-exact requests, from torch's own encoders: TCPStore.cpp's
// SendBuffer (2.x) or tcputil::sendValue/sendString (1.13) write the query
// type byte, then each string as a uint64 length and its bytes
// (appendString, appendBytes), an int64 as 8 raw bytes (appendValue), and
// CHECK's and WAIT's key count as a raw size_t (TCPStore::check, doWait).
// VALIDATE and its uint32 validationMagicNumber 0x3C85F7CE come from
// TCPStoreBackend.hpp and TCPStore's constructor (2.x only).
func TestTorchRequestEncoding(t *testing.T) {
	h := func(s string) []byte {
		b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"validate (2.x)", torchValidate(), "00 cef7853c"},
		{"set /k=v (2.x: SET is 1)", newTorchReq(torch2, tqSet).str("/k").bytes([]byte("v")).b,
			"01 0200000000000000 2f6b 0100000000000000 76"},
		{"set /k=v (1.13: SET is 0)", newTorchReq(torch1, tqSet).str("/k").bytes([]byte("v")).b,
			"00 0200000000000000 2f6b 0100000000000000 76"},
		{"get /k (2.x)", newTorchReq(torch2, tqGet).str("/k").b, "03 0200000000000000 2f6b"},
		{"add /n -3 (2.x)", newTorchReq(torch2, tqAdd).str("/n").u64(uint64(1<<64 - 3)).b,
			"04 0200000000000000 2f6e fdffffffffffffff"},
		{"add /n 5 (1.13)", newTorchReq(torch1, tqAdd).str("/n").u64(5).b, "03 0200000000000000 2f6e 0500000000000000"},
		{"check /a /b (2.x)", newTorchReq(torch2, tqCheck).keys([]string{"/a", "/b"}).b,
			"05 0200000000000000 0200000000000000 2f61 0200000000000000 2f62"},
		{"wait /a (1.13)", newTorchReq(torch1, tqWait).keys([]string{"/a"}).b, "05 0100000000000000 0200000000000000 2f61"},
		{"wait /a (2.x)", newTorchReq(torch2, tqWait).keys([]string{"/a"}).b, "06 0100000000000000 0200000000000000 2f61"},
		{"compare-set /c '' -> x (2.x)", newTorchReq(torch2, tqCompareSet).str("/c").bytes(nil).bytes([]byte("x")).b,
			"02 0200000000000000 2f63 0000000000000000 0100000000000000 78"},
		{"getnumkeys (1.13), the probe", newTorchReq(torch1, tqGetNumKeys).b, "06"},
		{"ping 0x01020304 (2.4+)", binary.LittleEndian.AppendUint32(newTorchReq(torch2, tqPing).b, 0x01020304), "0d 04030201"},
	}
	for _, tt := range tests {
		if !bytes.Equal(tt.got, h(tt.want)) {
			t.Errorf("%s:\n got % x\nwant % x", tt.name, tt.got, h(tt.want))
		}
	}
}

// TestTorchStoreFake runs every call against the fake daemon in both
// dialects and checks what went over the wire.
func TestTorchStoreFake(t *testing.T) {
	for _, tc := range []struct {
		d     torchDialect
		libuv bool
		name  string
	}{{torch1, false, "torch 1.x"}, {torch2, false, "torch 2.x"}, {torch2, true, "torch 2.x, libuv backend"}} {
		d := tc.d
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeTorchOpts(t, d, tc.libuv)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := DialTorch(ctx, f.addr(), TorchOptions{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if st.Dialect() != int(d) {
				t.Fatalf("probed dialect %d, server speaks %v", st.Dialect(), d)
			}
			if err := st.Set(ctx, "k", []byte("v")); err != nil {
				t.Fatal(err)
			}
			if v, err := st.Get(ctx, "k"); err != nil || string(v) != "v" {
				t.Fatalf("get = %q, %v", v, err)
			}
			if n, err := st.Add(ctx, "n", 7); err != nil || n != 7 {
				t.Fatalf("add = %d, %v", n, err)
			}
			if ok, err := st.Check(ctx, "k", "n"); err != nil || !ok {
				t.Fatalf("check = %v, %v", ok, err)
			}
			if ok, err := st.Check(ctx, "absent"); err != nil || ok {
				t.Fatalf("check absent = %v, %v", ok, err)
			}
			if v, err := st.CompareSet(ctx, "k", []byte("v"), []byte("w")); err != nil || string(v) != "w" {
				t.Fatalf("compare-set = %q, %v", v, err)
			}
			if err := st.Ping(ctx); (err == nil) != (d == torch2) {
				t.Fatalf("ping: %v", err)
			}
			f.mu.Lock()
			_, ok := f.kv["/distbench/k"]
			f.mu.Unlock()
			if !ok {
				t.Fatal(`the store has no "/distbench/k": keys are not prefixed as torch's client prefixes them`)
			}
			// The probe is the first connection; the client's own follow.
			reqs := f.requests()
			if len(reqs) < 2 {
				t.Fatalf("%d connections", len(reqs))
			}
			if !bytes.Equal(reqs[0], []byte{6}) {
				t.Errorf("probe sent % x, want 06", reqs[0])
			}
			set := newTorchReq(d, tqSet).str("/distbench/k").bytes([]byte("v")).b
			if d == torch2 {
				set = append(torchValidate(), set...)
			}
			if !bytes.HasPrefix(reqs[1], set) {
				t.Errorf("first requests % x, want them to start % x", reqs[1], set)
			}
		})
	}
}

// TestTorchStoreWaitsAndTimeouts: a Get waits on the server, released by
// a Set from another goroutine (on a connection of its own); a wait that
// runs out is a timeout naming the key, and costs nothing else.
func TestTorchStoreWaitsAndTimeouts(t *testing.T) {
	f := newFakeTorch(t, torch2)
	ctx := context.Background()
	st, err := DialTorch(ctx, f.addr(), TorchOptions{Timeout: 5 * time.Second, Dialect: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := make(chan string, 1)
	go func() {
		v, err := st.Get(ctx, "late")
		if err != nil {
			got <- err.Error()
		}
		got <- string(v)
	}()
	time.Sleep(50 * time.Millisecond)
	if err := st.Set(ctx, "late", []byte("here")); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "here" {
		t.Fatalf("get = %q", v)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err = st.Wait(short, "never")
	if err == nil || !strings.Contains(err.Error(), `timed out`) || !strings.Contains(err.Error(), `"never"`) {
		t.Fatalf("wait = %v", err)
	}
	if v, err := st.Get(ctx, "late"); err != nil || string(v) != "here" {
		t.Fatalf("get after a timeout = %q, %v", v, err)
	}
	st.Close()
	if err := st.Set(ctx, "x", nil); err == nil {
		t.Fatal("set after close succeeded")
	}
}

// TestTorchStoreDialTimeout: no store at the address is a timeout that
// names it.
func TestTorchStoreDialTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = DialTorch(context.Background(), addr, TorchOptions{Timeout: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "torch's TCPStore at "+addr) {
		t.Fatalf("dial = %v", err)
	}
}

// FuzzTorchAnswers feeds the answer parsers anything: they return a value
// or an error, never panic, and never allocate past the limit.
func FuzzTorchAnswers(f *testing.F) {
	f.Add([]byte("\x05\x00\x00\x00\x00\x00\x00\x00hello"))
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Add([]byte{0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		const max = 1 << 10
		v, err := readTorchBytes(bufio.NewReader(bytes.NewReader(b)), max)
		if err == nil && (len(b) < 8 || uint64(len(v)) != binary.LittleEndian.Uint64(b) || !bytes.HasPrefix(b[8:], v)) {
			t.Fatalf("value %q from % x", v, b)
		}
		if errors.Is(err, errTorchProtocol) && len(b) >= 8 && binary.LittleEndian.Uint64(b) <= max {
			t.Fatalf("refused a length within the limit: %v", err)
		}
		readTorchInt64(bufio.NewReader(bytes.NewReader(b)))
		x, err := readTorchByte(bufio.NewReader(bytes.NewReader(b)), "check", torchReady, torchNotReady)
		if err == nil && x > 1 {
			t.Fatalf("accepted %d", x)
		}
	})
}
