package core

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitDone waits for ch with a margin that holds on a loaded machine.
func waitDone(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: not done after 30s", what)
	}
}

// An operation's context behaves as context.WithTimeout's, whichever of
// Done and Err is asked first, and whatever ends it.
func TestOpCtx(t *testing.T) {
	t.Run("deadline by Err alone", func(t *testing.T) {
		ctx, cancel := newOpCtx(context.Background(), time.Millisecond)
		defer cancel()
		if d, ok := ctx.Deadline(); !ok || d.IsZero() {
			t.Fatalf("Deadline() = %v, %v; want a deadline", d, ok)
		}
		for ctx.Err() == nil { // no timer was ever armed: Err reads the clock
			time.Sleep(time.Millisecond)
		}
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err() = %v, want DeadlineExceeded", err)
		}
		waitDone(t, ctx.Done(), "Done after the deadline") // made closed
	})
	t.Run("deadline by Done", func(t *testing.T) {
		ctx, cancel := newOpCtx(context.Background(), 5*time.Millisecond)
		defer cancel()
		if ctx.Err() != nil {
			t.Fatalf("Err() = %v before the deadline", ctx.Err())
		}
		waitDone(t, ctx.Done(), "Done")
		if err := ctx.Err(); err != context.DeadlineExceeded {
			t.Errorf("Err() = %v, want DeadlineExceeded", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := newOpCtx(context.Background(), time.Hour)
		done := ctx.Done()
		cancel()
		waitDone(t, done, "Done after cancel")
		if err := ctx.Err(); err != context.Canceled {
			t.Errorf("Err() = %v, want Canceled", err)
		}
		cancel() // twice is harmless
	})
	t.Run("parent cancelled", func(t *testing.T) {
		parent, stop := context.WithCancel(context.WithValue(context.Background(), t, "v"))
		ctx, cancel := newOpCtx(parent, time.Hour)
		defer cancel()
		if ctx.Value(t) != "v" {
			t.Errorf("Value lost the parent's value")
		}
		done := ctx.Done()
		stop()
		waitDone(t, done, "Done after the parent's cancel")
		if err := ctx.Err(); err != context.Canceled {
			t.Errorf("Err() = %v, want Canceled", err)
		}
	})
	t.Run("parent cancelled, Err alone", func(t *testing.T) {
		parent, stop := context.WithCancel(context.Background())
		ctx, cancel := newOpCtx(parent, time.Hour)
		defer cancel()
		stop()
		if err := ctx.Err(); err != context.Canceled {
			t.Errorf("Err() = %v, want Canceled", err)
		}
	})
	t.Run("parent's earlier deadline", func(t *testing.T) {
		parent, stop := context.WithTimeout(context.Background(), time.Minute)
		defer stop()
		ctx, cancel := newOpCtx(parent, time.Hour)
		defer cancel()
		pd, _ := parent.Deadline()
		if d, _ := ctx.Deadline(); !d.Equal(pd) {
			t.Errorf("Deadline() = %v, want the parent's %v", d, pd)
		}
	})
	t.Run("children", func(t *testing.T) {
		ctx, cancel := newOpCtx(context.Background(), time.Hour)
		child, stopChild := context.WithCancel(ctx) // Call.Parallel's
		defer stopChild()
		ran := make(chan struct{})
		context.AfterFunc(ctx, func() { close(ran) })
		unused := context.AfterFunc(ctx, func() { t.Error("a stopped AfterFunc ran") })
		if !unused() {
			t.Error("stopping an AfterFunc before the end reported false")
		}
		cancel()
		waitDone(t, child.Done(), "the child's Done")
		waitDone(t, ran, "AfterFunc")
		if err := child.Err(); err != context.Canceled {
			t.Errorf("child's Err() = %v, want Canceled", err)
		}
	})
}
