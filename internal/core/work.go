package core

import (
	"context"
	"sync"

	"github.com/distbench/distbench/collective"
)

// work is a collective.Work completed by a serial executor.
type work struct {
	done chan struct{}
	err  error
}

func newWork() *work { return &work{done: make(chan struct{})} }

func (w *work) finish(err error) {
	w.err = err
	close(w.done)
}

func (w *work) Done() <-chan struct{} { return w.done }

func (w *work) Wait(ctx context.Context) error {
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// failed returns a Work that has already failed with err.
func failed(err error) collective.Work {
	w := newWork()
	w.finish(err)
	return w
}

// serial runs submitted functions one at a time, in submission order, on one
// goroutine that exits when the queue is closed.
type serial struct {
	mu     sync.Mutex
	queue  chan func()
	closed bool
}

func newSerial() *serial {
	s := &serial{queue: make(chan func(), 1024)}
	go func() {
		for f := range s.queue {
			f()
		}
	}()
	return s
}

// submit enqueues f; false if the executor is closed.
func (s *serial) submit(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.queue <- f
	return true
}

func (s *serial) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.queue)
	}
}
