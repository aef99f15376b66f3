package rendezvous

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// kvStore is the server's table: a map plus, per missing key, the waiters
// that want it, so that a set wakes exactly the requests it completes
// instead of every waiting request rechecking every key.
type kvStore struct {
	mu      sync.Mutex
	data    map[string][]byte // values are never modified after being stored
	waiters map[string]map[*waiter]struct{}
}

// waiter is one Get or Wait blocked on keys that do not exist yet.
type waiter struct {
	keys      []string // the keys that were missing when it started
	remaining int
	done      chan struct{} // closed when remaining reaches 0
}

func newKV() *kvStore {
	return &kvStore{data: map[string][]byte{}, waiters: map[string]map[*waiter]struct{}{}}
}

// set stores value, which the caller must not modify afterwards.
func (k *kvStore) set(key string, value []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.data[key] = value
	k.wakeLocked(key)
}

func (k *kvStore) add(key string, delta int64) (int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	old, ok := k.data[key]
	v, sum, err := addValue(key, old, ok, delta)
	if err != nil {
		return 0, err
	}
	k.data[key] = v
	k.wakeLocked(key)
	return sum, nil
}

func (k *kvStore) get(key string) ([]byte, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.data[key]
	return v, ok
}

func (k *kvStore) wakeLocked(key string) {
	for w := range k.waiters[key] {
		w.remaining--
		if w.remaining == 0 {
			close(w.done)
		}
	}
	delete(k.waiters, key)
}

// watch returns nil if every key exists, or a waiter whose done channel is
// closed once they all do. The caller must unwatch it unless done closed.
func (k *kvStore) watch(keys ...string) *waiter {
	k.mu.Lock()
	defer k.mu.Unlock()
	var w *waiter
	for _, key := range keys {
		if _, ok := k.data[key]; ok {
			continue
		}
		if w == nil {
			w = &waiter{done: make(chan struct{})}
		}
		set := k.waiters[key]
		if set == nil {
			set = map[*waiter]struct{}{}
			k.waiters[key] = set
		}
		if _, dup := set[w]; dup { // the same key twice in one Wait
			continue
		}
		set[w] = struct{}{}
		w.keys = append(w.keys, key)
		w.remaining++
	}
	return w
}

// unwatch removes w and reports whether it had completed meanwhile, so that
// a request whose keys arrived just as it timed out still succeeds.
func (k *kvStore) unwatch(w *waiter) (completed bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if w.remaining == 0 {
		return true
	}
	for _, key := range w.keys {
		if set := k.waiters[key]; set != nil {
			delete(set, w)
			if len(set) == 0 {
				delete(k.waiters, key)
			}
		}
	}
	return false
}

// missing lists the keys of w that still do not exist.
func (k *kvStore) missing(keys []string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, key := range keys {
		if _, ok := k.data[key]; !ok {
			out = append(out, key)
		}
	}
	return out
}

// numWaiters counts waiting requests, for tests.
func (k *kvStore) numWaiters() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	seen := map[*waiter]bool{}
	for _, set := range k.waiters {
		for w := range set {
			seen[w] = true
		}
	}
	return len(seen)
}

// addValue is Add's arithmetic, shared by both backends. Counters are
// stored as decimal text, as torch's stores keep them, so that Get on a
// counter returns something readable.
func addValue(key string, old []byte, exists bool, delta int64) ([]byte, int64, error) {
	var cur int64
	if exists {
		var err error
		cur, err = strconv.ParseInt(string(old), 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("add to key %q: it holds %s, not an integer", key, quoteShort(old))
		}
	}
	sum := cur + delta
	if (delta > 0 && sum < cur) || (delta < 0 && sum > cur) {
		return nil, 0, fmt.Errorf("add %d to key %q: overflows its value %d", delta, key, cur)
	}
	return strconv.AppendInt(nil, sum, 10), sum, nil
}

func quoteShort(b []byte) string {
	if len(b) > 32 {
		return strconv.Quote(string(b[:32])) + "…"
	}
	return strconv.Quote(string(b))
}

// describeKeys renders keys for a message: `key "a"` or `keys "a", "b"`,
// cut after a few.
func describeKeys(keys []string) string {
	const show = 8
	var b strings.Builder
	if len(keys) == 1 {
		b.WriteString("key ")
	} else {
		b.WriteString("keys ")
	}
	for i, k := range keys {
		if i == show {
			fmt.Fprintf(&b, " and %d more", len(keys)-show)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if len(k) > 64 {
			b.WriteString(strconv.Quote(k[:64]) + "…")
		} else {
			b.WriteString(strconv.Quote(k))
		}
	}
	return b.String()
}
