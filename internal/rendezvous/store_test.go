package rendezvous

import (
	"bytes"
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

// backend opens two handles on one fresh store, as two processes would
// have them: two connections to one server, or two opens of one file.
type backend struct {
	name string
	open func(t *testing.T, timeout time.Duration, lim Limits) (a, b driver.Store)
}

var backends = []backend{
	{"tcp", func(t *testing.T, timeout time.Duration, lim Limits) (driver.Store, driver.Store) {
		srv, err := Listen("127.0.0.1:0", ServerOptions{JobID: "test", Limits: lim})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		dial := func() driver.Store {
			c, err := Dial(context.Background(), srv.Addr(), ClientOptions{JobID: "test", Timeout: timeout, Limits: lim})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		return dial(), dial()
	}},
	{"file", func(t *testing.T, timeout time.Duration, lim Limits) (driver.Store, driver.Store) {
		path := filepath.Join(t.TempDir(), "store")
		open := func() driver.Store {
			s, err := OpenFile(context.Background(), path, FileOptions{Timeout: timeout, Limits: lim})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		return open(), open()
	}},
}

func forEachBackend(t *testing.T, f func(t *testing.T, be backend)) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			f(t, be)
		})
	}
}

func TestStoreSemantics(t *testing.T) {
	type store = driver.Store
	tests := []struct {
		name string
		run  func(t *testing.T, ctx context.Context, a, b store)
	}{
		{"set then get", func(t *testing.T, ctx context.Context, a, b store) {
			must(t, a.Set(ctx, "k", []byte("v")))
			if got := mustGet(t, ctx, b, "k"); string(got) != "v" {
				t.Fatalf("get = %q", got)
			}
		}},
		{"get waits for a later set", func(t *testing.T, ctx context.Context, a, b store) {
			start := time.Now()
			go func() {
				time.Sleep(100 * time.Millisecond)
				a.Set(ctx, "late", []byte("here"))
			}()
			if got := mustGet(t, ctx, b, "late"); string(got) != "here" {
				t.Fatalf("get = %q", got)
			}
			if d := time.Since(start); d < 90*time.Millisecond {
				t.Fatalf("get returned after %v, before the set", d)
			}
		}},
		{"set replaces", func(t *testing.T, ctx context.Context, a, b store) {
			must(t, a.Set(ctx, "k", []byte("one")))
			must(t, b.Set(ctx, "k", []byte("two")))
			if got := mustGet(t, ctx, a, "k"); string(got) != "two" {
				t.Fatalf("get = %q", got)
			}
		}},
		{"empty and binary values", func(t *testing.T, ctx context.Context, a, b store) {
			must(t, a.Set(ctx, "empty", nil))
			if got := mustGet(t, ctx, b, "empty"); got == nil || len(got) != 0 {
				t.Fatalf("get = %#v, want empty and non-nil", got)
			}
			bin := []byte{0, 1, 0xff, '\n'}
			must(t, a.Set(ctx, "bin\x00key", bin))
			if got := mustGet(t, ctx, b, "bin\x00key"); !bytes.Equal(got, bin) {
				t.Fatalf("get = %v", got)
			}
		}},
		{"get's value is the caller's", func(t *testing.T, ctx context.Context, a, b store) {
			must(t, a.Set(ctx, "k", []byte("abc")))
			mustGet(t, ctx, b, "k")[0] = 'X'
			if got := mustGet(t, ctx, b, "k"); string(got) != "abc" {
				t.Fatalf("modifying one Get's result changed the next: %q", got)
			}
		}},
		{"add", func(t *testing.T, ctx context.Context, a, b store) {
			for _, step := range []struct{ delta, want int64 }{{5, 5}, {-7, -2}, {0, -2}, {math.MaxInt64, math.MaxInt64 - 2}} {
				if got, err := a.Add(ctx, "n", step.delta); err != nil || got != step.want {
					t.Fatalf("add %d = %d, %v; want %d", step.delta, got, err, step.want)
				}
			}
			if got := mustGet(t, ctx, b, "n"); string(got) != "9223372036854775805" {
				t.Fatalf("get of a counter = %q, want its decimal text", got)
			}
		}},
		{"add creates the key for waiters", func(t *testing.T, ctx context.Context, a, b store) {
			go func() {
				time.Sleep(50 * time.Millisecond)
				a.Add(ctx, "counter", 3)
			}()
			if got := mustGet(t, ctx, b, "counter"); string(got) != "3" {
				t.Fatalf("get = %q", got)
			}
		}},
		{"add overflow", func(t *testing.T, ctx context.Context, a, b store) {
			if _, err := a.Add(ctx, "n", math.MaxInt64); err != nil {
				t.Fatal(err)
			}
			_, err := b.Add(ctx, "n", 1)
			wantErr(t, err, "overflows")
		}},
		{"add to a non-integer", func(t *testing.T, ctx context.Context, a, b store) {
			must(t, a.Set(ctx, "s", []byte("abc")))
			_, err := b.Add(ctx, "s", 1)
			wantErr(t, err, `add to key "s": it holds "abc", not an integer`)
		}},
		{"wait for several keys", func(t *testing.T, ctx context.Context, a, b store) {
			go func() {
				time.Sleep(30 * time.Millisecond)
				a.Set(ctx, "x", nil)
				time.Sleep(30 * time.Millisecond)
				a.Add(ctx, "y", 1)
			}()
			must(t, b.Wait(ctx, "x", "y", "x"))
			must(t, b.Wait(ctx))
		}},
		{"get times out at the context's deadline", func(t *testing.T, ctx context.Context, a, b store) {
			ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := b.Get(ctx, "never")
			if !errors.Is(err, collective.ErrTimeout) {
				t.Fatalf("err = %v, want a timeout", err)
			}
			wantErr(t, err, `key "never"`)
			// The store's own timeout is 10s: ending well before it is
			// ending at the context's deadline, at any speed.
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("timed out after %v", d)
			}
		}},
		{"wait timeout names the missing keys", func(t *testing.T, ctx context.Context, a, b store) {
			must(t, a.Set(ctx, "here", nil))
			ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			err := b.Wait(ctx, "here", "absent")
			if !errors.Is(err, collective.ErrTimeout) {
				t.Fatalf("err = %v, want a timeout", err)
			}
			wantErr(t, err, `"absent"`)
		}},
		{"cancelled context", func(t *testing.T, ctx context.Context, a, b store) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(50*time.Millisecond, cancel)
			_, err := b.Get(ctx, "never")
			if !errors.Is(err, context.Canceled) || errors.Is(err, collective.ErrTimeout) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
		}},
		{"an expired context leaves the store usable", func(t *testing.T, ctx context.Context, a, b store) {
			expired, cancel := context.WithTimeout(ctx, -time.Second)
			defer cancel()
			if err := a.Set(expired, "k", nil); !errors.Is(err, collective.ErrTimeout) {
				t.Fatalf("set with an expired context: %v, want a timeout", err)
			}
			must(t, a.Set(ctx, "k", []byte("v")))
			if got := mustGet(t, ctx, a, "k"); string(got) != "v" {
				t.Fatalf("get = %q", got)
			}
		}},
		{"bad keys are refused before sending", func(t *testing.T, ctx context.Context, a, b store) {
			for _, err := range []error{
				a.Set(ctx, "", nil),
				a.Set(ctx, strings.Repeat("k", 65), nil),
				a.Set(ctx, "k", make([]byte, 257)),
				a.Wait(ctx, "ok", ""),
			} {
				if !errors.Is(err, collective.ErrInvalid) {
					t.Errorf("err = %v, want ErrInvalid", err)
				}
			}
			_, err := a.Get(ctx, "")
			wantErr(t, err, "empty key")
		}},
		{"closed", func(t *testing.T, ctx context.Context, a, b store) {
			must(t, a.Close())
			must(t, a.Close())
			_, err := a.Get(ctx, "k")
			if !errors.Is(err, collective.ErrClosed) {
				t.Fatalf("err = %v, want ErrClosed", err)
			}
			must(t, b.Set(ctx, "k", nil)) // the other handle is unaffected
		}},
	}
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				a, b := be.open(t, 10*time.Second, Limits{MaxKeySize: 64, MaxValueSize: 256})
				tt.run(t, context.Background(), a, b)
			})
		}
	})
}

