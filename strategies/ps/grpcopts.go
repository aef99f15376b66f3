package ps

import (
	"context"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/keepalive"
)

// gRPC settings, chosen on purpose; doc.go explains each.
const (
	// streamWindow and connWindow are HTTP/2 flow-control windows: how much
	// a sender may have in flight before the receiver acknowledges. gRPC's
	// defaults (64 KiB, growing by BDP estimation) stall a multi-megabyte
	// push on loopback every few frames; static windows of a whole large
	// shard let a push or pull run at the speed of the copy.
	streamWindow = 64 << 20
	connWindow   = 256 << 20

	// writeBuffer batches HTTP/2 frames (16 KiB each) into one write
	// system call; readBuffer is the read system call's size. gRPC's
	// default of 32 KiB costs a system call every two frames.
	writeBuffer = 1 << 20
	readBuffer  = 512 << 10

	// Liveness. Both sides ping a connection that has been silent for
	// keepaliveTime (gRPC's floor for clients) and declare the peer dead
	// once nothing, not even the ping's ack, has arrived for the peer
	// timeout. gRPC acks pings from user-space goroutines: a CPU-starved
	// process acks late, a stopped one never, and the kernel's TCP acks
	// say nothing of either. So the ack's grace must outlast any
	// starvation: the old 5 s failed live servers on a loaded machine.
	// The server accepts pings as frequent as keepaliveMinTime, below the
	// interval, so it never answers them with GOAWAY "too_many_pings".
	keepaliveTime    = 10 * time.Second
	keepaliveMinTime = 5 * time.Second
	// DefaultPeerTimeout is the default of the option peer-timeout.
	DefaultPeerTimeout = 60 * time.Second
	minPeerTimeout     = 2 * keepaliveTime
	maxPeerTimeout     = time.Hour

	// maxStreams bounds concurrent RPCs per connection: a worker has at
	// most a push and a pull per server per communicator in flight, plus
	// training calls.
	maxStreams = 1024
)

// serverOptions are a server's: creds authenticate every connection,
// peerTimeout is the liveness bound.
func serverOptions(creds credentials.TransportCredentials, peerTimeout time.Duration) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.Creds(creds),
		grpc.ForceServerCodecV2(rawCodec{}),
		experimental.BufferPool(framePool),
		grpc.MaxRecvMsgSize(maxMessage),
		grpc.MaxSendMsgSize(maxMessage),
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(connWindow),
		grpc.WriteBufferSize(writeBuffer),
		grpc.ReadBufferSize(readBuffer),
		grpc.MaxConcurrentStreams(maxStreams),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepaliveTime, Timeout: peerTimeout - keepaliveTime}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime, PermitWithoutStream: true}),
	}
}

func dialOptions(creds credentials.TransportCredentials, peerTimeout time.Duration, shape func(net.Conn) net.Conn) []grpc.DialOption {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(
			grpc.ForceCodecV2(rawCodec{}),
			grpc.MaxCallRecvMsgSize(maxMessage),
			grpc.MaxCallSendMsgSize(maxMessage),
		),
		experimental.WithBufferPool(framePool),
		grpc.WithInitialWindowSize(streamWindow),
		grpc.WithInitialConnWindowSize(connWindow),
		grpc.WithWriteBufferSize(writeBuffer),
		grpc.WithReadBufferSize(readBuffer),
		// A push's payload is the caller's memory, read as it is written:
		// retries would replay it from a buffer gRPC keeps, and a collective
		// cannot be retried by one rank alone anyway.
		grpc.WithDisableRetry(),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: peerTimeout - keepaliveTime, PermitWithoutStream: true}),
		// An idle channel would close its connection after 30 minutes,
		// which the server would take for the worker's death.
		grpc.WithIdleTimeout(0),
	}
	if shape != nil {
		// Shaped like the job's network, as the mesh's own links are.
		opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return shape(c), nil
		}))
	}
	return opts
}
