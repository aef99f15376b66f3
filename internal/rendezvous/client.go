package rendezvous

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/wire"
)

// ClientOptions configure a Client. The zero value is usable.
type ClientOptions struct {
	// JobID and Token must match the server's ServerOptions: the client
	// proves it holds the token (the job's secret; JobID when empty) in
	// internal/wire's handshake.
	JobID string
	Token []byte
	// Timeout bounds Dial, retries included, and every operation whose
	// context has no earlier deadline; 0 means collective.DefaultTimeout.
	Timeout time.Duration
	// Limits are checked before a request is sent; they should match the
	// server's. Zero fields mean the defaults.
	Limits Limits
}

// Client is a connection to a Server. It is safe for concurrent use: requests
// carry ids, so a Get waiting on the server does not hold up other calls.
type Client struct {
	addr    string
	timeout time.Duration
	lim     Limits
	nc      net.Conn

	wmu  sync.Mutex // one request on the wire at a time
	wbuf []byte

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]pendingCall
	closed  bool
	err     error         // why no more calls can be made; set before done is closed
	done    chan struct{} // closed when the read loop ends
}

type pendingCall struct {
	op byte
	ch chan response // buffered, so the read loop never blocks on a caller
}

var _ driver.Store = (*Client)(nil)

// permanentError marks a dial failure that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Dial connects to the store server at addr ("host:port"). Until the
// timeout it retries refused and failed connections with backoff, since
// ranks commonly start before rank 0 has its server listening; it gives up
// at once on a server that is not a distbench store or that serves another
// job.
func Dial(ctx context.Context, addr string, o ClientOptions) (*Client, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = collective.DefaultTimeout
	}
	auth := handshakeConfig(o.JobID, o.Token, clientRank)
	if err := auth.Validate(); err != nil {
		return nil, fmt.Errorf("rendezvous: store %s: %w", addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var d net.Dialer
	backoff := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			if err = clientHandshake(ctx, nc, auth); err == nil {
				return newClient(nc, addr, timeout, o.Limits.withDefaults()), nil
			}
			nc.Close()
			var perm *permanentError
			if errors.As(err, &perm) {
				return nil, fmt.Errorf("rendezvous: store %s: %w", addr, perm.err)
			}
		}
		// Full jitter, so that a thousand ranks retrying do not arrive in step.
		t := time.NewTimer(backoff/2 + rand.N(backoff/2+1))
		backoff = min(2*backoff, time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			if ctx.Err() == context.DeadlineExceeded {
				return nil, fmt.Errorf("rendezvous: dial: %w", &collective.TimeoutError{
					After:   time.Since(start),
					Waiting: fmt.Sprintf("the store at %s (%d attempts; last: %v)", addr, attempt, err),
				})
			}
			return nil, fmt.Errorf("rendezvous: dial store %s: %w (last: %v)", addr, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// clientHandshake proves to the store that this client holds the job's
// token; a refusal retrying cannot fix is a *permanentError.
func clientHandshake(ctx context.Context, nc net.Conn, auth wire.HandshakeConfig) error {
	err := wire.ClientHandshake(ctx, nc, auth, storeRank)
	if err == nil {
		return nil
	}
	if err, permanent := describeRefusal(err); permanent {
		return &permanentError{err}
	}
	return err
}

func newClient(nc net.Conn, addr string, timeout time.Duration, lim Limits) *Client {
	c := &Client{
		addr:    addr,
		timeout: timeout,
		lim:     lim,
		nc:      nc,
		pending: map[uint64]pendingCall{},
		done:    make(chan struct{}),
	}
	go c.readLoop()
	return c
}

// Addr is the server's address.
func (c *Client) Addr() string { return c.addr }

// Close ends the connection; calls in flight fail with collective.ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	if c.err == nil {
		c.err = collective.ErrClosed
	}
	c.mu.Unlock()
	c.nc.Close()
	<-c.done
	return nil
}

func (c *Client) readLoop() {
	br := bufio.NewReader(c.nc)
	var err error
	for {
		var p []byte
		// A fresh buffer per frame: a Get's value is handed to its caller.
		if p, err = readFrame(br, c.lim.maxResponse(), nil); err != nil {
			break
		}
		var r response
		if r, err = decodeResponse(p, c.lim); err != nil {
			break
		}
		c.mu.Lock()
		pc, ok := c.pending[r.id]
		delete(c.pending, r.id)
		c.mu.Unlock()
		if !ok {
			continue // its caller gave up
		}
		if pc.op != r.op {
			err = fmt.Errorf("answer to request %d is for %s, it was %s", r.id, opName(r.op), opName(pc.op))
			break
		}
		pc.ch <- r
	}
	c.mu.Lock()
	if c.err == nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("the store closed the connection")
		}
		c.err = fmt.Errorf("connection lost: %w", err)
	}
	c.mu.Unlock()
	c.nc.Close()
	close(c.done)
}

