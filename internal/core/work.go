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

// serial runs functions one at a time, in submission order. It holds no
// goroutine while idle: submit starts one to drain the queue, and runInline
// lets a blocking caller run its function on its own goroutine when nothing
// is queued ahead of it, which saves two goroutine hand-offs per blocking
// collective (most of a small message's latency budget).
type serial struct {
	mu      sync.Mutex
	queue   []func()
	running bool
	closed  bool
}

func newSerial() *serial { return &serial{} }

// submit enqueues f; false if the executor is closed.
func (s *serial) submit(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.queue = append(s.queue, f)
	if !s.running {
		s.running = true
		go s.drain()
	}
	return true
}

// runInline runs f now on the caller's goroutine if the executor is idle,
// and reports whether it did. closed reports an executor that takes nothing.
func (s *serial) runInline(f func()) (ran, closed bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false, true
	}
	if s.running {
		s.mu.Unlock()
		return false, false
	}
	s.running = true
	s.mu.Unlock()
	f()
	s.mu.Lock()
	if len(s.queue) > 0 {
		go s.drain()
	} else {
		s.running = false
	}
	s.mu.Unlock()
	return true, false
}

func (s *serial) drain() {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		f := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.mu.Unlock()
		f()
	}
}

// close refuses further work; queued functions still run.
func (s *serial) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
}
