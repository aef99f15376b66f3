package transport

import (
	"fmt"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

// Every receive kind counts the payload it receives, the sender counts what
// it sent, and nothing else (headers, padding, control frames) is counted:
// over both meshes, sizes from empty to past the unexpected path's staging
// buffer, received by Recv after the message came, by a receive posted
// before it, and by a reducing receive.
func TestWireBytes(t *testing.T) {
	worlds := map[string]func(t *testing.T) []driver.Transport{
		"mem": func(t *testing.T) []driver.Transport {
			var trs []driver.Transport
			for _, m := range NewMemWorld(3, MemOptions{MaxDelay: 20_000, Seed: 3}) {
				trs = append(trs, m)
			}
			return trs
		},
		"tcp": func(t *testing.T) []driver.Transport {
			var trs []driver.Transport
			for _, tr := range newMesh(t, 3, nil).ts {
				trs = append(trs, tr)
			}
			return trs
		},
	}
	xor := driver.Reduction{Elem: 1, Into: func(dst, src []byte) {
		for i := range dst {
			dst[i] ^= src[i]
		}
	}}
	sizes := []int{0, 1, 1000, claimChunk + 3, stagingSize + 5}
	kinds := []string{"recv after send", "posted", "posted reduce"}
	for name, world := range worlds {
		t.Run(name, func(t *testing.T) {
			trs := world(t)
			ctx := ctxFor(t, time.Minute)
			var want int64
			for tag, size := range sizes {
				for k, kind := range kinds {
					tag := uint64(tag*len(kinds) + k)
					msg, buf := pattern(size, tag), make([]byte, size)
					var err error
					switch kind {
					case "recv after send":
						if err = trs[0].Send(ctx, 1, tag, msg); err == nil {
							err = trs[1].Recv(ctx, 0, tag, buf)
						}
					default:
						var p driver.Posted
						if kind == "posted" {
							p, err = trs[1].PostRecv(0, tag, buf)
						} else {
							p, err = trs[1].PostRecvReduce(0, tag, buf, xor)
						}
						if err == nil {
							err = trs[0].Send(ctx, 1, tag, msg)
						}
						if err == nil {
							err = p.Wait(ctx)
						}
					}
					if err != nil {
						t.Fatalf("%s of %d bytes: %v", kind, size, err)
					}
					want += int64(size)
				}
			}
			got := make([][2]int64, len(trs))
			for r, tr := range trs {
				w := tr.(collective.WireCounter).WireBytes()
				got[r][0], got[r][1] = w.Sent, w.Recv
			}
			if w := [][2]int64{{want, 0}, {0, want}, {0, 0}}; fmt.Sprint(got) != fmt.Sprint(w) {
				t.Errorf("(sent, recv) by rank = %v, want %v", got, w)
			}
		})
	}
}
