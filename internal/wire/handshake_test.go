package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection: buffered, unlike
// net.Pipe, so that a side may write a reject its peer never reads.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { client.Close(); r.c.Close() })
	return client, r.c
}

func cfg(rank int) HandshakeConfig {
	return HandshakeConfig{JobID: "job-1", Token: []byte("s3cret"), Rank: rank, Size: 4, Timeout: 5 * time.Second}
}

// shake runs both sides at once and returns their errors and the rank the
// server saw.
func shake(t *testing.T, cc, sc HandshakeConfig, dialRank int, admit func(int) error) (cerr, serr error, got int) {
	t.Helper()
	c, s := tcpPair(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		got, serr = ServerHandshake(ctx, s, sc, admit)
		if serr != nil {
			s.Close() // as a caller does; unblocks a client waiting for more
		}
	}()
	cerr = ClientHandshake(ctx, c, cc, dialRank)
	if cerr != nil {
		c.Close()
	}
	wg.Wait()
	return cerr, serr, got
}

func TestHandshakeOK(t *testing.T) {
	var admitted []int
	cerr, serr, got := shake(t, cfg(2), cfg(0), 0, func(r int) error { admitted = append(admitted, r); return nil })
	if cerr != nil || serr != nil {
		t.Fatalf("client: %v; server: %v", cerr, serr)
	}
	if got != 2 || len(admitted) != 1 || admitted[0] != 2 {
		t.Errorf("server saw rank %d, admitted %v; want 2", got, admitted)
	}
}

// The service is in the MAC, not only in the hello: a handshake made for one
// service cannot be passed off as one for another by rewriting the hello.
func TestMACCoversService(t *testing.T) {
	var nc, ns [NonceSize]byte
	seen := map[[MACSize]byte]Service{}
	for svc := ServiceMesh; svc <= maxService; svc++ {
		m := macFor([]byte("s3cret"), roleClient, svc, "job-1", 1, 0, 4, &nc, &ns)
		if prev, ok := seen[m]; ok {
			t.Fatalf("the %v and the %v have the same MAC", prev, svc)
		}
		seen[m] = svc
	}
}

func TestHandshakeRefusals(t *testing.T) {
	with := func(rank int, f func(*HandshakeConfig)) HandshakeConfig {
		c := cfg(rank)
		f(&c)
		return c
	}
	tests := []struct {
		name       string
		client     HandshakeConfig
		server     HandshakeConfig
		dialRank   int
		admit      func(int) error
		want       error
		clientText string // what the client's error must say
		serverText string
		byPeer     string // which side was refused: "client" or "server"
	}{
		{
			name:   "wrong token",
			client: with(1, func(c *HandshakeConfig) { c.Token = []byte("guess") }), server: cfg(0),
			want: ErrAuth, clientText: "does not match this job's token", serverText: "refused by peer", byPeer: "server",
		},
		{
			name:   "wrong job id",
			client: with(1, func(c *HandshakeConfig) { c.JobID = "other-job" }), server: cfg(0),
			want: ErrJobMismatch, clientText: "refused by peer: job id mismatch: the peer belongs to another job",
			serverText: "the peer belongs to another job", byPeer: "client",
		},
		{
			// A mesh peer that reached the job's store: same job, same
			// token, but the store must not take it for one of its clients.
			name:   "another service",
			client: cfg(1), server: with(0, func(c *HandshakeConfig) { c.Service = ServiceStore }),
			want: ErrServiceMismatch, clientText: "refused by peer: service mismatch: this side opens a store connection, the peer a mesh one",
			serverText: "this side opens a store connection, the peer a mesh one", byPeer: "client",
		},
		{
			name:   "wrong world size",
			client: with(1, func(c *HandshakeConfig) { c.Size = 8 }), server: cfg(0),
			want: ErrSizeMismatch, clientText: "world size 4, the peer says 8", serverText: "world size 4, the peer says 8", byPeer: "client",
		},
		{
			name:   "reached the wrong rank",
			client: cfg(2), server: cfg(0), dialRank: 1,
			want: ErrRankMismatch, clientText: "dialed expecting rank 1, reached rank 0", serverText: "refused by peer", byPeer: "server",
		},
		{
			name:   "same rank",
			client: cfg(0), server: cfg(0),
			want: ErrRankMismatch, clientText: "claims rank 0, which is this side's own", serverText: "this side's own", byPeer: "client",
		},
		{
			name:   "admit refuses",
			client: cfg(3), server: cfg(1), dialRank: 1,
			admit: func(r int) error { return fmt.Errorf("%w: rank %d is already connected", ErrRankMismatch, r) },
			want:  ErrRankMismatch, clientText: "rank 3 is already connected", serverText: "already connected", byPeer: "client",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cerr, serr, _ := shake(t, tt.client, tt.server, tt.dialRank, tt.admit)
			for side, err := range map[string]error{"client": cerr, "server": serr} {
				if !errors.Is(err, tt.want) {
					t.Errorf("%s: got %v, want %v", side, err, tt.want)
					continue
				}
				var he *HandshakeError
				if !errors.As(err, &he) {
					t.Errorf("%s: %T is not a *HandshakeError", side, err)
					continue
				}
				if he.ByPeer != (side == tt.byPeer) {
					t.Errorf("%s: ByPeer = %v in %v", side, he.ByPeer, err)
				}
				if !strings.Contains(err.Error(), "127.0.0.1:") {
					t.Errorf("%s: error %q does not name the remote address", side, err)
				}
			}
			// A refusal crosses the wire: it must not teach a stranger the
			// job id (nor, by symmetry, echo the stranger's).
			for side, err := range map[string]error{"client": cerr, "server": serr} {
				if err != nil && (strings.Contains(err.Error(), "job-1") || strings.Contains(err.Error(), "other-job")) {
					t.Errorf("%s: error %q quotes a job id", side, err)
				}
			}
			if cerr != nil && !strings.Contains(cerr.Error(), tt.clientText) {
				t.Errorf("client error %q does not say %q", cerr, tt.clientText)
			}
			if serr != nil && !strings.Contains(serr.Error(), tt.serverText) {
				t.Errorf("server error %q does not say %q", serr, tt.serverText)
			}
		})
	}
}

