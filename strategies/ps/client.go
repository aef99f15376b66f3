package ps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/distbench/distbench/collective/driver"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// serverKey is the store key a server publishes its host:port under.
func serverKey(i int) string { return fmt.Sprintf("ps/server/%d", i) }

// serverConn is a worker's link to one server: a gRPC connection, or direct
// calls into the server this worker hosts (colocated placement), which
// skip the loopback copy through the network stack for the local shard.
type serverConn struct {
	index int
	rank  uint32 // this worker's global rank
	size  int    // the world's size
	// shape, if set, shapes the connection to the job's network.
	shape func(net.Conn) net.Conn
	// creds authenticate the connection; peerTimeout is its liveness
	// bound; timeout is the operation timeout, which sizes a why's budget.
	creds       credentials.TransportCredentials
	peerTimeout time.Duration
	timeout     time.Duration

	// failedOp is set once an operation failed at this server (it died,
	// or did not answer): Close then says no goodbye to it, which a
	// stopped server would hold to the goodbyes' timeout.
	failedOp atomic.Bool

	ready chan struct{} // closed once addr, cc and err are set
	addr  string
	cc    *grpc.ClientConn
	local *server
	mesh  *meshLink // the server over the transport mesh (transport=mesh)
	err   error     // why the server cannot be reached

	wire wireCount // gRPC payload bytes to and from this server; see wire.go
}

func newLocalConn(s *server, rank, size int) *serverConn {
	c := &serverConn{index: s.index, rank: uint32(rank), size: size, ready: make(chan struct{}), addr: "in-process", local: s}
	close(c.ready)
	return c
}

func newMeshConn(index, rank, size int, l *meshLink) *serverConn {
	c := &serverConn{index: index, rank: uint32(rank), size: size, ready: make(chan struct{}), addr: meshAddr(l.tr, l.peer), mesh: l}
	l.wire = &c.wire
	close(c.ready)
	return c
}

func newRemoteConn(index, rank, size int) *serverConn {
	return &serverConn{index: index, rank: uint32(rank), size: size, ready: make(chan struct{}), addr: "address not yet known"}
}

func (c *serverConn) errorf(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *ServerError
	if errors.As(err, &se) && se.Index == c.index {
		return err
	}
	err = rpcErr(err)
	if re, ok := err.(*RPCError); ok && strings.Contains(re.Message, "keepalive ping failed to receive ACK") {
		re.Message = fmt.Sprintf("nothing, not even a keepalive ack, came from the server for the peer timeout of %v: its process is stopped, or its host gone (%s)", c.peerTimeout, re.Message)
	}
	return &ServerError{Index: c.index, Addr: c.addr, Op: op, Err: err}
}

// connect finds the server's address in the store, dials it and checks, by
// a hello, that it is the server it should be. It runs in the background
// from New, so that New never waits for other processes; operations wait
// for it instead (await).
func (c *serverConn) connect(ctx context.Context, store driver.Store) {
	defer close(c.ready)
	key := serverKey(c.index)
	v, err := store.Get(ctx, key)
	if err != nil {
		c.err = c.errorf("find", fmt.Errorf("waiting for key %q in the rendezvous store: %w", key, err))
		return
	}
	c.addr = string(v)
	cc, err := grpc.NewClient("passthrough:///"+c.addr, dialOptions(c.creds, c.peerTimeout, c.shape)...)
	if err != nil {
		c.err = c.errorf("dial", err)
		return
	}
	c.cc = cc
	req := &frame{h: header{kind: kindHello, rank: c.rank, contrib: uint32(c.size), aux: uint32(c.index)}}
	var resp frame
	if err := cc.Invoke(ctx, methodHello, req, &resp); err != nil {
		c.err = c.errorf("hello", err)
		return
	}
	resp.release()
}

// await waits until the connection is set up, or ctx ends.
func (c *serverConn) await(ctx context.Context) error {
	select {
	case <-c.ready:
		return c.err
	case <-ctx.Done():
		// connect may still be writing c.addr: do not read it.
		return &ServerError{Index: c.index, Addr: "address not yet known", Op: "connect",
			Err: fmt.Errorf("waiting for the server's address and hello: %w", ctx.Err())}
	}
}

