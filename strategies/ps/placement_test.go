package ps

import (
	"testing"
)

func TestLayout(t *testing.T) {
	for _, tc := range []struct{ count, es, k, partition int }{
		{1, 4, 3, 1}, {2, 4, 3, 1}, {3, 4, 3, 1}, {1009, 2, 4, 64}, {1 << 20, 4, 2, 256 << 10},
		{1000, 8, 7, 1}, {100, 1, 8, 1 << 20}, {16 << 20, 4, 5, 256 << 10},
	} {
		for rotate := range tc.k + 1 {
			shards := layout(tc.count, tc.es, tc.k, rotate, tc.partition)
			bytes := tc.count * tc.es
			want := min(tc.k, tc.count, max(1, (bytes+tc.partition-1)/tc.partition))
			if len(shards) != want {
				t.Fatalf("%+v: %d shards, want %d", tc, len(shards), want)
			}
			seen := map[int]bool{}
			next, lo, hi := 0, bytes, 0
			for i, s := range shards {
				if s.lo != next || s.len() <= 0 || s.lo%tc.es != 0 {
					t.Fatalf("%+v: shard %d is [%d, %d), want a non-empty, element-aligned start at %d", tc, i, s.lo, s.hi, next)
				}
				next = s.hi
				if seen[s.server] || s.server != (rotate+i)%tc.k {
					t.Fatalf("%+v rotate %d: shard %d on server %d", tc, rotate, i, s.server)
				}
				seen[s.server] = true
				lo, hi = min(lo, s.len()), max(hi, s.len())
			}
			if next != bytes {
				t.Fatalf("%+v: shards end at %d of %d", tc, next, bytes)
			}
			if hi-lo > tc.es {
				t.Fatalf("%+v: unbalanced: shards of %d to %d bytes", tc, lo, hi)
			}
		}
	}
	if layout(0, 4, 3, 1, 1) != nil {
		t.Error("an empty tensor has pieces")
	}
}

func TestLayoutBalancesSmallTensorsOverRounds(t *testing.T) {
	// Tensors below the partition size land on one server each; rotating
	// by round spreads them evenly.
	const k = 4
	load := make([]int, k)
	for seq := range 400 {
		for _, s := range layout(100, 4, k, seq%k, 256<<10) {
			load[s.server] += s.len()
		}
	}
	for i := range load {
		if load[i] != load[0] {
			t.Fatalf("bytes per server %v, want equal", load)
		}
	}
}

func TestCut(t *testing.T) {
	sh := shard{server: 1, lo: 100, hi: 400}
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i)
	}
	regions := []region{{off: 0, data: data[:150]}, {off: 250, data: data[250:380]}}
	pieces := cut(regions, sh, 64)
	// Expected: [100,150) then [250,292)... in shard coordinates [0,50), [150,192), [192,256), [256,280).
	want := [][2]int{{0, 50}, {150, 192}, {192, 256}, {256, 280}}
	if len(pieces) != len(want) {
		t.Fatalf("pieces %v", pieces)
	}
	for i, p := range pieces {
		if p.offset != want[i][0] || p.offset+len(p.data) != want[i][1] || p.data[0] != byte(sh.lo+p.offset) {
			t.Errorf("piece %d: [%d, %d) starting with %d, want [%d, %d)", i, p.offset, p.offset+len(p.data), p.data[0], want[i][0], want[i][1])
		}
	}
	if off, d, ok := within(region{off: 350, data: data[350:500]}, sh); !ok || off != 250 || len(d) != 50 || d[0] != data[350] {
		t.Errorf("within: %d, %d bytes, %v", off, len(d), ok)
	}
	if _, _, ok := within(region{off: 400, data: data[400:500]}, sh); ok {
		t.Error("within: a region after the shard meets it")
	}
}
