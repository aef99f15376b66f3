package doctor

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	tokenA = "00112233445566778899aabbccddeeff"
	tokenB = "ffeeddccbbaa99887766554433221100"
)

// freePort is a loopback port nobody listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return p
}

// plenty is a machine with room for anything.
func plenty(o *Options) {
	o.Statfs = func(string) (uint64, error) { return 64 << 30, nil }
	o.Limits = func() (uint64, uint64, error) { return 1 << 20, 1 << 20, nil }
	o.LookPath = func(string) (string, error) { return "", nil }
}

// job runs doctor on the given ranks of a job of size, each with its own
// environment (torchrun's variables plus env[rank]), over real TCP on
// loopback, and returns each rank's report.
func job(t *testing.T, size int, ranks []int, timeout time.Duration, env func(rank int) map[string]string, tweak func(rank int, o *Options)) map[int]*Report {
	t.Helper()
	var mu sync.Mutex
	out := map[int]*Report{}
	var wg sync.WaitGroup
	for _, r := range ranks {
		vars := map[string]string{"RANK": strconv.Itoa(r), "WORLD_SIZE": strconv.Itoa(size)}
		for k, v := range env(r) {
			vars[k] = v
		}
		o := Options{Getenv: func(k string) string { return vars[k] }, Timeout: timeout}
		plenty(&o)
		if tweak != nil {
			tweak(r, &o)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep := Run(context.Background(), o)
			mu.Lock()
			out[r] = rep
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func wantProblem(t *testing.T, rep *Report, want string) {
	t.Helper()
	for _, p := range rep.Problems {
		if strings.Contains(p, want) {
			if strings.Contains(p, "\n") {
				t.Errorf("problem %q is not one line", p)
			}
			return
		}
	}
	t.Errorf("rank %d: no problem saying %q in %q", rep.Rank, want, rep.Problems)
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	loop := func(port string, token func(r int) string) func(int) map[string]string {
		return func(r int) map[string]string {
			return map[string]string{"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "DISTBENCH_TOKEN": token(r)}
		}
	}
	same := func(int) string { return tokenA }

	t.Run("a job that would start", func(t *testing.T) {
		t.Parallel()
		reps := job(t, 3, []int{0, 1, 2}, time.Minute, loop(freePort(t), same), nil)
		for r, rep := range reps {
			if len(rep.Problems) > 0 {
				t.Errorf("rank %d: %q", r, rep.Problems)
			}
		}
	})

	t.Run("ranks with different secrets", func(t *testing.T) {
		t.Parallel()
		reps := job(t, 3, []int{0, 1, 2}, time.Minute, loop(freePort(t), func(r int) string {
			if r == 2 {
				return tokenB
			}
			return tokenA
		}), nil)
		wantProblem(t, reps[0], "rank 2's DISTBENCH_TOKEN differs from rank 0's")
		for _, p := range reps[0].Problems {
			if strings.Contains(p, "rank 1") {
				t.Errorf("rank 1, whose secret is rank 0's, is blamed: %s", p)
			}
			if strings.Contains(p, tokenA) || strings.Contains(p, tokenB) {
				t.Errorf("a problem quotes a secret: %s", p)
			}
		}
		wantProblem(t, reps[2], "rank 0 found 1 problem(s)")
	})

	t.Run("no secret", func(t *testing.T) {
		t.Parallel()
		reps := job(t, 2, []int{0, 1}, time.Minute, loop(freePort(t), func(r int) string {
			if r == 1 {
				return ""
			}
			return tokenA
		}), nil)
		wantProblem(t, reps[0], "rank 1: no job secret: DISTBENCH_TOKEN is not set")
	})

	t.Run("a port nobody listens on", func(t *testing.T) {
		t.Parallel()
		// Rank 1 alone: rank 0 is not there. The wait is the timeout,
		// whatever the machine's speed: the port refuses until then.
		reps := job(t, 2, []int{1}, time.Second, loop(freePort(t), same), nil)
		wantProblem(t, reps[1], "within 1s (nobody listens there; last: ")
		wantProblem(t, reps[1], "is rank 0 running, on the host MASTER_ADDR names, with the same MASTER_PORT?")
	})

	t.Run("a rank that never comes", func(t *testing.T) {
		t.Parallel()
		// Long enough for rank 1 to arrive on a busy machine: only rank 2
		// may be missing.
		reps := job(t, 3, []int{0, 1}, 5*time.Second, loop(freePort(t), same), nil)
		wantProblem(t, reps[0], "rank 2 never reached rank 0 at 127.0.0.1:")
	})

	t.Run("MASTER_ADDR that does not resolve", func(t *testing.T) {
		t.Parallel()
		port := freePort(t)
		reps := job(t, 2, []int{0, 1}, time.Second, func(int) map[string]string {
			return map[string]string{"MASTER_ADDR": "no-such-host.invalid", "MASTER_PORT": port, "DISTBENCH_TOKEN": tokenA}
		}, nil)
		wantProblem(t, reps[0], "MASTER_ADDR=no-such-host.invalid does not resolve")
		wantProblem(t, reps[1], "MASTER_ADDR=no-such-host.invalid does not resolve here")
	})

	t.Run("MASTER_ADDR of another host", func(t *testing.T) {
		t.Parallel()
		// 192.0.2.1 is TEST-NET-1: never an address of this host.
		reps := job(t, 2, []int{0}, time.Second, func(int) map[string]string {
			return map[string]string{"MASTER_ADDR": "192.0.2.1", "MASTER_PORT": "29500", "DISTBENCH_TOKEN": tokenA}
		}, nil)
		wantProblem(t, reps[0], "MASTER_ADDR=192.0.2.1 is not an address of this host, rank 0's")
	})

	t.Run("MASTER_ADDR unset", func(t *testing.T) {
		t.Parallel()
		reps := job(t, 2, []int{1}, time.Second, func(int) map[string]string {
			return map[string]string{"DISTBENCH_TOKEN": tokenA}
		}, nil)
		wantProblem(t, reps[1], "MASTER_ADDR: not set")
	})

	t.Run("a full /dev/shm", func(t *testing.T) {
		t.Parallel()
		reps := job(t, 2, []int{0, 1}, time.Minute, loop(freePort(t), same), func(r int, o *Options) {
			if r == 1 {
				o.LocalRanks = 4
				o.Statfs = func(path string) (uint64, error) {
					if path != "/dev/shm" {
						t.Errorf("statfs(%q)", path)
					}
					return 1 << 20, nil
				}
			}
		})
		wantProblem(t, reps[0], "rank 1: /dev/shm has 1.0 MiB free, less than the 76.0 MiB that 4 ranks on this host need")
	})

	t.Run("limits", func(t *testing.T) {
		t.Parallel()
		reps := job(t, 2, []int{0, 1}, time.Minute, loop(freePort(t), same), func(r int, o *Options) {
			if r == 0 {
				o.Limits = func() (uint64, uint64, error) { return 16, 4, nil }
			}
		})
		wantProblem(t, reps[0], "open-file limit 16 is below the 66 a rank of 2 needs")
		wantProblem(t, reps[0], "process limit 4 is below the 17")
	})

	t.Run("a stranger's idle connection delays nobody", func(t *testing.T) {
		t.Parallel()
		port := freePort(t)
		go func() {
			// Connects as soon as rank 0 listens, and says nothing.
			for range 2000 {
				if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
					defer c.Close()
					time.Sleep(time.Minute)
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		reps := job(t, 2, []int{0, 1}, time.Minute, loop(port, same), nil)
		for r, rep := range reps {
			if len(rep.Problems) > 0 {
				t.Errorf("rank %d: %q", r, rep.Problems)
			}
		}
	})

	t.Run("GPU libraries, when asked", func(t *testing.T) {
		t.Parallel()
		o := Options{Getenv: func(string) string { return "" }}
		plenty(&o)
		o.GPU = func() []string { return []string{"libcudart.so: not found"} }
		rep := Run(context.Background(), o)
		wantProblem(t, rep, "libcudart.so: not found")
	})
}
