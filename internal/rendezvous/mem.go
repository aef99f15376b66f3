package rendezvous

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

// MemStore is a driver.Store in memory, for ranks that share one process:
// in-process worlds in tests, benchmarks and examples. Values are copied in
// and out; Get and Wait block until their keys exist or ctx ends.
type MemStore struct {
	mu      sync.Mutex
	kv      map[string][]byte
	changed chan struct{} // closed and replaced on every change
}

var _ driver.Store = (*MemStore)(nil)

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{kv: map[string][]byte{}, changed: make(chan struct{})}
}

func (s *MemStore) setLocked(key string, v []byte) {
	s.kv[key] = v
	close(s.changed)
	s.changed = make(chan struct{})
}

// Set stores a copy of value under key.
func (s *MemStore) Set(ctx context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setLocked(key, append([]byte(nil), value...))
	return nil
}

// Get waits until key exists and returns a copy of its value.
func (s *MemStore) Get(ctx context.Context, key string) ([]byte, error) {
	start := time.Now()
	for {
		s.mu.Lock()
		v, ok := s.kv[key]
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return append([]byte(nil), v...), nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return nil, &collective.TimeoutError{After: time.Since(start), Waiting: "key " + strconv.Quote(key)}
			}
			return nil, ctx.Err()
		}
	}
}

// Add adds delta to the decimal integer at key (0 if absent) and returns the sum.
func (s *MemStore) Add(ctx context.Context, key string, delta int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := strconv.ParseInt(string(s.kv[key]), 10, 64)
	n += delta
	s.setLocked(key, []byte(strconv.FormatInt(n, 10)))
	return n, nil
}

// Wait returns once every key exists.
func (s *MemStore) Wait(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if _, err := s.Get(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// Close does nothing; the store lives as long as it is referenced.
func (s *MemStore) Close() error { return nil }
