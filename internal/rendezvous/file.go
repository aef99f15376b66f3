package rendezvous

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

// The file store's format: a header line, then records appended one after
// another, each a u32 key length, a u32 value length (big-endian), the key
// and the value. A later record for a key replaces an earlier one. Appending
// means a reader only parses what was added since it last looked, and a
// writer that dies mid-record leaves a torn tail that the next writer cuts
// off, rather than a corrupt table.
//
// The header carries a random generation, so that a reader that cached an
// earlier file (since removed, its inode number reused) notices the change.
const (
	fileMagic     = "distbench-rendezvous-file v1 "
	fileHeaderLen = len(fileMagic) + 32 + 1 // magic, 16 random bytes in hex, "\n"
	recordHdrLen  = 8
	// closedKey counts the FileStores that have closed the file, for
	// FileOptions.Users.
	closedKey = "distbench/file-store/closed"
)

// FileOptions configure a FileStore. The zero value is usable.
type FileOptions struct {
	// Timeout bounds each operation whose context has no earlier
	// deadline; 0 means collective.DefaultTimeout.
	Timeout time.Duration
	// Limits bound keys and values; zero fields mean the defaults.
	Limits Limits
	// Users, if positive, is how many FileStores will use the file in all:
	// the one whose Close makes that many removes the file, so that the
	// next job on the same path starts clean (torch's FileStore does the
	// same with its world size). It counts closes, not stores open at once,
	// so ranks that fail early and close do not remove the file under a
	// rank that has yet to arrive and read why they failed. 0 never removes.
	Users int
}

// FileStore is a store in one file shared by processes on one host, or on
// hosts that share a filesystem whose flock works across them (local
// filesystems, NFSv4, Lustre with flock enabled). Every operation opens the
// file, takes a flock (shared to read, exclusive to write) and catches up on
// records appended since it last looked. Get and Wait poll with backoff.
type FileStore struct {
	path    string
	timeout time.Duration
	lim     Limits
	users   int

	mu     sync.Mutex // one operation at a time; guards everything below
	closed bool
	cache  map[string][]byte // values are never modified once read
	off    int64             // how much of the file cache reflects
	gen    string            // the generation of the file cache reflects
	fi     os.FileInfo       // the file cache reflects
	// openGen is the generation of the file at open; if the file was
	// removed and made anew since, its count of closes is not ours to change.
	openGen string
}

var _ driver.Store = (*FileStore)(nil)

// OpenFile opens the store in the file at path, creating it if needed. The
// directory must exist.
func OpenFile(ctx context.Context, path string, o FileOptions) (*FileStore, error) {
	s := &FileStore{path: path, timeout: o.Timeout, lim: o.Limits.withDefaults(), users: o.Users, cache: map[string][]byte{}}
	if s.timeout <= 0 {
		s.timeout = collective.DefaultTimeout
	}
	if !supportsFlock {
		return nil, fmt.Errorf("rendezvous: file store %s: needs flock, which this platform lacks", path)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	// Write the header now, if the file is new, so that its generation is
	// known and Close can tell whether the file is still the one opened.
	err := s.locked(ctx, true, func(f *os.File) error {
		if err := s.ensureHeader(f); err != nil {
			return err
		}
		s.openGen = s.gen
		return nil
	})
	if err != nil {
		return nil, s.fail("open", "", err)
	}
	return s, nil
}

// Path is the store's file.
func (s *FileStore) Path() string { return s.path }

// Close closes the store. With FileOptions.Users set, the close that
// makes that many removes the file.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	var err error
	if s.users > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		err = s.locked(ctx, true, func(f *os.File) error {
			if s.gen != s.openGen {
				return nil // the file we opened is gone; this one belongs to others
			}
			old, ok := s.cache[closedKey]
			v, n, err := addValue(closedKey, old, ok, 1)
			if err != nil {
				return err
			}
			if n >= int64(s.users) {
				// While we hold the lock: whoever opened the file meanwhile
				// finds it unlinked once they get the lock, and opens a new one.
				return os.Remove(s.path)
			}
			return s.append(f, closedKey, v)
		})
	}
	s.closed = true
	s.cache = nil
	return s.fail("close", "", err)
}

func (s *FileStore) fail(op, key string, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case op == "open" || op == "close":
		return fmt.Errorf("rendezvous: %s file store %s: %w", op, s.path, err)
	case key == "":
		return fmt.Errorf("rendezvous: %s at file store %s: %w", op, s.path, err)
	}
	return fmt.Errorf("rendezvous: %s %q at file store %s: %w", op, key, s.path, err)
}

