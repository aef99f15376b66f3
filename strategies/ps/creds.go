package ps

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/distbench/distbench/internal/wire"
	"google.golang.org/grpc/credentials"
)

// Who may talk to a server: every connection opens with the project's
// handshake (internal/wire: HMAC over the job token, the one the TCP mesh
// and the store use, for the ps service), run by gRPC transport
// credentials on the raw connection before HTTP/2 starts. A client that
// cannot prove it holds the token is refused before it can send a single
// RPC; no secret ever crosses the wire.
//
// The handshake's ranks: workers are ranks 0..np−1 of a world of np+k,
// server i is rank np+i, so a worker dialling server i expects rank np+i
// and a server admits only workers.

// handshakeWorld is the handshake configuration of a participant: rank of
// a world of workers+servers.
func handshakeWorld(jobID string, token []byte, rank, workers, servers int) wire.HandshakeConfig {
	return wire.HandshakeConfig{Service: wire.ServicePS, JobID: jobID, Token: token, Rank: rank, Size: workers + servers}
}

// maxHandshakes bounds the handshakes a server runs at once: a flood of
// idle connections is refused at once instead of holding a goroutine and
// a socket each until the handshake's deadline (as the mesh does).
const maxHandshakes = 64

// wireCreds are gRPC transport credentials that run wire's handshake.
type wireCreds struct {
	cfg wire.HandshakeConfig
	// Client side: the rank expected at the other end.
	peer int
	// Server side: the ranks served (workers), a semaphore of handshakes
	// in progress, and where refusals are logged.
	workers  int
	inFlight chan struct{}
	refusals *wire.RefusalLog // at a bounded rate: strangers may be many
	// accepted, if set, wraps an authenticated connection and names it.
	accepted func(rank int, conn net.Conn) (net.Conn, *link)
}

var _ credentials.TransportCredentials = (*wireCreds)(nil)

func clientCreds(cfg wire.HandshakeConfig, peer, workers int) *wireCreds {
	return &wireCreds{cfg: cfg, peer: peer, workers: workers}
}

func serverCreds(cfg wire.HandshakeConfig, workers int, logf func(string, ...any)) *wireCreds {
	return &wireCreds{cfg: cfg, peer: -1, workers: workers, inFlight: make(chan struct{}, maxHandshakes),
		refusals: &wire.RefusalLog{Logf: logf, Prefix: fmt.Sprintf("ps: server %d", cfg.Rank-workers)}}
}

// peerAuth is a connection's AuthInfo: the rank its peer proved to be
// and, on a server, the worker's connection.
type peerAuth struct {
	credentials.CommonAuthInfo
	rank int
	link *link
}

func (peerAuth) AuthType() string { return "distbench-wire" }

// authInfo makes the AuthInfo of a handshake with rank. The handshake
// authenticates the peer but does not protect the stream afterwards, hence
// NoSecurity, as for the mesh: bind servers to the job's own network.
func authInfo(rank int, l *link) peerAuth {
	return peerAuth{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}, rank: rank, link: l}
}

func (c *wireCreds) ClientHandshake(ctx context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if err := wire.ClientHandshake(ctx, conn, c.cfg, c.peer); err != nil {
		if errors.Is(err, wire.ErrSizeMismatch) {
			// The handshake's world counts servers too: say what differs.
			err = fmt.Errorf("%w (this job has %d workers and %d servers: the server belongs to a job of another size, or its address in the store is stale)",
				err, c.workers, c.cfg.Size-c.workers)
		}
		return nil, nil, err
	}
	return conn, authInfo(c.peer, nil), nil
}

func (c *wireCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	select {
	case c.inFlight <- struct{}{}:
		defer func() { <-c.inFlight }()
	default:
		err := fmt.Errorf("refused a connection from %s: %d handshakes already in progress", conn.RemoteAddr(), maxHandshakes)
		c.refusals.Refused(conn.RemoteAddr().String(), fmt.Errorf("%d handshakes already in progress", maxHandshakes))
		return nil, nil, err
	}
	rank, err := wire.ServerHandshake(context.Background(), conn, c.cfg, func(r int) error {
		if r >= c.workers {
			return fmt.Errorf("%w: rank %d is a server; only workers (ranks 0..%d) connect to servers", wire.ErrRankMismatch, r, c.workers-1)
		}
		return nil
	})
	if err != nil {
		c.refusals.Refused(conn.RemoteAddr().String(), err)
		return nil, nil, err
	}
	// gRPC reads the HTTP/2 preface next, under a deadline it clears once
	// read; the handshake cleared gRPC's, so arm one again.
	conn.SetDeadline(time.Now().Add(wire.DefaultHandshakeTimeout))
	var l *link
	if c.accepted != nil {
		conn, l = c.accepted(rank, conn)
	}
	return conn, authInfo(rank, l), nil
}

func (c *wireCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "distbench-wire"}
}

func (c *wireCreds) Clone() credentials.TransportCredentials {
	cc := *c
	return &cc
}

func (c *wireCreds) OverrideServerName(string) error {
	return errors.New("ps: the handshake authenticates ranks, not server names")
}