// recorder keeps what a connection wrote.
type recorder struct {
	net.Conn
	mu  sync.Mutex
	out bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	r.out.Write(b)
	r.mu.Unlock()
	return r.Conn.Write(b)
}

// A recorded handshake, replayed to a new server, fails: the server's fresh
// nonce makes the old client MAC worthless.
func TestHandshakeReplay(t *testing.T) {
	c, s := tcpPair(t)
	rec := &recorder{Conn: c}
	done := make(chan error, 1)
	go func() { _, err := ServerHandshake(context.Background(), s, cfg(0), nil); done <- err }()
	if err := ClientHandshake(context.Background(), rec, cfg(1), 0); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	c2, s2 := tcpPair(t)
	go func() { _, err := ServerHandshake(context.Background(), s2, cfg(0), nil); done <- err }()
	if _, err := c2.Write(rec.out.Bytes()); err != nil { // hello and auth, as recorded
		t.Fatal(err)
	}
	err := <-done
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "replayed") {
		t.Fatalf("replayed handshake: got %v, want ErrAuth", err)
	}
}

func TestHandshakeGarbage(t *testing.T) {
	big := []byte{0x5c, 0xdb, Version, recHello, 0xff, 0xff}
	tests := []struct {
		name  string
		input []byte
		want  error
		text  string
	}{
		{"http client", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ErrBadMagic, "not a distbench peer"},
		{"new version", []byte{0x5c, 0xdb, Version + 1, recHello, 0, 0}, ErrVersion, fmt.Sprintf("version %d", Version+1)},
		{"huge record", big, ErrTooLarge, "65535 bytes"},
		{"short hello", []byte{0x5c, 0xdb, Version, recHello, 3, 0, 1, 2, 3}, ErrHandshake, "hello of 3 bytes"},
		{"auth first", append([]byte{0x5c, 0xdb, Version, recAuth, MACSize, 0}, make([]byte, MACSize)...), ErrHandshake, "got record type 2"},
		{"truncated", []byte{0x5c, 0xdb, Version, recHello, 40, 0, 1}, ErrPeerClosed, "closed the connection"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, s := tcpPair(t)
			if _, err := c.Write(tt.input); err != nil {
				t.Fatal(err)
			}
			c.(*net.TCPConn).CloseWrite()
			_, err := ServerHandshake(context.Background(), s, cfg(0), nil)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("got %v, want %v saying %q", err, tt.want, tt.text)
			}
			if tt.name == "truncated" {
				return // it went away: nobody to tell
			}
			// The refused side hears why, in a reject record.
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			var buf [maxRecordBody]byte
			typ, body, rerr := readRecord(c, &buf)
			if rerr != nil || typ != recReject {
				t.Fatalf("reply: type %d, err %v; want a reject record", typ, rerr)
			}
			if rej := decodeReject(body); !errors.Is(rej, tt.want) {
				t.Errorf("reject says %v, want %v", rej, tt.want)
			}
		})
	}
}

