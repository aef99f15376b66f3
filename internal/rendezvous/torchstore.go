package rendezvous

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

// TorchOptions configure a client of torch's c10d TCPStore.
type TorchOptions struct {
	// Prefix goes in front of every key, so that distbench's keys never
	// meet torch's own in the shared store. Empty means "/distbench/":
	// torch's own client puts "/" in front of every key (TCPStore's
	// keyPrefix_), so a torch program reads distbench's key "k" as
	// store.get("distbench/k").
	Prefix string
	// Timeout bounds every call whose context has no earlier deadline; 0
	// means collective.DefaultTimeout.
	Timeout time.Duration
	// MaxValue is the largest value accepted from the store; 0 means 64 MiB.
	MaxValue int
	// Dialect forces torch 1.x (1) or 2.x (2) numbering; 0 probes the
	// server once (see DialTorch).
	Dialect int
}

// TorchStore is a client of torch.distributed's c10d TCPStore (the store
// torchrun's agent hosts at MASTER_ADDR:MASTER_PORT), as a driver.Store.
// The store has no authentication: anyone who can reach its port can read
// and write it, as with torch itself.
//
// A torch connection carries one request at a time and a WAIT holds it
// until the key comes, so each call takes an idle connection or opens a
// new one; calls from several goroutines never queue behind a wait.
type TorchStore struct {
	addr    string
	o       TorchOptions
	dialect torchDialect

	mu     sync.Mutex
	idle   []*torchConn
	closed bool
	open   map[*torchConn]struct{}
}

var _ driver.Store = (*TorchStore)(nil)

type torchConn struct {
	nc net.Conn
	br *bufio.Reader
}

// DialTorch connects to the TCPStore at addr, retrying until ctx ends or
// o.Timeout passes, since the store's host may start after this process.
//
// Torch 1.x and 2.x number their requests differently and 2.x expects a
// validation request first, so, unless o.Dialect says which, DialTorch
// asks once on a connection of its own with 1.x's GETNUMKEYS (one byte):
// a 1.x server answers it with 8 bytes; a 2.x server drops a connection
// whose first request is not VALIDATE (TCPStoreBackend.cpp, "Miscellaneous
// client without VALIDATE query is detected"), or ignores it (the libuv
// backend, torch 2.4's default, whose UvClient::processBuf returns without
// an answer): an end of file, or no answer within a second, means 2.x.
//
// The libuv backend refuses keys over 8 KiB and, like every torch server,
// holds values in memory: keep them small (distbench's are addresses).
func DialTorch(ctx context.Context, addr string, o TorchOptions) (*TorchStore, error) {
	if o.Prefix == "" {
		o.Prefix = "/distbench/"
	}
	if o.Timeout <= 0 {
		o.Timeout = collective.DefaultTimeout
	}
	if o.MaxValue <= 0 {
		o.MaxValue = 64 << 20
	}
	s := &TorchStore{addr: addr, o: o, open: map[*torchConn]struct{}{}}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	start := time.Now()
	switch o.Dialect {
	case 1:
		s.dialect = torch1
	case 2:
		s.dialect = torch2
	case 0:
		d, err := s.probe(ctx, start)
		if err != nil {
			return nil, err
		}
		s.dialect = d
	default:
		return nil, fmt.Errorf("rendezvous: torch store: %w", collective.Invalidf("dialect %d (accepted: 0, 1, 2)", o.Dialect))
	}
	c, err := s.dial(ctx, start)
	if err != nil {
		return nil, err
	}
	s.put(c)
	return s, nil
}

// Dialect is 1 or 2: the torch major version whose protocol the server speaks.
func (s *TorchStore) Dialect() int { return int(s.dialect) }

// Addr is the store's address.
func (s *TorchStore) Addr() string { return s.addr }

// connect dials addr until ctx ends.
func (s *TorchStore) connect(ctx context.Context, start time.Time) (net.Conn, error) {
	var d net.Dialer
	for attempt := 1; ; attempt++ {
		nc, err := d.DialContext(ctx, "tcp", s.addr)
		if err == nil {
			return nc, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("rendezvous: dial torch store: %w", &collective.TimeoutError{
				After:   time.Since(start),
				Waiting: fmt.Sprintf("torch's TCPStore at %s (%d attempts; last: %v)", s.addr, attempt, err),
			})
		case <-time.After(min(time.Duration(attempt)*50*time.Millisecond, time.Second)):
		}
	}
}

