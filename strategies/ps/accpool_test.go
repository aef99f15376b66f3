package ps

import (
	"math/rand/v2"
	"testing"
)

func TestAccPool(t *testing.T) {
	t.Run("reuses a repeated size", func(t *testing.T) {
		var p accPool
		b := p.get(1 << 20)
		p.put(b)
		if c := p.get(1 << 20); &c[0] != &b[0] {
			t.Fatal("a buffer of the size just returned was not reused")
		}
	})
	t.Run("keeps what rounds keep asking for", func(t *testing.T) {
		var p accPool
		for range 10 * accPoolIdle {
			p.put(p.get(4096))
		}
		if got := p.pooled(); got != 4096 {
			t.Fatalf("pooled %d bytes after rounds of one 4096-byte size, want 4096", got)
		}
	})
	t.Run("drops sizes nobody asks for again", func(t *testing.T) {
		// A soak's sizes: each size once. Without dropping, the pool would
		// fill to accPoolBytes.
		var p accPool
		most := 0
		for i := range 20 * accPoolIdle {
			p.put(p.get(8 * (1000 + i)))
			most = max(most, p.pooled())
		}
		if limit := 2 * accPoolIdle * 8 * (1000 + 20*accPoolIdle); most > limit {
			t.Fatalf("pool held %d bytes of one-off sizes, want at most %d (two idle windows)", most, limit)
		}
		if len(p.free) > 2*accPoolIdle {
			t.Fatalf("pool tracks %d sizes, want at most %d", len(p.free), 2*accPoolIdle)
		}
	})
	t.Run("per-size and total caps", func(t *testing.T) {
		var p accPool
		var bufs [][]byte
		for range 2 * accPoolPerClass {
			bufs = append(bufs, p.get(64))
		}
		for _, b := range bufs {
			p.put(b)
		}
		if got := p.pooled(); got != accPoolPerClass*64 {
			t.Fatalf("pooled %d bytes, want %d (%d per class)", got, accPoolPerClass*64, accPoolPerClass)
		}
	})
	t.Run("varied sizes reuse their classes", func(t *testing.T) {
		// A soak's rounds: random sizes up to 4 MiB, a few in flight. With
		// buffers kept by exact size almost every get allocated and the
		// pool filled with one-off sizes; by class, most gets reuse.
		var p accPool
		rng := rand.New(rand.NewPCG(1, 2))
		const gets = 40 * accPoolIdle
		reused, most := 0, 0
		var out [][]byte
		for i := range gets {
			n := 1 + rng.IntN(4<<20)
			before := p.pooled()
			b := p.get(n)
			if len(b) != n || cap(b) != sizeClass(n) {
				t.Fatalf("get(%d): len %d cap %d, want len %d cap %d", n, len(b), cap(b), n, sizeClass(n))
			}
			if p.pooled() < before {
				reused++
			}
			out = append(out, b)
			if i%3 == 2 { // three rounds in flight, then all return
				for _, b := range out {
					p.put(b)
				}
				out = out[:0]
			}
			most = max(most, p.pooled())
		}
		if reused < gets*9/10 {
			t.Errorf("%d of %d gets reused a pooled buffer, want at least 90%%", reused, gets)
		}
		// At most three buffers of each class are out at once, so the pool
		// holds at most three of each class up to 4 MiB: about 150 MiB.
		limit := 0
		for c := 8; c <= 4<<20; c = sizeClass(c + 1) {
			limit += 3 * c
		}
		if most > limit {
			t.Errorf("pool held up to %d bytes, want at most %d", most, limit)
		}
		t.Logf("%d of %d gets reused; pool held at most %.1f MiB", reused, gets, float64(most)/(1<<20))
	})
}

func TestSizeClass(t *testing.T) {
	tests := []struct{ n, want int }{
		{0, 0}, {1, 8}, {8, 8}, {9, 16}, {64, 64}, {65, 72}, {72, 72}, {73, 80},
		{128, 128}, {129, 144}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1<<17},
	}
	for _, tt := range tests {
		if got := sizeClass(tt.n); got != tt.want {
			t.Errorf("sizeClass(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
	for n := 1; n < 1<<16; n++ {
		c := sizeClass(n)
		if c < n || c%8 != 0 || (n > 64 && float64(c-n) > float64(n)/8) || sizeClass(c) != c {
			t.Fatalf("sizeClass(%d) = %d: want a fixed point, a multiple of 8, at most 12.5%% over", n, c)
		}
	}
}
