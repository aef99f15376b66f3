package costmodel

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/collective/driver"
	_ "github.com/distbench/distbench/strategies/ps"
)

// psHeaders names ps's request headers, which a recording prints as the
// float32s their bytes happen to make, "hdr", as lockstep prints them.
var psHeaders = regexp.MustCompile(`x\?\[[^\]]*\]`)

// recordPS runs ps's allreduce (max) of count float32s on n workers over
// the recording transport, with its dedicated servers as the mesh's ranks
// n..n+k−1 when the options say so, and returns the messages sent.
func recordPS(t *testing.T, opts map[string]string, n, k, count int, dedicated bool) string {
	var out string
	synctest.Test(t, func(t *testing.T) {
		size := n
		if dedicated {
			size += k
		}
		w := collectivetest.NewScheduleWorld(size)
		var servers sync.WaitGroup
		if dedicated {
			st, err := collective.Lookup("ps")
			if err != nil {
				t.Fatal(err)
			}
			for i := range k {
				servers.Go(func() {
					cfg := driver.ServerConfig{Index: i, Count: k, Workers: n, Transport: w.Transport(n + i), Options: opts}
					if err := st.(driver.Servers).Serve(t.Context(), cfg); err != nil {
						t.Errorf("server %d: %v", i, err)
					}
				})
			}
		}
		comms := make([]collective.Comm, n)
		tensors := make([]collective.Tensor, n)
		for r := range n {
			c, err := collective.New(t.Context(), "ps", collective.Config{Rank: r, Size: n, Transport: w.Transport(r), Options: opts})
			if err != nil {
				t.Fatal(err)
			}
			comms[r] = c
			tensors[r] = collective.NewTensor(collective.Float32, count)
			for i := range tensors[r].Float32s() {
				tensors[r].Float32s()[i] = float32(i + 1)
			}
		}
		w.Run(t, comms, func(r int, c collective.Comm) error {
			return c.AllReduce(t.Context(), tensors[r], collective.Max)
		})
		servers.Wait()
		out = psHeaders.ReplaceAllString(w.Format(), fmt.Sprintf("%-8s", "hdr")) // as wide as Format pads a range
	})
	return out
}

// TestPSScheduleMatchesStrategy is TestScheduleMatchesStrategies for the
// parameter server: colocated and dedicated servers, all or fewer than the
// workers, tensors on one server or several, one chunk per shard or
// several, message for message. ps rotates the shards' placement by its
// group's hash and the collective's sequence number, which the model does
// not track: one of the k rotations must give the recording exactly.
func TestPSScheduleMatchesStrategy(t *testing.T) {
	for _, dedicated := range []bool{false, true} {
		for _, n := range []int{2, 3, 4, 5, 7, 8} {
			for _, k := range []int{0, 2} {
				if k > n || k == 0 && dedicated && n > 5 {
					continue // k = n dedicated servers at np 7, 8: the same rules, more lines
				}
				for _, count := range []int{1, 13, 101, 600} {
					for _, sz := range [][2]int{{64, 64}, {96, 256}, {1 << 20, 256 << 10}} { // chunk, partition
						opts := map[string]string{"chunk": strconv.Itoa(sz[0]) + "B", "partition": strconv.Itoa(sz[1]) + "B"}
						kk := k
						if kk == 0 {
							kk = n
						} else {
							opts["servers"] = strconv.Itoa(k)
						}
						if dedicated {
							opts["placement"] = "dedicated"
						}
						name := fmt.Sprintf("dedicated=%v-np%d-k%d-%d-chunk%d-part%d", dedicated, n, kk, count, sz[0], sz[1])
						t.Run(name, func(t *testing.T) {
							want := recordPS(t, opts, n, kk, count, dedicated)
							var got string
							for rot := range kk {
								got = lockstep(PSAllReduceWith(n, int64(4*count), 4, PSOptions{
									Servers: kk, Dedicated: dedicated, Chunk: sz[0], Partition: sz[1], Rotate: rot}), 4)
								if got == want {
									return
								}
							}
							t.Errorf("no rotation of the generated schedule is the strategy's\n--- strategy\n%s--- model (rotation k−1)\n%s", want, got)
						})
					}
				}
			}
		}
	}
}

