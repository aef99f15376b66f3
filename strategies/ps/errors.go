package ps

import (
	"context"
	"errors"
	"fmt"

	"github.com/distbench/distbench/collective"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ServerError names the parameter server an operation failed on. Errors of
// every collective and training call that involve a server wrap one, so
// errors.As finds which server, and where, whatever the operation.
type ServerError struct {
	Index int    // the server's index, 0..k-1
	Addr  string // its host:port, or "in-process" for a colocated server's own worker
	Op    string // what was asked of it: "find", "hello", "push", "pull", ...
	Err   error
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("server %d (%s): %s: %v", e.Index, e.Addr, e.Op, e.Err)
}

func (e *ServerError) Unwrap() error { return e.Err }

// RPCError is a failed gRPC call: its status code and message, without the
// "rpc error: code = … desc = …" wrapping. DeadlineExceeded matches
// collective.ErrTimeout under errors.Is.
type RPCError struct {
	Code    codes.Code
	Message string
}

func (e *RPCError) Error() string { return e.Code.String() + ": " + e.Message }

// Is makes errors.Is(err, collective.ErrTimeout) true for a deadline.
func (e *RPCError) Is(target error) bool {
	return target == collective.ErrTimeout && e.Code == codes.DeadlineExceeded
}

// rpcErr converts an error from gRPC into an *RPCError; others pass.
func rpcErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &RPCError{Code: codes.DeadlineExceeded, Message: err.Error()}
	}
	if s, ok := status.FromError(err); ok {
		return &RPCError{Code: s.Code(), Message: s.Message()}
	}
	return err
}
