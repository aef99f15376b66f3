package rendezvous

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
)

func openFileT(t *testing.T, path string) *FileStore {
	t.Helper()
	return openFileUsers(t, path, 0)
}

func openFileUsers(t *testing.T, path string, users int) *FileStore {
	t.Helper()
	s, err := OpenFile(context.Background(), path, FileOptions{Timeout: 5 * time.Second, Users: users})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestFileStoreRemovedAfterUsersClose(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store")
	a := openFileUsers(t, path, 2)
	must(t, a.Set(context.Background(), "k", nil))
	must(t, a.Close())
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("file gone after one of two users closed: %v", err)
	}
	b := openFileUsers(t, path, 2) // opens after the first closed, as a late rank would
	if _, err := b.Get(context.Background(), "k"); err != nil {
		t.Fatalf("a late user lost the early one's key: %v", err)
	}
	must(t, b.Close())
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("file still there after both users closed: %v", err)
	}
	// The next job on the same path starts clean.
	c := openFileT(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Get(ctx, "k"); !errors.Is(err, collective.ErrTimeout) {
		t.Fatalf("a key from the previous job survived: err = %v", err)
	}
	must(t, c.Close())
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Users 0 removed the file: %v", err)
	}
}

func TestFileStoreNoticesReplacedFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store")
	a := openFileT(t, path)
	ctx := context.Background()
	must(t, a.Set(ctx, "k", []byte("old")))
	if string(mustGet(t, ctx, a, "k")) != "old" {
		t.Fatal("lost its own write")
	}
	must(t, os.Remove(path)) // as if every user had closed it
	b := openFileT(t, path)
	must(t, b.Set(ctx, "k", []byte("new")))
	if got := mustGet(t, ctx, a, "k"); string(got) != "new" {
		t.Fatalf("get = %q from a stale cache, want the new file's value", got)
	}
}

func TestFileStoreTornTail(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store")
	a := openFileT(t, path)
	ctx := context.Background()
	must(t, a.Set(ctx, "k", []byte("v")))
	// A writer died mid-record: a header announcing more than was written.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0, 0, 0, 1, 0, 0, 0, 9, 'x', 'y'})
	f.Close()

	b := openFileT(t, path) // a write: cuts the torn tail off
	if got := mustGet(t, ctx, b, "k"); string(got) != "v" {
		t.Fatalf("get = %q", got)
	}
	must(t, b.Set(ctx, "k2", []byte("v2")))
	if got := mustGet(t, ctx, a, "k2"); string(got) != "v2" {
		t.Fatalf("get after the torn tail = %q", got)
	}
}

func TestFileStoreRefusesForeignFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte("these are someone's notes, not a store\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenFile(context.Background(), path, FileOptions{Timeout: time.Second})
	wantErr(t, err, "not a distbench file store")
	if data, _ := os.ReadFile(path); string(data) != "these are someone's notes, not a store\n" {
		t.Fatal("the foreign file was modified")
	}

	_, err = OpenFile(context.Background(), filepath.Join(t.TempDir(), "no", "such", "dir"), FileOptions{Timeout: time.Second})
	wantErr(t, err, "no such file or directory")
}

func TestFileStoreLockTimeout(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store")
	s := openFileT(t, path)
	// Another process holds the lock and hangs.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lockCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := lockFile(lockCtx, f, true, time.Now(), path); err != nil {
		t.Fatal(err)
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel2()
	err = s.Set(ctx, "k", nil)
	if !errors.Is(err, collective.ErrTimeout) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	wantErr(t, err, "the lock on "+path)
}

// A Get or Wait whose deadline comes while another process holds the lock
// still names the keys it waited for (and the lock): the phase the
// deadline falls in is the machine's affair, what the wait was for is not.
// Under load, TestStoreSemantics/file once got "the lock on ..." alone.
func TestFileStoreDeadlineDuringLockNamesKeys(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store")
	s := openFileT(t, path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := lockFile(context.Background(), f, true, time.Now(), path); err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct {
		name string
		call func(ctx context.Context) error
		want string
	}{
		{"get", func(ctx context.Context) error { _, err := s.Get(ctx, "never"); return err }, `key "never"`},
		{"wait", func(ctx context.Context) error { return s.Wait(ctx, "absent", "gone") }, `keys "absent", "gone"`},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := op.call(ctx)
		cancel()
		if !errors.Is(err, collective.ErrTimeout) {
			t.Fatalf("%s: err = %v, want a timeout", op.name, err)
		}
		wantErr(t, err, op.want)
		wantErr(t, err, "the lock on "+path)
	}
}
