package ps

import (
	"context"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
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

	// keepaliveTime and keepaliveTimeout: a peer that stops answering
	// pings (a host gone, a cable cut: no RST arrives) is declared dead
	// after about 15 s even when no RPC is in flight; an operation's own
	// deadline bounds it sooner. The server accepts pings as frequent as
	// keepaliveMinTime, below the client's interval, so it never answers
	// them with GOAWAY "too_many_pings".
	keepaliveTime    = 10 * time.Second
	keepaliveTimeout = 5 * time.Second
	keepaliveMinTime = 5 * time.Second

	// maxStreams bounds concurrent RPCs per connection: a worker has at
	// most a push and a pull per server per communicator in flight, plus
	// training calls.
	maxStreams = 1024
)

func serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(rawCodec{}),
		experimental.BufferPool(framePool),
		grpc.MaxRecvMsgSize(maxMessage),
		grpc.MaxSendMsgSize(maxMessage),
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(connWindow),
		grpc.WriteBufferSize(writeBuffer),
		grpc.ReadBufferSize(readBuffer),
		grpc.MaxConcurrentStreams(maxStreams),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepaliveTime, Timeout: keepaliveTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime, PermitWithoutStream: true}),
	}
}

func dialOptions(shape func(net.Conn) net.Conn) []grpc.DialOption {
	opts := []grpc.DialOption{
		// Within one job's network, as the TCP transport; see doc.go.
		grpc.WithTransportCredentials(insecure.NewCredentials()),
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
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTimeout, PermitWithoutStream: true}),
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
