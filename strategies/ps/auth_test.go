package ps_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// What a stranger knows of the service: its method names and the message
// layout documented in header.go, which it encodes by hand.
const (
	psService   = "/distbench.ps.ParameterServer/"
	psKindBye   = 2
	psKindAbort = 3
	psKindPush  = 5
)

// psMsg is a message header, field by field (header.go's layout).
type psMsg struct {
	kind, dtype, op                   byte
	rank, contrib, chunk              uint32
	group                             uint64
	seq                               int64
	shard, pull, offset, length, lenv uint64
}

// encode returns the header followed by payload; length is len(payload)
// unless lenv overrides it.
func (m psMsg) encode(payload []byte) []byte {
	b := make([]byte, 80, 80+len(payload))
	le := binary.LittleEndian
	b[0], b[1], b[2], b[3], b[4], b[5] = 'P', 'S', 2, m.kind, m.dtype, m.op
	le.PutUint32(b[8:], m.rank)
	le.PutUint32(b[12:], m.contrib)
	le.PutUint32(b[16:], m.chunk)
	le.PutUint64(b[24:], m.group)
	le.PutUint64(b[32:], uint64(m.seq))
	le.PutUint64(b[40:], m.shard)
	le.PutUint64(b[48:], m.pull)
	le.PutUint64(b[56:], m.offset)
	n := uint64(len(payload))
	if m.lenv != 0 {
		n = m.lenv
	}
	le.PutUint64(b[64:], n)
	return append(b, payload...)
}

// rawBytes is a stranger's codec: a message is the bytes given.
type rawBytes struct{}

func (rawBytes) Name() string { return "distbench-ps-raw" }
func (rawBytes) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}
func (rawBytes) Unmarshal(d mem.BufferSlice, v any) error {
	*v.(*[]byte) = d.Materialize()
	return nil
}

// handshakeCreds run the project's handshake (internal/wire) as a client
// with whatever job id, token and rank they are given.
type handshakeCreds struct {
	cfg  wire.HandshakeConfig
	peer int // the rank expected: the handshake's rank of the server
}

type handshakeInfo struct{ credentials.CommonAuthInfo }

func (handshakeInfo) AuthType() string { return "test" }

func (c handshakeCreds) ClientHandshake(ctx context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if err := wire.ClientHandshake(ctx, conn, c.cfg, c.peer); err != nil {
		return nil, nil, err
	}
	return conn, handshakeInfo{}, nil
}
func (handshakeCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("client only")
}
func (handshakeCreds) Info() credentials.ProtocolInfo            { return credentials.ProtocolInfo{} }
func (c handshakeCreds) Clone() credentials.TransportCredentials { return c }
func (handshakeCreds) OverrideServerName(string) error           { return nil }