// push sends pieces of one round, init or gradient, each as a message with
// header h at the piece's offset; with no pieces it sends h alone (a
// worker's part in an init whose values come from rank 0).
func (c *serverConn) push(ctx context.Context, h header, pieces []piece) error {
	if err := c.await(ctx); err != nil {
		return err
	}
	if len(pieces) == 0 {
		pieces = []piece{{}}
	}
	if c.local != nil {
		return c.errorf("push", c.local.localPush(ctx, h, pieces))
	}
	if c.mesh != nil {
		return c.meshErr("push", c.mesh.exchange(ctx, &h, pieces, nil))
	}
	start := time.Now()
	stream, err := c.cc.NewStream(ctx, &serviceDesc.Streams[pushStreamIx], methodPush)
	if err != nil {
		return c.explain(ctx, "push", &h, start, err)
	}
	f := frame{h: h}
	for _, p := range pieces {
		f.h.offset, f.h.length, f.payload = uint64(p.offset), uint64(len(p.data)), p.data
		if err := stream.SendMsg(&f); err != nil {
			if err == io.EOF { // the server ended the stream: its status says why
				var ack frame
				err = stream.RecvMsg(&ack)
			}
			return c.explain(ctx, "push", &h, start, err)
		}
	}
	if err := stream.CloseSend(); err != nil {
		return c.explain(ctx, "push", &h, start, err)
	}
	// The acknowledgement comes after the server has taken every piece, so
	// gRPC has finished reading the caller's memory.
	var ack frame
	if err := stream.RecvMsg(&ack); err != nil {
		return c.explain(ctx, "push", &h, start, err)
	}
	ack.release()
	c.wire.sent.Add(piecesLen(pieces))
	return nil
}

// pull asks for [h.offset, h.offset+h.length) and writes it into dst, piece
// by piece as the server streams them.
func (c *serverConn) pull(ctx context.Context, h header, dst []byte) error {
	if err := c.await(ctx); err != nil {
		return err
	}
	if c.local != nil {
		return c.errorf("pull", c.local.localPull(ctx, h, dst))
	}
	if c.mesh != nil {
		return c.meshErr("pull", c.mesh.exchange(ctx, nil, nil, []pullReq{{h, dst}}))
	}
	start := time.Now()
	stream, err := c.cc.NewStream(ctx, &serviceDesc.Streams[pullStreamIx], methodPull)
	if err != nil {
		return c.explain(ctx, "pull", &h, start, err)
	}
	if err := stream.SendMsg(&frame{h: h}); err != nil {
		if err == io.EOF {
			var f frame
			err = stream.RecvMsg(&f)
		}
		return c.explain(ctx, "pull", &h, start, err)
	}
	if err := stream.CloseSend(); err != nil {
		return c.explain(ctx, "pull", &h, start, err)
	}
	var f frame
	next, end := h.offset, h.offset+h.length
	for {
		err := stream.RecvMsg(&f)
		if err == io.EOF {
			break
		}
		if err != nil {
			return c.explain(ctx, "pull", &h, start, err)
		}
		err = c.checkPiece(&f, h.kind, next, end)
		if err == nil {
			copySegs(dst[f.h.offset-h.offset:], f.segs)
			next += f.h.length
		}
		f.release()
		if err != nil {
			return err
		}
	}
	c.wire.recv.Add(int64(next - h.offset))
	if next != end {
		return c.errorf("pull", fmt.Errorf("stream ended after %d of %d bytes", next-h.offset, h.length))
	}
	return nil
}

// checkPiece checks that a pulled piece is the next one expected.
func (c *serverConn) checkPiece(f *frame, k kind, next, end uint64) error {
	if f.h.kind != k || f.h.offset != next || f.h.offset+f.h.length > end || uint64(f.payloadLen()) != f.h.length {
		return c.errorf("pull", fmt.Errorf("protocol error: got %s piece [%d, %d) with %d payload bytes, expected %s from offset %d up to %d",
			f.h.kind, f.h.offset, f.h.offset+f.h.length, f.payloadLen(), k, next, end))
	}
	return nil
}

// abort tells the server this worker's job failed, and why.
func (c *serverConn) abort(ctx context.Context, why string) {
	if len(why) > maxAbortText {
		why = why[:maxAbortText]
	}
	select {
	case <-c.ready:
	default:
		return // never connected: nothing waits on this worker there
	}
	if c.err != nil {
		return
	}
	if c.local != nil {
		c.local.fail(fmt.Errorf("worker rank %d aborted: %s", c.rank, why))
		return
	}
	if c.mesh != nil {
		return // the worker aborts the mesh itself, which every server hears
	}
	req := &frame{h: header{kind: kindAbort, rank: c.rank, length: uint64(len(why))}, payload: []byte(why)}
	var resp frame
	if err := c.cc.Invoke(ctx, methodAbort, req, &resp); err == nil {
		resp.release()
	}
}

// bye tells the server this worker has closed.
func (c *serverConn) bye(ctx context.Context) {
	if c.await(ctx) != nil {
		return
	}
	if c.local != nil {
		c.local.goodbye(c.rank)
		return
	}
	if c.mesh != nil {
		c.mesh.bye(ctx, c.rank)
		return
	}
	var resp frame
	if err := c.cc.Invoke(ctx, methodBye, &frame{h: header{kind: kindBye, rank: c.rank}}, &resp); err == nil {
		resp.release()
	}
}
