package ps

import (
	"context"

	"google.golang.org/grpc"
)

// The gRPC service, written by hand as protoc-gen-go-grpc would generate it,
// but with frames in the raw-bytes codec instead of protobuf messages:
//
//	service ParameterServer {
//	  rpc Hello(Frame) returns (Frame);          // check the server's index and the job's size
//	  rpc Bye(Frame) returns (Frame);            // a worker has closed
//	  rpc Abort(Frame) returns (Frame);          // a worker's job failed: fail everyone's waits
//	  rpc Why(Frame) returns (Frame);            // what did a call that timed out wait for?
//	  rpc Push(stream Frame) returns (Frame);    // pieces of one round, init or gradient
//	  rpc Pull(Frame) returns (stream Frame);    // one range of a round's result or of parameters
//	}
const (
	serviceName  = "distbench.ps.ParameterServer"
	methodHello  = "/" + serviceName + "/Hello"
	methodBye    = "/" + serviceName + "/Bye"
	methodAbort  = "/" + serviceName + "/Abort"
	methodWhy    = "/" + serviceName + "/Why"
	methodPush   = "/" + serviceName + "/Push"
	methodPull   = "/" + serviceName + "/Pull"
	pushStreamIx = 0
	pullStreamIx = 1
)

// service is what a server implements; grpc.Server.RegisterService checks it.
type service interface {
	hello(ctx context.Context, req *frame) (*frame, error)
	bye(ctx context.Context, req *frame) (*frame, error)
	abort(ctx context.Context, req *frame) (*frame, error)
	why(ctx context.Context, req *frame) (*frame, error)
	push(stream grpc.ServerStream) error
	pull(stream grpc.ServerStream) error
}

func unaryHandler(call func(service, context.Context, *frame) (*frame, error), method string) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		req := new(frame)
		if err := dec(req); err != nil {
			return nil, err
		}
		defer req.release()
		if interceptor == nil {
			return call(srv.(service), ctx, req)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: method}
		return interceptor(ctx, req, info, func(ctx context.Context, req any) (any, error) {
			return call(srv.(service), ctx, req.(*frame))
		})
	}
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*service)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Hello", Handler: unaryHandler(service.hello, methodHello)},
		{MethodName: "Bye", Handler: unaryHandler(service.bye, methodBye)},
		{MethodName: "Abort", Handler: unaryHandler(service.abort, methodAbort)},
		{MethodName: "Why", Handler: unaryHandler(service.why, methodWhy)},
	},
	Streams: []grpc.StreamDesc{
		pushStreamIx: {
			StreamName:    "Push",
			Handler:       func(srv any, stream grpc.ServerStream) error { return srv.(service).push(stream) },
			ClientStreams: true,
		},
		pullStreamIx: {
			StreamName:    "Pull",
			Handler:       func(srv any, stream grpc.ServerStream) error { return srv.(service).pull(stream) },
			ServerStreams: true,
		},
	},
	Metadata: "strategies/ps/service.go",
}