// locked runs fn with the file locked and the cache up to date. The
// caller holds s.mu.
func (s *FileStore) locked(ctx context.Context, exclusive bool, fn func(f *os.File) error) error {
	if s.closed {
		return collective.ErrClosed
	}
	start := time.Now()
	if ctx.Err() != nil {
		return ctxError(ctx, start, "the lock on "+s.path)
	}
	for {
		f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		if err := lockFile(ctx, f, exclusive, start, s.path); err != nil {
			f.Close()
			return err
		}
		fi, err1 := f.Stat()
		pi, err2 := os.Stat(s.path)
		if err1 == nil && err2 == nil && os.SameFile(fi, pi) {
			err := s.catchUp(f, fi, exclusive)
			if err == nil {
				err = fn(f)
			}
			f.Close() // drops the lock
			return err
		}
		// Its last user removed the file between our open and our lock.
		f.Close()
		if ctx.Err() != nil {
			return ctxError(ctx, start, "the file "+s.path)
		}
	}
}

func (s *FileStore) reset() {
	s.cache = map[string][]byte{}
	s.off, s.gen, s.fi = 0, "", nil
}

// catchUp reads the records appended since the cache was last brought up
// to date. Under an exclusive lock it also cuts off a torn tail.
func (s *FileStore) catchUp(f *os.File, fi os.FileInfo, exclusive bool) error {
	size := fi.Size()
	if s.fi == nil || !os.SameFile(fi, s.fi) || size < s.off {
		s.reset()
	}
	s.fi = fi
	var hdr [fileHeaderLen]byte
	n, err := f.ReadAt(hdr[:], 0)
	if err != nil && err != io.EOF {
		return err
	}
	m := min(n, len(fileMagic))
	if string(hdr[:m]) != fileMagic[:m] || (n == fileHeaderLen && hdr[n-1] != '\n') {
		return fmt.Errorf("not a distbench file store (it begins %q)", hdr[:min(n, 16)])
	}
	if n < fileHeaderLen {
		s.reset()
		s.fi = fi
		if n > 0 && exclusive { // a creator died while writing the header
			return f.Truncate(0)
		}
		return nil
	}
	if gen := string(hdr[len(fileMagic) : fileHeaderLen-1]); gen != s.gen {
		s.reset()
		s.fi, s.gen, s.off = fi, gen, int64(fileHeaderLen)
	}
	if size == s.off {
		return nil
	}
	r := bufio.NewReader(io.NewSectionReader(f, s.off, size-s.off))
	var rh [recordHdrLen]byte
	for {
		if _, err := io.ReadFull(r, rh[:]); err != nil {
			break // end of file, or a torn record header
		}
		kn, vn := binary.BigEndian.Uint32(rh[:4]), binary.BigEndian.Uint32(rh[4:])
		if kn == 0 || kn > uint32(s.lim.MaxKeySize) || uint64(vn) > uint64(s.lim.MaxValueSize) {
			return fmt.Errorf("corrupt record at offset %d: key of %d bytes, value of %d (limits %d, %d)",
				s.off, kn, vn, s.lim.MaxKeySize, s.lim.MaxValueSize)
		}
		if int64(kn)+int64(vn) > size-s.off-recordHdrLen {
			break // a torn record
		}
		kv := make([]byte, int(kn)+int(vn))
		if _, err := io.ReadFull(r, kv); err != nil {
			return err
		}
		s.cache[string(kv[:kn])] = kv[kn:]
		s.off += recordHdrLen + int64(kn) + int64(vn)
	}
	if s.off < size && exclusive {
		// A writer died mid-record; our records must follow whole ones.
		return f.Truncate(s.off)
	}
	return nil
}

// append writes one record at the end of what catchUp parsed. The caller
// holds the exclusive lock.
func (s *FileStore) append(f *os.File, key string, value []byte) error {
	if err := s.ensureHeader(f); err != nil {
		return err
	}
	var rec []byte
	rec = binary.BigEndian.AppendUint32(rec, uint32(len(key)))
	rec = binary.BigEndian.AppendUint32(rec, uint32(len(value)))
	rec = append(rec, key...)
	rec = append(rec, value...)
	if _, err := f.WriteAt(rec, s.off); err != nil {
		s.reset() // what is on disk is now unknown: read it afresh next time
		return err
	}
	s.off += int64(len(rec))
	s.cache[key] = bytes.Clone(value)
	return nil
}