func TestStoreDefaultTimeout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		// The timeout bounds opening the store too: long enough that a
		// busy machine connects within it, so that only Get spends it.
		const timeout = 2 * time.Second
		a, _ := be.open(t, timeout, Limits{})
		start := time.Now()
		_, err := a.Get(context.Background(), "never") // no deadline on the context
		if !errors.Is(err, collective.ErrTimeout) {
			t.Fatalf("err = %v, want a timeout", err)
		}
		if d := time.Since(start); d > time.Minute {
			t.Fatalf("timed out after %v, want about %v", d, timeout)
		}
		var te *collective.TimeoutError
		if !errors.As(err, &te) || te.After < timeout/2 {
			t.Fatalf("err = %#v, want a *collective.TimeoutError after about %v", err, timeout)
		}
	})
}

func TestStoreConcurrentAdds(t *testing.T) {
	const workers, adds = 6, 20
	forEachBackend(t, func(t *testing.T, be backend) {
		a, b := be.open(t, 20*time.Second, Limits{})
		ctx := context.Background()
		var mu sync.Mutex
		var seen []int64
		var wg sync.WaitGroup
		for w := range workers {
			st := a
			if w%2 == 1 {
				st = b
			}
			wg.Go(func() {
				for range adds {
					n, err := st.Add(ctx, "n", 1)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seen = append(seen, n)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(seen)
		for i, n := range seen {
			if n != int64(i+1) {
				t.Fatalf("sums %v: each of 1..%d should appear once", seen, workers*adds)
			}
		}
		if got := mustGet(t, ctx, a, "n"); string(got) != "120" {
			t.Fatalf("final = %q", got)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustGet(t *testing.T, ctx context.Context, s driver.Store, key string) []byte {
	t.Helper()
	v, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func wantErr(t *testing.T, err error, substr string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), substr) {
		t.Fatalf("err = %v, want it to contain %q", err, substr)
	}
}
