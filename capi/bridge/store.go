package bridge

import (
	"context"

	"github.com/distbench/distbench/collective/driver"
)

// jobStore keeps one job's keys apart from the others' on a store several
// jobs share: a torch job's groups each meet as a job of their own on the
// job's one TCPStore, and the transport and the strategies use fixed key
// names (the mesh's addresses, a parameter server's), which would
// otherwise find another group's. Close is the session's, not this view's.
type jobStore struct {
	prefix string
	st     driver.Store
}

func (s jobStore) Set(ctx context.Context, key string, value []byte) error {
	return s.st.Set(ctx, s.prefix+key, value)
}

func (s jobStore) Get(ctx context.Context, key string) ([]byte, error) {
	return s.st.Get(ctx, s.prefix+key)
}

func (s jobStore) Add(ctx context.Context, key string, delta int64) (int64, error) {
	return s.st.Add(ctx, s.prefix+key, delta)
}

func (s jobStore) Wait(ctx context.Context, keys ...string) error {
	pk := make([]string, len(keys))
	for i, k := range keys {
		pk[i] = s.prefix + k
	}
	return s.st.Wait(ctx, pk...)
}

func (s jobStore) Close() error { return nil }