func (s *TorchStore) probe(ctx context.Context, start time.Time) (torchDialect, error) {
	nc, err := s.connect(ctx, start)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Second))
	if _, err := nc.Write(newTorchReq(torch1, tqGetNumKeys).b); err != nil {
		return torch2, nil
	}
	var b [8]byte
	if _, err := io.ReadFull(nc, b[:]); err == nil {
		return torch1, nil
	}
	return torch2, nil
}

func (s *TorchStore) dial(ctx context.Context, start time.Time) (*torchConn, error) {
	nc, err := s.connect(ctx, start)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := &torchConn{nc: nc, br: bufio.NewReader(nc)}
	if s.dialect == torch2 {
		nc.SetWriteDeadline(time.Now().Add(s.o.Timeout))
		if _, err := nc.Write(torchValidate()); err != nil {
			nc.Close()
			return nil, fmt.Errorf("rendezvous: torch store at %s: validating: %w", s.addr, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		nc.Close()
		return nil, fmt.Errorf("rendezvous: torch store at %s: %w", s.addr, collective.ErrClosed)
	}
	s.open[c] = struct{}{}
	return c, nil
}

// get takes an idle connection or opens one.
func (s *TorchStore) get(ctx context.Context, start time.Time) (*torchConn, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("rendezvous: torch store at %s: %w", s.addr, collective.ErrClosed)
	}
	if n := len(s.idle); n > 0 {
		c := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return c, nil
	}
	s.mu.Unlock()
	return s.dial(ctx, start)
}

func (s *TorchStore) put(c *torchConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.nc.Close()
		return
	}
	s.idle = append(s.idle, c)
}

// drop closes a connection whose state is unknown (a call that failed or
// timed out midway); the server forgets its waits when it closes.
func (s *TorchStore) drop(c *torchConn) {
	c.nc.Close()
	s.mu.Lock()
	delete(s.open, c)
	s.mu.Unlock()
}

// Close closes every connection; calls in flight fail.
func (s *TorchStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for c := range s.open {
		c.nc.Close()
	}
	s.idle = nil
	return nil
}

// do sends req on a connection and reads its answer with read, all within
// ctx and the store's timeout; what names the call in errors.
func (s *TorchStore) do(ctx context.Context, what string, req []byte, read func(*bufio.Reader) error) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	c, err := s.get(ctx, start)
	if err != nil {
		return err
	}
	dl, _ := ctx.Deadline()
	c.nc.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
	_, err = c.nc.Write(req)
	if err == nil && read != nil {
		err = read(c.br)
	}
	stopped := stop()
	if err != nil {
		s.drop(c)
		var ne net.Error
		switch {
		case ctx.Err() == context.DeadlineExceeded || (errors.As(err, &ne) && ne.Timeout()):
			return fmt.Errorf("rendezvous: torch store at %s: %w", s.addr, &collective.TimeoutError{After: time.Since(start), Waiting: what})
		case ctx.Err() != nil:
			return ctx.Err()
		}
		return fmt.Errorf("rendezvous: torch store at %s: %s: %w", s.addr, what, unexpectedEOF(err))
	}
	if !stopped {
		// ctx ended as the answer came: the callback may yet set a past
		// deadline on the connection, so it is not reused.
		s.drop(c)
		return nil
	}
	c.nc.SetDeadline(time.Time{})
	s.put(c)
	return nil
}

// Set stores value at key (SET; torch sends no answer).
func (s *TorchStore) Set(ctx context.Context, key string, value []byte) error {
	req := newTorchReq(s.dialect, tqSet).str(s.o.Prefix + key).bytes(value)
	return s.do(ctx, "set "+strconv.Quote(key), req.b, nil)
}