// replyFrom maps the first element of every reply a recording of ps shows
// (channel 2, a server's answer to a pull) to the server that sent it.
var replyLine = regexp.MustCompile(`(?m)^\s+(\d+) -> \d+\s+ch2\s+x\[(\d+):`)

func replyFrom(rec string) map[int64]int {
	out := map[int64]int{}
	for _, m := range replyLine.FindAllStringSubmatch(rec, -1) {
		s, _ := strconv.Atoi(m[1])
		lo, _ := strconv.ParseInt(m[2], 10, 64)
		out[lo] = s
	}
	return out
}

// TestPSLocalAggScheduleMatchesStrategy checks PSLocalAgg against ps's
// allreduce with local_agg=1 over the recording transport with hosts
// (colocated servers: all the world's ranks, or two), message for message,
// step for step. Each part crossing hosts is a round of a group of its
// own, whose hash rotates its shards' placement: the test reads each
// part's rotation off the recording (the server of its first element's
// reply) rather than recomputing ps's hash.
func TestPSLocalAggScheduleMatchesStrategy(t *testing.T) {
	for _, hosts := range [][]int{{2, 2}, {3, 1}, {1, 3}, {2, 2, 2}, {4, 4}, {3, 2}, {2, 1, 2}} {
		n, _ := hostsSize(hosts)
		for _, k := range []int{0, 2} {
			for _, count := range []int{8, 13, 101, 600} {
				for _, sz := range [][2]int{{64, 64}, {96, 256}, {1 << 20, 256 << 10}} { // chunk, partition
					opts := map[string]string{"local_agg": "1", "chunk": strconv.Itoa(sz[0]) + "B", "partition": strconv.Itoa(sz[1]) + "B"}
					kk := n
					if k > 0 {
						kk = k
						opts["servers"] = strconv.Itoa(k)
					}
					name := fmt.Sprintf("%v-k%d-%d-chunk%d-part%d", hosts, kk, count, sz[0], sz[1])
					t.Run(name, func(t *testing.T) {
						want := psHeaders.ReplaceAllString(recordHosts(t, "ps", opts, hosts, count), fmt.Sprintf("%-8s", "hdr"))
						from := replyFrom(want)
						got := lockstep(PSLocalAgg(hosts, int64(4*count), 4, PSOptions{Servers: kk, Chunk: sz[0], Partition: sz[1],
							PartRotate: func(_ int, off int64) int { return from[off/4] }}), 4)
						if got != want {
							t.Errorf("generated schedule differs from the strategy's\n--- strategy\n%s--- model\n%s", want, got)
						}
					})
				}
			}
		}
	}
}

// From 8 MiB core's hierarchy pipelines: slices, two lanes crossing hosts
// at once. ps's rounds of both lanes go on its own request stream to a
// server (the recording's channels 1 and 2), where the order of their
// messages is the goroutines' (the real code's) and not the schedule's;
// the generator gives lane 1 channels of its own (9, 10), so that the
// simulator lets the lanes interleave as the code does. So the check here
// is the same messages (source, destination, channel, elements, bytes),
// not the same steps.
func TestPSLocalAggPipelinedMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("8 and 13 MiB recordings")
	}
	lane := strings.NewReplacer("ch9 ", "ch1 ", "ch10 ", "ch2 ")
	messages := func(rec string) []string {
		var out []string
		for _, l := range strings.Split(rec, "\n") {
			if strings.HasPrefix(l, "  ") {
				out = append(out, strings.Join(strings.Fields(lane.Replace(l)), " "))
			}
		}
		slices.Sort(out)
		return out
	}
	for _, hosts := range [][]int{{2, 2}, {3, 1}, {2, 2, 2}} {
		for _, mib := range []int{8, 13} {
			t.Run(fmt.Sprintf("%v-%dMiB", hosts, mib), func(t *testing.T) {
				count := mib << 18
				want := psHeaders.ReplaceAllString(recordHosts(t, "ps", map[string]string{"local_agg": "1"}, hosts, count), fmt.Sprintf("%-8s", "hdr"))
				from := replyFrom(want)
				got := lockstep(PSLocalAgg(hosts, int64(4*count), 4, PSOptions{PartRotate: func(_ int, off int64) int { return from[off/4] }}), 4)
				w, g := messages(want), messages(got)
				if len(w) == 0 || !slices.Equal(w, g) {
					t.Errorf("generated messages differ from the strategy's: %d against %d", len(g), len(w))
				}
			})
		}
	}
}
