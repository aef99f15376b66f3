package transport

import (
	"testing"
	"time"
)

// TestEchoIntoSentRegion is a ring's step at np 2: a rank sends a region,
// the peer answers with it, and the answer lands, through a receive posted
// before the send, in the region that was sent. The answer is caused by the
// send, so the region is never written while it is sent; under -race this
// test fails if the transport lets the race detector record the send's
// reads after the answer's writes (a sender descheduled between writev and
// its annotations), as a whole-suite run under load once showed.
func TestEchoIntoSentRegion(t *testing.T) {
	for _, spin := range []time.Duration{0, time.Millisecond} {
		t.Run("spin="+spin.String(), func(t *testing.T) {
			m := newMesh(t, 2, func(rank int, o *TCPOptions) { o.Spin = spin })
			a, b := m.ts[0], m.ts[1]
			ctx := ctxFor(t, time.Minute)
			const rounds = 300
			done := make(chan error, 1)
			go func() { // the peer: echo every message
				tmp := make([]byte, 64<<10)
				for i := range rounds {
					n := 64 + i*200%len(tmp)
					if err := b.Recv(ctx, 0, 7, tmp[:n]); err != nil {
						done <- err
						return
					}
					if err := b.Send(ctx, 0, 7, tmp[:n]); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			for i := range rounds {
				n := 64 + i*200%(64<<10)
				buf := pattern(n, uint64(i))
				want := string(buf)
				p, err := a.PostRecv(1, 7, buf)
				if err != nil {
					t.Fatal(err)
				}
				if err := a.Send(ctx, 1, 7, buf); err != nil {
					t.Fatal(err)
				}
				if err := p.Wait(ctx); err != nil {
					t.Fatal(err)
				}
				if string(buf) != want {
					t.Fatalf("round %d: the echo differs from what was sent", i)
				}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}