// ensureHeader starts a new file with a header and a fresh generation.
// The caller holds the exclusive lock.
func (s *FileStore) ensureHeader(f *os.File) error {
	if s.off != 0 {
		return nil
	}
	var g [16]byte
	crand.Read(g[:])
	gen := hex.EncodeToString(g[:])
	hdr := fileMagic + gen + "\n"
	if _, err := f.WriteAt([]byte(hdr), 0); err != nil {
		s.reset()
		return err
	}
	s.gen, s.off = gen, int64(len(hdr))
	return nil
}

func ctxError(ctx context.Context, start time.Time, waiting string) error {
	if ctx.Err() == context.DeadlineExceeded {
		return &collective.TimeoutError{After: time.Since(start), Waiting: waiting}
	}
	return ctx.Err()
}

// sleepCtx sleeps d with jitter, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d/2 + rand.N(d/2+1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Set stores value under key, replacing any value there.
func (s *FileStore) Set(ctx context.Context, key string, value []byte) error {
	if err := s.lim.checkKey(key); err != nil {
		return invalid("set", key, err)
	}
	if err := s.lim.checkValue(len(value)); err != nil {
		return invalid("set", key, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.locked(ctx, true, func(f *os.File) error { return s.append(f, key, value) })
	return s.fail("set", key, err)
}

// Add adds delta to the integer at key (0 if absent) and returns the sum.
func (s *FileStore) Add(ctx context.Context, key string, delta int64) (int64, error) {
	if err := s.lim.checkKey(key); err != nil {
		return 0, invalid("add", key, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum int64
	err := s.locked(ctx, true, func(f *os.File) error {
		old, ok := s.cache[key]
		v, n, err := addValue(key, old, ok, delta)
		if err != nil {
			return err
		}
		sum = n
		return s.append(f, key, v)
	})
	return sum, s.fail("add", key, err)
}

// Get waits until key exists, then returns its value.
func (s *FileStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.lim.checkKey(key); err != nil {
		return nil, invalid("get", key, err)
	}
	var v []byte
	err := s.poll(ctx, []string{key}, func() bool {
		val, ok := s.cache[key]
		v = bytes.Clone(val) // the caller may modify it; the cache must not change
		if ok && v == nil {
			v = []byte{}
		}
		return ok
	})
	if err != nil {
		return nil, s.fail("get", key, err)
	}
	return v, nil
}

// Wait returns once every key exists.
func (s *FileStore) Wait(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if err := s.lim.checkKey(k); err != nil {
			return invalid("wait", k, err)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	var missing []string
	looked := false
	err := s.poll(ctx, keys, func() bool {
		looked = true
		missing = missing[:0]
		for _, k := range keys {
			if _, ok := s.cache[k]; !ok {
				missing = append(missing, k)
			}
		}
		return len(missing) == 0
	})
	var te *collective.TimeoutError
	if errors.As(err, &te) && looked && len(missing) > 0 {
		// Only those still missing; before any look at the store, poll
		// has named them all.
		te.Waiting = describeKeys(missing)
	}
	return s.fail("wait", "", err)
}

// poll checks done under a shared lock until it holds or ctx ends,
// backing off from a few milliseconds to a fifth of a second, so that a
// rank waiting minutes for a slow peer costs a few reads a second.
func (s *FileStore) poll(ctx context.Context, keys []string, done func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	backoff := 2 * time.Millisecond
	for {
		s.mu.Lock()
		ok := false
		err := s.locked(ctx, false, func(*os.File) error { ok = done(); return nil })
		s.mu.Unlock()
		if err != nil && ctx.Err() == context.DeadlineExceeded {
			// The deadline came while this waited for the lock (another
			// process holds it, or the machine is busy): still a wait for
			// these keys, whose absence is what a reader must learn.
			var te *collective.TimeoutError
			if errors.As(err, &te) {
				return &collective.TimeoutError{After: time.Since(start), Waiting: describeKeys(keys) + " (the deadline came while waiting for " + te.Waiting + ")"}
			}
		}
		if err != nil || ok {
			return err
		}
		if sleepCtx(ctx, backoff) != nil {
			return ctxError(ctx, start, describeKeys(keys))
		}
		backoff = min(backoff*3/2, 200*time.Millisecond)
	}
}