// dialRaw is a real gRPC client of the server at addr, over TCP.
func dialRaw(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawBytes{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func unaryRaw(ctx context.Context, cc *grpc.ClientConn, method string, req []byte) error {
	var resp []byte
	return cc.Invoke(ctx, psService+method, &req, &resp)
}

// pushRaw sends msgs on one Push stream and returns the call's outcome.
func pushRaw(ctx context.Context, cc *grpc.ClientConn, msgs ...[]byte) error {
	desc := &grpc.StreamDesc{StreamName: "Push", ClientStreams: true}
	s, err := cc.NewStream(ctx, desc, psService+"Push")
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := s.SendMsg(&m); err != nil {
			if err != io.EOF {
				return err
			}
			break // the server has ended the call: its status says why
		}
	}
	s.CloseSend()
	var resp []byte
	return s.RecvMsg(&resp)
}

// allReduceChecked runs an allreduce on every worker and checks every
// element of every result.
func allReduceChecked(t *testing.T, comms []collective.Comm) {
	t.Helper()
	const count = 5003
	n := len(comms)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			x := collective.NewTensor(collective.Int32, count)
			v := x.Int32s()
			for i := range v {
				v[i] = int32(r*count + i)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := c.AllReduce(ctx, x, collective.Sum); err != nil {
				t.Errorf("rank %d: allreduce: %v", r, err)
				return
			}
			for i, got := range v {
				if want := int32(n*i + count*n*(n-1)/2); got != want {
					t.Errorf("rank %d: element %d = %d, want %d", r, i, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestStrangersAreRefused has strangers' gRPC clients reach a dedicated
// server's port and send what once ended a job: an abort in the name of
// rank 0, a malformed push, a goodbye from every worker. A client that
// does not hold the job's token (one that does not speak the handshake,
// one that guesses the token, one of another job) is refused before its
// first RPC, and the job goes on with correct results.
func TestStrangersAreRefused(t *testing.T) {
	const n = 3
	d := dedicatedWorld(t, n, map[string]string{"transport": "grpc", "servers": "2"}, time.Minute)
	defer closeAll(d.comms)
	addr := d.addr(t, 0)
	allReduceChecked(t, d.comms)

	// The handshake's world: workers 0..n-1, then the two servers.
	guess := wire.HandshakeConfig{Service: wire.ServicePS, JobID: testJob, Token: []byte("a guess"), Rank: 1, Size: n + 2}
	other := wire.HandshakeConfig{Service: wire.ServicePS, JobID: "another job", Token: []byte("its token"), Rank: 1, Size: n + 2}
	// A rank's mesh handshake, token and all, is not a worker's: the
	// service is in the MAC.
	mesh := wire.HandshakeConfig{Service: wire.ServiceMesh, JobID: testJob, Token: testToken, Rank: 1, Size: n + 2}
	for _, stranger := range []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"no handshake", insecure.NewCredentials()},
		{"a guessed token", handshakeCreds{cfg: guess, peer: n}},
		{"another job", handshakeCreds{cfg: other, peer: n}},
		{"a mesh handshake", handshakeCreds{cfg: mesh, peer: n}},
	} {
		t.Run(stranger.name, func(t *testing.T) {
			cc := dialRaw(t, addr, stranger.creds)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			why := []byte("worker rank 0 failed")
			attacks := map[string]func() error{
				"abort": func() error {
					return unaryRaw(ctx, cc, "Abort", psMsg{kind: psKindAbort, rank: 0}.encode(why))
				},
				"malformed push": func() error {
					return pushRaw(ctx, cc, []byte("not a parameter-server message"))
				},
				"goodbyes": func() error {
					var errs []error
					for r := range n {
						errs = append(errs, unaryRaw(ctx, cc, "Bye", psMsg{kind: psKindBye, rank: uint32(r)}.encode(nil)))
					}
					return errors.Join(errs...)
				},
			}
			for name, attack := range attacks {
				err := attack()
				if err == nil {
					t.Errorf("%s: served", name)
					continue
				}
				if status.Code(err) != codes.Unavailable {
					t.Errorf("%s: %v, want a refused connection (Unavailable)", name, err)
				}
				t.Logf("%s: %v", name, err)
			}
		})
	}
	// Every worker completes checked allreduces through both servers.
	allReduceChecked(t, d.comms)
	allReduceChecked(t, d.comms)
}

// TestMalformedMessagesAreRefused has a client that holds the job's token
// and proves rank 1 send messages that break the protocol. Each is refused
// with an error that names the sender by rank and address, the server
// stays up, nothing is allocated for it, and the job goes on with correct
// results: a message that can be refused does not fail the job.
func TestMalformedMessagesAreRefused(t *testing.T) {
	const n = 3
	d := dedicatedWorld(t, n, map[string]string{"transport": "grpc", "servers": "2"}, time.Minute)
	defer closeAll(d.comms)
	allReduceChecked(t, d.comms)
	member := wire.HandshakeConfig{Service: wire.ServicePS, JobID: testJob, Token: testToken, Rank: 1, Size: n + 2}
	cc := dialRaw(t, d.addr(t, 0), handshakeCreds{cfg: member, peer: n})

	const (
		f32 = byte(collective.Float32)
		sum = byte(collective.Sum)
		kib = 4 << 10
	)
	// A well-formed push of one chunk of a 3-worker sum of 4 KiB, in a
	// round no worker uses; each case breaks one thing.
	good := psMsg{kind: psKindPush, dtype: f32, op: sum, rank: 1, contrib: n, chunk: kib, group: 0xbad, seq: 7, shard: kib, pull: n * kib}
	with := func(edit func(*psMsg)) psMsg { m := good; edit(&m); return m }
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
		// gRPC answers a message over its size limit itself, before the
		// server sees it (which logs the refusal, naming the sender).
		oversize bool
	}{
		{"not a message", func(ctx context.Context) error {
			return pushRaw(ctx, cc, []byte("not a parameter-server message"))
		}, false},
		{"a header of zeros", func(ctx context.Context) error { return pushRaw(ctx, cc, make([]byte, 80)) }, false},
		{"another rank's name", func(ctx context.Context) error {
			return pushRaw(ctx, cc, with(func(m *psMsg) { m.rank = 2 }).encode(make([]byte, kib)))
		}, false},
		{"an empty piece at the shard's end", func(ctx context.Context) error {
			return pushRaw(ctx, cc, with(func(m *psMsg) { m.offset = kib }).encode(nil))
		}, false},
		{"a piece across chunks", func(ctx context.Context) error {
			return pushRaw(ctx, cc, with(func(m *psMsg) { m.op, m.shard, m.pull, m.offset = 0, 2*kib, 2*n*kib, kib/2 }).encode(make([]byte, kib)))
		}, false},
		{"more contributions than workers", func(ctx context.Context) error {
			return pushRaw(ctx, cc, with(func(m *psMsg) { m.contrib = 1000 }).encode(make([]byte, kib)))
		}, false},
		{"a terabyte shard", func(ctx context.Context) error {
			return pushRaw(ctx, cc, with(func(m *psMsg) { m.op, m.shard, m.pull = 0, 1<<40, 1<<40 }).encode(make([]byte, kib)))
		}, false},
		{"a payload shorter than announced", func(ctx context.Context) error {
			return pushRaw(ctx, cc, with(func(m *psMsg) { m.lenv = kib }).encode(make([]byte, 16)))
		}, false},
		{"a message over the size limit", func(ctx context.Context) error {
			return pushRaw(ctx, cc, good.encode(make([]byte, 17<<20)))
		}, true},
		{"an abort longer than announced", func(ctx context.Context) error {
			return unaryRaw(ctx, cc, "Abort", psMsg{kind: psKindAbort, rank: 1, lenv: 4}.encode(make([]byte, 4000)))
		}, false},
		{"a goodbye in another rank's name", func(ctx context.Context) error {
			return unaryRaw(ctx, cc, "Bye", psMsg{kind: psKindBye, rank: 0}.encode(nil))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			err := tc.call(ctx)
			t.Log(err)
			switch {
			case tc.oversize:
				if status.Code(err) != codes.ResourceExhausted {
					t.Errorf("got %v, want ResourceExhausted", err)
				}
			case status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "worker rank 1 (127.0.0.1:"):
				t.Errorf("got %v, want InvalidArgument naming worker rank 1 and its address", err)
			}
		})
	}
	// Nothing of it reached the job.
	allReduceChecked(t, d.comms)
}
