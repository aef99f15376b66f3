package ps

import "testing"

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
		for range 2 * accPoolPerSize {
			bufs = append(bufs, p.get(64))
		}
		for _, b := range bufs {
			p.put(b)
		}
		if got := p.pooled(); got != accPoolPerSize*64 {
			t.Fatalf("pooled %d bytes, want %d (%d per size)", got, accPoolPerSize*64, accPoolPerSize)
		}
	})
}
