package driver

import "context"

// Store is the rendezvous key-value store the ranks of one job share.
type Store interface {
	Set(ctx context.Context, key string, value []byte) error
	// Get waits until key exists, then returns its value.
	Get(ctx context.Context, key string) ([]byte, error)
	// Add adds delta to the integer at key (0 if absent) and returns the sum.
	Add(ctx context.Context, key string, delta int64) (int64, error)
	// Wait returns once every key exists.
	Wait(ctx context.Context, keys ...string) error
	Close() error
}