// A listener that closes or resets a handshake without a reject record (as
// a rank shedding a flood of connections does) leaves the dialer an error
// that says so, ErrPeerClosed, on which it may retry.
func TestHandshakePeerClosed(t *testing.T) {
	for _, tt := range []struct {
		name  string
		reset bool
	}{{"closed", false}, {"reset", true}} {
		t.Run(tt.name, func(t *testing.T) {
			c, s := tcpPair(t)
			if tt.reset {
				s.(*net.TCPConn).SetLinger(0)
			}
			s.Close()
			err := ClientHandshake(context.Background(), c, cfg(1), 0)
			var he *HandshakeError
			if !errors.Is(err, ErrPeerClosed) || !errors.Is(err, ErrHandshake) || !errors.As(err, &he) || he.ByPeer {
				t.Fatalf("got %v, want a HandshakeError matching ErrPeerClosed", err)
			}
		})
	}
}

func TestHandshakeTimeout(t *testing.T) {
	t.Run("silent peer", func(t *testing.T) {
		_, s := tcpPair(t)
		c := cfg(0)
		c.Timeout = 150 * time.Millisecond
		start := time.Now()
		_, err := ServerHandshake(context.Background(), s, c, nil)
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("took %v", el)
		}
		if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "no answer within") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("context canceled", func(t *testing.T) {
		c, _ := tcpPair(t)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		err := ClientHandshake(ctx, c, cfg(1), 0)
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("took %v", el)
		}
		if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "canceled") {
			t.Fatalf("got %v", err)
		}
	})
}

// A successful handshake clears the deadline it set: the connection then
// lives as long as the transport wants.
func TestHandshakeClearsDeadline(t *testing.T) {
	c, s := tcpPair(t)
	sc, cc := cfg(0), cfg(1)
	sc.Timeout, cc.Timeout = 100*time.Millisecond, 100*time.Millisecond
	done := make(chan error, 1)
	go func() { _, err := ServerHandshake(context.Background(), s, sc, nil); done <- err }()
	if err := ClientHandshake(context.Background(), c, cc, 0); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond)
	go s.Write([]byte("x"))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatalf("read after the handshake: %v", err)
	}
}

func TestHandshakeConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		c    HandshakeConfig
		text string
	}{
		{HandshakeConfig{Size: 2, Rank: 0}, "empty job token"},
		{HandshakeConfig{Token: []byte("t"), Size: 0}, "world size 0"},
		{HandshakeConfig{Token: []byte("t"), Size: 2, Rank: 2}, "rank 2 out of range"},
		{HandshakeConfig{Token: []byte("t"), Size: 2, JobID: strings.Repeat("j", MaxJobID+1)}, "job id of 129 bytes"},
		{HandshakeConfig{Token: []byte("t"), Size: 2, Timeout: -1}, "negative"},
	} {
		err := tt.c.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.c, err, tt.text)
		}
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain":             "plain",
		"two\nlines\x1b[0m": "two?lines?[0m",
		"bad \xff utf8":     "bad ? utf8",
		"héllo wörld":       "héllo w",
	} {
		max := 100
		if in == "héllo wörld" {
			max = 9 // cuts inside "ö": back off to a rune boundary
		}
		if got := Sanitize(in, max); got != want {
			t.Errorf("Sanitize(%q, %d) = %q, want %q", in, max, got, want)
		}
	}
}
