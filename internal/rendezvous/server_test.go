package rendezvous

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
)

func startServer(t *testing.T, o ServerOptions) *Server {
	t.Helper()
	srv, err := Listen("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func dialT(t *testing.T, addr string, o ClientOptions) *Client {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	c, err := Dial(context.Background(), addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// freePort finds a port nothing listens on, for tests that must know a
// port before anyone binds it.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestWaitingGetIsOneRequest(t *testing.T) {
	t.Parallel()
	srv := startServer(t, ServerOptions{})
	a, b := dialT(t, srv.Addr(), ClientOptions{}), dialT(t, srv.Addr(), ClientOptions{})
	ctx := context.Background()
	before := srv.requests.Load()
	time.AfterFunc(300*time.Millisecond, func() { a.Set(ctx, "k", []byte("v")) })
	if _, err := b.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if n := srv.requests.Load() - before; n != 2 {
		t.Fatalf("server saw %d requests for one waiting Get and one Set, want 2 (no polling)", n)
	}
}

func TestWaitingGetDoesNotBlockOtherCalls(t *testing.T) {
	t.Parallel()
	srv := startServer(t, ServerOptions{})
	c := dialT(t, srv.Addr(), ClientOptions{})
	ctx := context.Background()
	got := make(chan error, 1)
	go func() {
		v, err := c.Get(ctx, "later")
		if err == nil && string(v) != "1" {
			err = errors.New("wrong value " + string(v))
		}
		got <- err
	}()
	// The same connection serves a Set and an Add while the Get waits.
	must(t, c.Set(ctx, "other", nil))
	if _, err := c.Add(ctx, "later", 1); err != nil {
		t.Fatal(err)
	}
	must(t, <-got)
}

func TestTimedOutGetFreesServerWaiter(t *testing.T) {
	t.Parallel()
	srv := startServer(t, ServerOptions{})
	c := dialT(t, srv.Addr(), ClientOptions{})
	// The client's deadline comes first, so it sends a cancel.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := c.Get(ctx, "never"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.kv.numWaiters() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server still holds the cancelled Get's waiter")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDialRetriesUntilServerStarts(t *testing.T) {
	t.Parallel()
	addr := freePort(t)
	type result struct {
		c   *Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := Dial(context.Background(), addr, ClientOptions{Timeout: 10 * time.Second})
		done <- result{c, err}
	}()
	time.Sleep(300 * time.Millisecond) // the client is refused a few times meanwhile
	srv, err := Listen(addr, ServerOptions{})
	if err != nil {
		t.Skipf("port %s was taken meanwhile: %v", addr, err)
	}
	defer srv.Close()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.c.Close()
	must(t, r.c.Set(context.Background(), "k", nil))
}

func TestDialErrors(t *testing.T) {
	t.Parallel()
	srv := startServer(t, ServerOptions{JobID: "job-a"})
	notStore, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer notStore.Close()
	go func() {
		for {
			c, err := notStore.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n"))
			c.Close()
		}
	}()
	tests := []struct {
		name     string
		addr     string
		o        ClientOptions
		want     string
		timeout  bool
		quickest time.Duration // must fail within this, when not a timeout
	}{
		{"nobody listens", freePort(t), ClientOptions{Timeout: 300 * time.Millisecond}, "attempts; last:", true, 0},
		{"another job", srv.Addr(), ClientOptions{JobID: "job-b", Timeout: 10 * time.Second}, "this store serves another job", false, 2 * time.Second},
		{"not a store", notStore.Addr().String(), ClientOptions{Timeout: 10 * time.Second}, "not a distbench rendezvous store", false, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			c, err := Dial(context.Background(), tt.addr, tt.o)
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			wantErr(t, err, tt.want)
			wantErr(t, err, tt.addr)
			if got := errors.Is(err, collective.ErrTimeout); got != tt.timeout {
				t.Fatalf("errors.Is(ErrTimeout) = %v for %v", got, err)
			}
			if !tt.timeout && time.Since(start) > tt.quickest {
				t.Fatalf("took %v to give up on a permanent error", time.Since(start))
			}
		})
	}
}

// rawConn is a handshaken connection for sending hand-made frames.
func rawConn(t *testing.T, addr, jobID string) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clientHandshake(ctx, nc, handshakeConfig(jobID, nil, clientRank)); err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc, bufio.NewReader(nc)
}

