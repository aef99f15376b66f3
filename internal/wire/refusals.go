package wire

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// RefusalLog says refused connections at a bounded rate, so that a flood
// of strangers cannot fill a job's stderr: the first refusal in a while is
// a line of its own; those that follow within Every are counted, and said
// in one line (how many, from which sources, the first reason) at the
// first refusal after Every has passed, or at Flush. At most two lines per
// Every, each of bounded length, however many connections are refused.
type RefusalLog struct {
	// Logf writes a line; Prefix starts each ("ps: server 0").
	Logf   func(format string, args ...any)
	Prefix string
	// Every is the shortest time between two lines; 0 means 10s.
	Every time.Duration
	// Now is the clock; nil means time.Now. Tests only.
	Now func() time.Time

	mu      sync.Mutex
	last    time.Time // when a line was last written
	n       int       // refusals not yet said
	sources []string  // of those, the first few distinct sources
	more    bool      // more sources than kept
	first   string    // the first unsaid reason
}

// maxSources bounds the sources a summary names.
const maxSources = 4

// Refused records a connection from source refused for err.
func (r *RefusalLog) Refused(source string, err error) {
	if r == nil || r.Logf == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	every := r.Every
	if every <= 0 {
		every = 10 * time.Second
	}
	if r.n == 0 && (r.last.IsZero() || now.Sub(r.last) >= every) {
		r.last = now
		r.Logf("%s: refused a connection from %s: %s", r.Prefix, Sanitize(source, 64), Sanitize(err.Error(), 300))
		return
	}
	r.n++
	if r.first == "" {
		r.first = Sanitize(err.Error(), 300)
	}
	host := source
	if i := strings.LastIndexByte(host, ':'); i > 0 {
		host = host[:i] // strangers' ports differ; their hosts are what helps
	}
	switch {
	case slices.Contains(r.sources, host):
	case len(r.sources) < maxSources:
		r.sources = append(r.sources, Sanitize(host, 64))
	default:
		r.more = true
	}
	if now.Sub(r.last) >= every {
		r.sayLocked(now)
	}
}

// Flush says the refusals not yet said, if any.
func (r *RefusalLog) Flush() {
	if r == nil || r.Logf == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n > 0 {
		r.sayLocked(r.now())
	}
}

func (r *RefusalLog) sayLocked(now time.Time) {
	src := strings.Join(r.sources, ", ")
	if r.more {
		src += ", …"
	}
	r.Logf("%s: refused %d more connection(s) from %s; the first: %s", r.Prefix, r.n, src, r.first)
	r.last, r.n, r.sources, r.more, r.first = now, 0, r.sources[:0], false, ""
}

func (r *RefusalLog) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