// Get waits until key exists and returns its value: WAIT, then GET, as
// torch's TCPStore::get does.
func (s *TorchStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.Wait(ctx, key); err != nil {
		return nil, err
	}
	var v []byte
	req := newTorchReq(s.dialect, tqGet).str(s.o.Prefix + key)
	err := s.do(ctx, "get "+strconv.Quote(key), req.b, func(r *bufio.Reader) (err error) {
		v, err = readTorchBytes(r, s.o.MaxValue)
		return err
	})
	return v, err
}

// Add adds delta to the decimal integer at key (ADD) and returns the sum.
func (s *TorchStore) Add(ctx context.Context, key string, delta int64) (int64, error) {
	var n int64
	req := newTorchReq(s.dialect, tqAdd).str(s.o.Prefix + key).u64(uint64(delta))
	err := s.do(ctx, "add "+strconv.Quote(key), req.b, func(r *bufio.Reader) (err error) {
		n, err = readTorchInt64(r)
		return err
	})
	return n, err
}

// Wait returns once every key exists (WAIT: one request, answered by the
// server when the last key is set).
func (s *TorchStore) Wait(ctx context.Context, keys ...string) error {
	req := newTorchReq(s.dialect, tqWait).keys(s.prefixed(keys))
	return s.do(ctx, "wait for "+quoteKeys(keys), req.b, func(r *bufio.Reader) error {
		_, err := readTorchByte(r, "wait", torchStopWaiting)
		return err
	})
}

// Check says whether every key exists, without waiting (CHECK).
func (s *TorchStore) Check(ctx context.Context, keys ...string) (bool, error) {
	var b byte
	req := newTorchReq(s.dialect, tqCheck).keys(s.prefixed(keys))
	err := s.do(ctx, "check "+quoteKeys(keys), req.b, func(r *bufio.Reader) (err error) {
		b, err = readTorchByte(r, "check", torchReady, torchNotReady)
		return err
	})
	return b == torchReady, err
}

// CompareSet sets key to desired if its value is expected, or if it is
// absent and expected is empty, and returns the value key then holds
// (COMPARE_SET; for an absent key and a non-empty expected, torch answers
// expected itself).
func (s *TorchStore) CompareSet(ctx context.Context, key string, expected, desired []byte) ([]byte, error) {
	var v []byte
	req := newTorchReq(s.dialect, tqCompareSet).str(s.o.Prefix + key).bytes(expected).bytes(desired)
	err := s.do(ctx, "compare-set "+strconv.Quote(key), req.b, func(r *bufio.Reader) (err error) {
		v, err = readTorchBytes(r, s.o.MaxValue)
		return err
	})
	return v, err
}

// NumKeys is the number of keys in the store, torch's own included
// (GETNUMKEYS).
func (s *TorchStore) NumKeys(ctx context.Context) (int64, error) {
	var n int64
	req := newTorchReq(s.dialect, tqGetNumKeys)
	err := s.do(ctx, "count keys", req.b, func(r *bufio.Reader) (err error) {
		n, err = readTorchInt64(r)
		return err
	})
	return n, err
}

func (s *TorchStore) prefixed(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = s.o.Prefix + k
	}
	return out
}

func quoteKeys(keys []string) string {
	if len(keys) == 1 {
		return strconv.Quote(keys[0])
	}
	return fmt.Sprintf("%d keys", len(keys))
}

// Ping sends PING with a nonce and checks that the server echoes it
// (TCPStoreBackend.cpp's pingHandler), measuring nothing else. Only torch
// 2.4 and later know PING; older servers drop the connection, which is an
// error here, and 1.x has no ping at all, so Ping refuses it without
// asking. The rendezvous does not ping: a call that fails says as much.
func (s *TorchStore) Ping(ctx context.Context) error {
	if s.dialect == torch1 {
		return fmt.Errorf("rendezvous: torch store at %s: torch 1.x has no PING", s.addr)
	}
	nonce := uint32(time.Now().UnixNano())
	req := binary.LittleEndian.AppendUint32(newTorchReq(s.dialect, tqPing).b, nonce)
	return s.do(ctx, "ping (torch 2.4 or later)", req, func(r *bufio.Reader) error {
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return err
		}
		if got := binary.LittleEndian.Uint32(b[:]); got != nonce {
			return fmt.Errorf("%w: ping answered %#x, not the nonce %#x", errTorchProtocol, got, nonce)
		}
		return nil
	})
}