func readResponse(t *testing.T, br *bufio.Reader) response {
	t.Helper()
	p, err := readFrame(br, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := decodeResponse(p, Limits{}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestServerRefusesOversizedRequest(t *testing.T) {
	t.Parallel()
	srv := startServer(t, ServerOptions{Limits: Limits{MaxValueSize: 100}})
	nc, br := rawConn(t, srv.Addr(), "")
	// Announce 1 GiB; send only the op and id.
	frame := binary.BigEndian.AppendUint32(nil, 1<<30)
	frame = append(frame, opSet)
	frame = binary.BigEndian.AppendUint64(frame, 77)
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	r := readResponse(t, br)
	if r.status != statusError || r.id != 77 || !strings.Contains(string(r.body), "exceeds this store's") {
		t.Fatalf("response = %d %d %q", r.status, r.id, r.body)
	}
	if _, err := readFrame(br, 1<<20, nil); err == nil {
		t.Fatal("connection still open after an oversized frame")
	}
	// The server still serves others.
	c := dialT(t, srv.Addr(), ClientOptions{})
	must(t, c.Set(context.Background(), "k", nil))
	// And a client with larger limits than the server's hears why.
	big := dialT(t, srv.Addr(), ClientOptions{})
	wantErr(t, big.Set(context.Background(), "k", make([]byte, 10000)), "exceeds this store's")
}

func TestServerAnswersBadRequestAndCarriesOn(t *testing.T) {
	t.Parallel()
	srv := startServer(t, ServerOptions{Limits: Limits{MaxKeySize: 8}})
	nc, br := rawConn(t, srv.Addr(), "")
	nc.Write(appendRequest(nil, &request{op: opGet, id: 1, key: "much-too-long-a-key"}))
	r := readResponse(t, br)
	if r.status != statusError || r.id != 1 || !strings.Contains(string(r.body), "exceeds the 8-byte limit") {
		t.Fatalf("response = %d %d %q", r.status, r.id, r.body)
	}
	nc.Write(appendRequest(nil, &request{op: opAdd, id: 2, key: "n", delta: 4}))
	if r := readResponse(t, br); r.status != statusOK || r.id != 2 || binary.BigEndian.Uint64(r.body) != 4 {
		t.Fatalf("response = %d %d %v", r.status, r.id, r.body)
	}
}

func TestServerCloseFailsWaitingCalls(t *testing.T) {
	t.Parallel()
	srv := startServer(t, ServerOptions{})
	c := dialT(t, srv.Addr(), ClientOptions{})
	time.AfterFunc(100*time.Millisecond, func() { srv.Close() })
	start := time.Now()
	_, err := c.Get(context.Background(), "never")
	wantErr(t, err, "connection lost")
	if errors.Is(err, collective.ErrTimeout) || time.Since(start) > 3*time.Second {
		t.Fatalf("err = %v after %v; want a prompt connection error", err, time.Since(start))
	}
	// And later calls fail at once too.
	wantErr(t, c.Set(context.Background(), "k", nil), "connection lost")
}

func TestShutdownWaitsForClients(t *testing.T) {
	t.Parallel()
	srv, err := Listen("127.0.0.1:0", ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := dialT(t, srv.Addr(), ClientOptions{})
	time.AfterFunc(200*time.Millisecond, func() {
		c.Set(context.Background(), "still", []byte("served")) // the store is still there
		c.Close()
	})
	start := time.Now()
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("shutdown returned after %v, before the client closed", d)
	}
	if v, ok := srv.kv.get("still"); !ok || string(v) != "served" {
		t.Fatal("the client's last Set did not reach the store")
	}

	// With a deadline, shutdown drops clients that stay.
	srv2, err := Listen("127.0.0.1:0", ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c2 := dialT(t, srv2.Addr(), ClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	wantErr(t, srv2.Shutdown(ctx), "dropped 1 clients")
	wantErr(t, c2.Set(context.Background(), "k", nil), "connection lost")
}

// A connection that says nothing does not hold shutdown: only clients that
// passed the handshake are waited for, however long a handshake may take.
// (An idle socket on rank 0's store port once kept rank 0 from exiting
// until its handshake timed out.) The handshake timeout is an hour, so
// only the behaviour, not the machine's speed, can pass the test.
func TestShutdownDoesNotWaitForStrangers(t *testing.T) {
	t.Parallel()
	srv, err := Listen("127.0.0.1:0", ServerOptions{HandshakeTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	idle, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	c := dialT(t, srv.Addr(), ClientOptions{})
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown waited for a connection still in its handshake: %v", err)
	}
	idle.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := idle.Read(make([]byte, 1)); err == nil {
		t.Fatalf("the stranger's connection is still open after shutdown (read %d bytes)", n)
	}
}

// Strangers that connect and say nothing, more of them than the server takes
// connections, keep no client out: the oldest still in its handshake is
// closed to make room, so clients are served at once rather than when the
// strangers' handshakes time out; and no authenticated client is closed.
func TestServerStrangersDoNotStarveClients(t *testing.T) {
	t.Parallel()
	const maxConns, strangers, clients = 8, 50, 4
	srv := startServer(t, ServerOptions{JobID: "j", MaxConns: maxConns})
	for range strangers {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	ctx := context.Background()
	start := time.Now()
	var cs []*Client
	for i := range clients {
		c := dialT(t, srv.Addr(), ClientOptions{JobID: "j", Timeout: time.Minute})
		if err := c.Set(ctx, fmt.Sprint("k", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	// Well under the strangers' handshake timeout, which the clients
	// waited out before (the server refused them while the strangers held
	// every connection), even on a machine ten times slower than usual.
	if el := time.Since(start); el > handshakeTimeout/2 {
		t.Errorf("%d clients took %v to be served beside %d silent strangers; the strangers' handshake timeout is %v", clients, el, strangers, handshakeTimeout)
	}
	// More strangers: the clients, authenticated, keep their connections.
	for range strangers {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	for i, c := range cs {
		if _, err := c.Get(ctx, fmt.Sprint("k", i)); err != nil {
			t.Errorf("client %d after more strangers: %v", i, err)
		}
	}
}
