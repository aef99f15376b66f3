package transport

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/wire"
)

// A receive whose context ends while a reader is filling its buffer waits
// for the reader, and reports what the reader reports: returning early would
// let the buffer be written after Recv returned, and lose the message.
func TestMailboxRecvWaitsForClaimedFill(t *testing.T) {
	m := NewMailbox("rank 1")
	ctx, cancel := context.WithCancel(context.Background())
	buf := make([]byte, 3)
	done := make(chan error, 1)
	go func() { done <- m.Recv(ctx, 7, buf) }()
	var p *Pending
	for p == nil {
		p = m.Claim(7, 3)
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Recv returned %v while its buffer was claimed", err)
	case <-time.After(50 * time.Millisecond):
	}
	copy(p.Buf, "abc")
	p.Complete(nil)
	if err := <-done; err != nil || string(buf) != "abc" {
		t.Fatalf("Recv: %q, %v", buf, err)
	}
}

func TestMailboxOrderAndFail(t *testing.T) {
	m := NewMailbox("rank 1")
	ctx := context.Background()
	m.Deliver(1, []byte("a"))
	m.Deliver(1, []byte("b"))
	failed := errors.New("gone")
	m.Fail(failed)
	m.Fail(errors.New("second")) // the first error wins
	b := make([]byte, 1)
	for _, want := range []string{"a", "b"} {
		if err := m.Recv(ctx, 1, b); err != nil || string(b) != want {
			t.Fatalf("queued message: %q, %v; want %q", b, err, want)
		}
	}
	if err := m.Recv(ctx, 1, b); err != failed {
		t.Fatalf("after the queue: %v, want %v", err, failed)
	}
	tctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	m2 := NewMailbox("rank 2 (10.0.0.3:4123)")
	err := m2.Recv(tctx, 1, b)
	var te *collective.TimeoutError
	if !errors.As(err, &te) || te.Waiting != "a message from rank 2 (10.0.0.3:4123)" {
		t.Fatalf("timeout: %v", err)
	}
}

// A receive withdrawn by a Wait whose context ended is complete: waiting
// again (as Cancel does after a failed Wait) returns the same error at once.
func TestMailboxWaitAgainAfterWithdrawal(t *testing.T) {
	m := NewMailbox("rank 1")
	p := m.Post(7, make([]byte, 4))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	first := m.Wait(ctx, p)
	if first == nil {
		t.Fatal("Wait with an ended context succeeded")
	}
	done := make(chan error, 1)
	go func() { done <- m.Wait(context.Background(), p) }()
	select {
	case err := <-done:
		if err != first {
			t.Errorf("second Wait = %v, want the first's %v", err, first)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second Wait on a withdrawn receive hangs")
	}
	// The withdrawn receive does not take the next message.
	m.Deliver(7, []byte("next"))
	b := make([]byte, 4)
	if err := m.Recv(context.Background(), 7, b); err != nil || string(b) != "next" {
		t.Fatalf("next message: %q, %v", b, err)
	}
}

// What a mailbox says its rank is blocked on: a receive a Wait blocks on,
// posted or being filled; not one merely posted, nor one completed; and a
// receive that timed out, for good, but not one cancelled.
func TestMailboxBlockedOn(t *testing.T) {
	// waitOn starts a Wait on p and returns once it blocks, and a
	// function that ends it and returns its error.
	waitOn := func(m *Mailbox, p *Pending, ctx context.Context) func() error {
		done := make(chan error, 1)
		go func() { done <- m.Wait(ctx, p) }()
		for p.blocked.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		return func() error { return <-done }
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, m *Mailbox) (wantTag uint64, timedOut bool)
	}{
		{"nothing posted", func(t *testing.T, m *Mailbox) (uint64, bool) { return 0, false }},
		{"posted, not waited for", func(t *testing.T, m *Mailbox) (uint64, bool) {
			m.Post(7, make([]byte, 1))
			return 0, false
		}},
		{"waited for", func(t *testing.T, m *Mailbox) (uint64, bool) {
			m.Post(7, make([]byte, 1))
			p := m.Post(8, make([]byte, 1))
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			waitOn(m, p, ctx)
			return 8, false
		}},
		{"being filled", func(t *testing.T, m *Mailbox) (uint64, bool) {
			p := m.Post(7, make([]byte, 1))
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			end := waitOn(m, p, ctx)
			if m.Claim(7, 1) != p {
				t.Fatal("Claim did not return the posted receive")
			}
			t.Cleanup(func() { p.Complete(nil); m.Filled(p); end() })
			return 7, false
		}},
		{"completed", func(t *testing.T, m *Mailbox) (uint64, bool) {
			p := m.Post(7, make([]byte, 1))
			end := waitOn(m, p, context.Background())
			m.Deliver(7, []byte("x"))
			if err := end(); err != nil {
				t.Fatal(err)
			}
			return 0, false
		}},
		{"cancelled", func(t *testing.T, m *Mailbox) (uint64, bool) {
			ctx, cancel := context.WithCancel(context.Background())
			end := waitOn(m, m.Post(7, make([]byte, 1)), ctx)
			cancel()
			end()
			return 0, false
		}},
		{"timed out", func(t *testing.T, m *Mailbox) (uint64, bool) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := m.Recv(ctx, 7, make([]byte, 1)); !errors.Is(err, collective.ErrTimeout) {
				t.Fatalf("Recv: %v", err)
			}
			// A later receive that completes does not clear it: the
			// rank is failing because of the first.
			m.Deliver(9, []byte("x"))
			if err := m.Recv(context.Background(), 9, make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			return 7, true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMailbox("rank 1")
			tag, timedOut := tc.run(t, m)
			b := m.blockedOn(1)
			if tag == 0 {
				if b.kind != 0 {
					t.Fatalf("blocked on %+v, want nothing", b)
				}
				return
			}
			if b.kind != wire.WaitRecv || b.peer != 1 || b.tag != tag || b.timedOut != timedOut || b.since == 0 {
				t.Fatalf("blocked on %+v, want a receive under tag %d (timed out: %v)", b, tag, timedOut)
			}
		})
	}
}
