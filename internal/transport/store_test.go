package transport

import (
	"context"
	"strconv"
	"sync"

	"github.com/distbench/distbench/collective"
)

// memStore is an in-memory collective.Store for tests, standing in for the
// rendezvous package.
type memStore struct {
	mu      sync.Mutex
	m       map[string][]byte
	changed chan struct{} // closed and replaced on every change
}

var _ collective.Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{m: map[string][]byte{}, changed: make(chan struct{})}
}

func (s *memStore) set(key string, v []byte) {
	s.m[key] = v
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *memStore) Set(ctx context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set(key, append([]byte(nil), value...))
	return nil
}

func (s *memStore) Get(ctx context.Context, key string) ([]byte, error) {
	for {
		s.mu.Lock()
		v, ok := s.m[key]
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return append([]byte(nil), v...), nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *memStore) Add(ctx context.Context, key string, delta int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := strconv.ParseInt(string(s.m[key]), 10, 64)
	n += delta
	s.set(key, []byte(strconv.FormatInt(n, 10)))
	return n, nil
}

func (s *memStore) Wait(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if _, err := s.Get(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

func (s *memStore) Close() error { return nil }