// call sends req and waits for its answer, the context, or the connection's
// end. keys name what a Get or Wait waits for, for timeout messages.
func (c *Client) call(ctx context.Context, req *request, keys []string) (response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	waits := req.op == opGet || req.op == opWait
	if waits {
		// Ask the server to give up a little before we do, so that its
		// answer, which names the keys still missing, usually arrives in time.
		dl, _ := ctx.Deadline()
		rem := time.Until(dl)
		req.wait = rem - min(rem/10, 100*time.Millisecond)
	}
	if ctx.Err() != nil {
		// Do not let an expired context near the connection: a write
		// with a past deadline would fail and take the connection down.
		return response{}, c.ctxErr(ctx, start, keys)
	}
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return response{}, err
	}
	c.nextID++
	req.id = c.nextID
	c.pending[req.id] = pendingCall{op: req.op, ch: ch}
	c.mu.Unlock()

	if err := c.write(ctx, req); err != nil {
		c.forget(req.id)
		if ctx.Err() != nil {
			return response{}, c.ctxErr(ctx, start, keys)
		}
		return response{}, err
	}
	select {
	case r := <-ch:
		return c.result(r, start)
	case <-ctx.Done():
		c.forget(req.id)
		if waits {
			// Free the server's waiter now rather than at its own timeout.
			c.writeDetached(&request{op: opCancel, id: req.id})
		}
		return response{}, c.ctxErr(ctx, start, keys)
	case <-c.done:
		select {
		case r := <-ch: // answered just before the connection ended
			return c.result(r, start)
		default:
		}
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		return response{}, err
	}
}

func (c *Client) result(r response, start time.Time) (response, error) {
	switch r.status {
	case statusOK:
		return r, nil
	case statusTimeout:
		return r, &collective.TimeoutError{After: time.Since(start), Waiting: string(r.body)}
	default:
		return r, errors.New(string(r.body))
	}
}

func (c *Client) ctxErr(ctx context.Context, start time.Time, keys []string) error {
	if ctx.Err() != context.DeadlineExceeded {
		return ctx.Err()
	}
	what := "the store's answer"
	if len(keys) > 0 {
		what = describeKeys(keys)
	}
	return &collective.TimeoutError{After: time.Since(start), Waiting: what}
}

func (c *Client) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *Client) write(ctx context.Context, req *request) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = appendRequest(c.wbuf[:0], req)
	dl, _ := ctx.Deadline()
	c.nc.SetWriteDeadline(dl)
	n, err := c.nc.Write(c.wbuf)
	if cap(c.wbuf) > 1<<20 {
		c.wbuf = nil
	}
	if err != nil {
		if n > 0 {
			// Part of a frame went out, leaving the stream out of step: end
			// the connection, which fails every call in flight.
			c.nc.Close()
		}
		return fmt.Errorf("sending the request: %w", err)
	}
	return nil
}

// writeDetached sends a request whose caller has already given up, with a
// short deadline of its own.
func (c *Client) writeDetached(req *request) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c.write(ctx, req)
}

func (c *Client) fail(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if key == "" {
		return fmt.Errorf("rendezvous: %s at store %s: %w", op, c.addr, err)
	}
	return fmt.Errorf("rendezvous: %s %q at store %s: %w", op, key, c.addr, err)
}

func invalid(op, key string, err error) error {
	return fmt.Errorf("rendezvous: %s %q: %w", op, key, collective.Invalidf("%v", err))
}

// Set stores value under key, replacing any value there.
func (c *Client) Set(ctx context.Context, key string, value []byte) error {
	if err := c.lim.checkKey(key); err != nil {
		return invalid("set", key, err)
	}
	if err := c.lim.checkValue(len(value)); err != nil {
		return invalid("set", key, err)
	}
	_, err := c.call(ctx, &request{op: opSet, key: key, value: value}, nil)
	return c.fail("set", key, err)
}

// Get waits until key exists, then returns its value. The wait happens on
// the server: one request, answered when a Set or Add creates the key.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	if err := c.lim.checkKey(key); err != nil {
		return nil, invalid("get", key, err)
	}
	r, err := c.call(ctx, &request{op: opGet, key: key}, []string{key})
	if err != nil {
		return nil, c.fail("get", key, err)
	}
	return r.body, nil
}

// Add adds delta to the integer at key (0 if absent) and returns the sum.
// The value is kept as decimal text, so Get on a counter returns e.g. "3".
func (c *Client) Add(ctx context.Context, key string, delta int64) (int64, error) {
	if err := c.lim.checkKey(key); err != nil {
		return 0, invalid("add", key, err)
	}
	r, err := c.call(ctx, &request{op: opAdd, key: key, delta: delta}, nil)
	if err != nil {
		return 0, c.fail("add", key, err)
	}
	return int64(binary.BigEndian.Uint64(r.body)), nil
}

// Wait returns once every key exists.
func (c *Client) Wait(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	if len(keys) > c.lim.MaxWaitKeys {
		return invalid("wait", keys[0], fmt.Errorf("%d keys exceed the limit of %d", len(keys), c.lim.MaxWaitKeys))
	}
	for _, k := range keys {
		if err := c.lim.checkKey(k); err != nil {
			return invalid("wait", k, err)
		}
	}
	req := &request{op: opWait, keys: keys}
	if n := requestSize(req); n > c.lim.maxRequest() {
		return invalid("wait", keys[0], fmt.Errorf("%d keys take %d bytes, over the %d-byte request limit", len(keys), n, c.lim.maxRequest()))
	}
	_, err := c.call(ctx, req, keys)
	return c.fail("wait", "", err)
}
