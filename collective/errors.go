package collective

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrUnsupported is returned by a strategy for an operation it cannot do.
	ErrUnsupported = errors.New("operation not supported by this strategy")
	// ErrTimeout marks an operation that ran past its deadline.
	ErrTimeout = errors.New("timed out")
	// ErrClosed is returned for operations on a closed communicator.
	ErrClosed = errors.New("communicator closed")
	// ErrInvalid marks bad arguments: mismatched dtypes or counts, a root out of range.
	ErrInvalid = errors.New("invalid argument")
	// ErrMismatch marks ranks that disagree about an operation (sizes, types).
	ErrMismatch = errors.New("ranks disagree")
	// ErrAborted marks a failure relayed from another rank, which aborted
	// the job; the *PeerError around it names that rank, and the text
	// after "aborted: " is its own error.
	ErrAborted = errors.New("aborted")
)

// PeerError names the peer an operation failed on.
type PeerError struct {
	Rank int    // the peer's global rank
	Addr string // host:port, or "" where there is none (in-memory meshes)
	Err  error
}

func (e *PeerError) Error() string {
	if e.Addr == "" {
		return fmt.Sprintf("rank %d: %v", e.Rank, e.Err)
	}
	return fmt.Sprintf("rank %d (%s): %v", e.Rank, e.Addr, e.Err)
}

func (e *PeerError) Unwrap() error { return e.Err }

// OpError names the operation that failed and its sequence number in its
// communicator, which is the same on every rank, so logs from all ranks line up.
type OpError struct {
	Strategy string
	Op       string // "allreduce", "send", ...
	Seq      uint64
	Err      error
}

func (e *OpError) Error() string {
	return fmt.Sprintf("%s: %s #%d: %v", e.Strategy, e.Op, e.Seq, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// TimeoutError is an operation that waited longer than its deadline.
type TimeoutError struct {
	After   time.Duration // how long it waited, when known
	Waiting string        // what it was waiting for ("a message from rank 2 (10.0.0.3:4123)")
	// Cause, when known, says why what it waited for did not come: the
	// chain of waits that a diagnosis followed to a rank that waits for
	// nothing or does not answer ("rank 2 waits for rank 0, which waits
	// for rank 3; rank 3 (10.0.0.4:4100) did not answer within 1s").
	// See driver.Diagnoser.
	Cause string
}

func (e *TimeoutError) Error() string {
	s := "timed out"
	if e.After > 0 {
		s += " after " + e.After.Round(time.Millisecond).String()
	}
	if e.Waiting != "" {
		s += " waiting for " + e.Waiting
	}
	if e.Cause != "" {
		s += "; " + e.Cause
	}
	return s
}

// Is makes errors.Is(err, ErrTimeout) true.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// MismatchError reports ranks that disagree about an operation's shape.
type MismatchError struct {
	What      string // "message size in bytes", "dtype", ...
	Want, Got int64
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("ranks disagree on %s: expected %d, got %d", e.What, e.Want, e.Got)
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// Invalidf returns an error wrapping ErrInvalid.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
