package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
)

func ident(i int) string { return fmt.Sprintf("host-%c/pid %d", 'a'+i, 10+i) }

type joinResult struct {
	s    *Session
	err  error
	took time.Duration
}

// joinAll joins every Options concurrently, the first one (rank 0, which
// hosts tcp:// stores) last, so that the others must retry their dials.
// The sessions are closed together when the test ends.
func joinAll(t *testing.T, opts []Options) []joinResult {
	t.Helper()
	res := make([]joinResult, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Go(func() {
			if i == 0 {
				time.Sleep(150 * time.Millisecond)
			}
			start := time.Now()
			s, err := Join(context.Background(), o)
			res[i] = joinResult{s, err, time.Since(start)}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, r := range res {
			if r.s != nil {
				wg.Go(func() { r.s.Close() })
			}
		}
		wg.Wait()
	})
	return res
}

// world makes Options for ranks of one job; base carries URL, Timeout and
// the like.
func world(base Options, ranks, sizes []int) []Options {
	opts := make([]Options, len(ranks))
	for i := range ranks {
		o := base
		o.Rank, o.Size, o.Identity = ranks[i], sizes[i], ident(i)
		opts[i] = o
	}
	return opts
}

func sameSize(n, size int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = size
	}
	return s
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// launcherStore hosts a store as a launcher would.
func launcherStore(t *testing.T, jobID string) string {
	srv, err := Listen("127.0.0.1:0", ServerOptions{JobID: jobID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.Addr()
}

func TestJoinFiveRanks(t *testing.T) {
	const n = 5
	tests := []struct {
		name string
		// opts returns the ranks' options and whether LocalRank comes from
		// the environment (as rank%2) rather than from host names.
		opts func(t *testing.T) ([]Options, bool)
	}{
		{"tcp, rank 0 hosts", func(t *testing.T) ([]Options, bool) {
			return world(Options{URL: "tcp://" + freePort(t), JobID: "j"}, seq(n), sameSize(n, n)), false
		}},
		{"tcp, launcher hosts", func(t *testing.T) ([]Options, bool) {
			addr := launcherStore(t, "j")
			return world(Options{URL: "tcp://" + addr, JobID: "j", External: true}, seq(n), sameSize(n, n)), false
		}},
		{"tcp, launcher hosts, rank 0 finds the port taken", func(t *testing.T) ([]Options, bool) {
			addr := launcherStore(t, "j")
			return world(Options{URL: "tcp://" + addr, JobID: "j"}, seq(n), sameSize(n, n)), false
		}},
		{"file", func(t *testing.T) ([]Options, bool) {
			url := "file://" + filepath.Join(t.TempDir(), "job.store")
			return world(Options{URL: url}, seq(n), sameSize(n, n)), false
		}},
		{"env, torchrun variables", func(t *testing.T) ([]Options, bool) {
			host, port, _ := net.SplitHostPort(freePort(t))
			opts := make([]Options, n)
			for r := range n {
				env := map[string]string{
					"RANK": strconv.Itoa(r), "WORLD_SIZE": strconv.Itoa(n), "LOCAL_RANK": strconv.Itoa(r % 2),
					"MASTER_ADDR": host, "MASTER_PORT": port,
				}
				opts[r] = Options{URL: "env://", Rank: -1, Size: -1, Identity: ident(r), Getenv: envFunc(env)}
			}
			return opts, true
		}},
		{"env, slurm's host list for MASTER_ADDR", func(t *testing.T) ([]Options, bool) {
			_, port, _ := net.SplitHostPort(freePort(t))
			opts := make([]Options, n)
			for r := range n {
				env := map[string]string{
					"SLURM_PROCID": strconv.Itoa(r), "SLURM_NTASKS": strconv.Itoa(n), "SLURM_LOCALID": strconv.Itoa(r % 2),
					"SLURM_STEP_NODELIST": "localhost,node[02-05]", "SLURM_JOB_NODELIST": "other[1-9]", "MASTER_PORT": port,
				}
				opts[r] = Options{URL: "env://", Rank: -1, Size: -1, Identity: ident(r), Getenv: envFunc(env)}
			}
			return opts, true
		}},
		{"env, torch agent store (torch 2.x), slurm variables", func(t *testing.T) ([]Options, bool) {
			host, port, _ := net.SplitHostPort(newFakeTorch(t, torch2).addr())
			opts := make([]Options, n)
			for r := range n {
				env := map[string]string{
					"SLURM_PROCID": strconv.Itoa(r), "SLURM_NTASKS": strconv.Itoa(n), "SLURM_LOCALID": strconv.Itoa(r % 2),
					"MASTER_ADDR": host, "MASTER_PORT": port, "TORCHELASTIC_USE_AGENT_STORE": "True",
				}
				opts[r] = Options{URL: "env://", Rank: -1, Size: -1, Identity: ident(r), Getenv: envFunc(env)}
			}
			return opts, true
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts, envLocal := tt.opts(t)
			for i := range opts {
				opts[i].Timeout = 20 * time.Second
			}
			res := joinAll(t, opts)
			ctx := context.Background()
			for i, r := range res {
				if r.err != nil {
					t.Fatalf("rank %d: %v", i, r.err)
				}
				wantLocal := i // one host: local rank is the rank
				if envLocal {
					wantLocal = i % 2
				}
				if r.s.Rank() != i || r.s.Size() != n || r.s.LocalRank() != wantLocal || r.s.Identity() != ident(i) {
					t.Fatalf("session %d: rank %d size %d local %d identity %q", i, r.s.Rank(), r.s.Size(), r.s.LocalRank(), r.s.Identity())
				}
				must(t, r.s.Store().Set(ctx, fmt.Sprintf("addr/%d", i), []byte(ident(i))))
			}
			// Every rank reads every other's key through its own connection.
			var wg sync.WaitGroup
			for i, r := range res {
				wg.Go(func() {
					for j := range n {
						v, err := r.s.Store().Get(ctx, fmt.Sprintf("addr/%d", j))
						if err != nil || string(v) != ident(j) {
							t.Errorf("rank %d reading rank %d: %q, %v", i, j, v, err)
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

// failureBackends are the URLs the failure tests run against.
var failureBackends = []struct {
	name string
	url  func(t *testing.T) string
}{
	{"tcp", func(t *testing.T) string { return "tcp://" + freePort(t) }},
	{"file", func(t *testing.T) string { return "file://" + filepath.Join(t.TempDir(), "job.store") }},
}

func TestJoinRefusesDuplicateRankAtOnce(t *testing.T) {
	for _, be := range failureBackends {
		for _, dup := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s/rank %d", be.name, dup), func(t *testing.T) {
				t.Parallel()
				// Rank 3 never comes, so the world cannot complete before the
				// duplicate is seen, whatever order the goroutines run in.
				ranks := []int{0, 1, 2, dup}
				res := joinAll(t, world(Options{URL: be.url(t), Timeout: 20 * time.Second}, ranks, sameSize(4, 4)))
				parties := []string{ident(dup), ident(3)}
				for i, r := range res {
					if r.err == nil {
						t.Fatalf("rank %d joined", ranks[i])
					}
					var de *DuplicateRankError
					if !errors.As(r.err, &de) || !errors.Is(r.err, collective.ErrInvalid) {
						t.Fatalf("rank %d: err = %v, want a *DuplicateRankError", ranks[i], r.err)
					}
					got := []string{de.First, de.Second}
					slices.Sort(got)
					if de.Rank != dup || !slices.Equal(got, parties) {
						t.Fatalf("rank %d: %v names the wrong parties; want %v", ranks[i], r.err, parties)
					}
					wantErr(t, r.err, fmt.Sprintf("rank %d claimed by ", dup))
					if r.took > 5*time.Second {
						t.Fatalf("rank %d failed after %v, not at once", ranks[i], r.took)
					}
				}
			})
		}
	}
}

func TestJoinRefusesWrongSizeAtOnce(t *testing.T) {
	for _, be := range failureBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			// Rank 2 says the world has 4 ranks; 0 and 1 say 3.
			res := joinAll(t, world(Options{URL: be.url(t), Timeout: 20 * time.Second}, []int{0, 1, 2}, []int{3, 3, 4}))
			for i, r := range res {
				var se *SizeMismatchError
				if !errors.As(r.err, &se) || !errors.Is(r.err, collective.ErrMismatch) {
					t.Fatalf("rank %d: err = %v, want a *SizeMismatchError", i, r.err)
				}
				sizes := []int{se.FirstSize, se.SecondSize}
				slices.Sort(sizes)
				if !slices.Equal(sizes, []int{3, 4}) {
					t.Fatalf("rank %d: %v", i, r.err)
				}
				// Whoever came first, the rank with size 4 is named.
				wantErr(t, r.err, "(rank 2, "+ident(2)+")")
				if r.took > 5*time.Second {
					t.Fatalf("rank %d failed after %v, not at once", i, r.took)
				}
			}
		})
	}
}

func TestJoinListsMissingRanks(t *testing.T) {
	for _, be := range failureBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			present := []int{0, 1, 2, 4}
			// Long enough that the present ranks, however busy the
			// machine, register before it: only 3 and 5 may be missing.
			res := joinAll(t, world(Options{URL: be.url(t), Timeout: 10 * time.Second}, present, sameSize(4, 6)))
			for i, r := range res {
				var me *MissingRanksError
				if !errors.As(r.err, &me) || !errors.Is(r.err, collective.ErrTimeout) {
					t.Fatalf("rank %d: err = %v, want a *MissingRanksError", present[i], r.err)
				}
				if !slices.Equal(me.Missing, []int{3, 5}) {
					t.Fatalf("rank %d: missing %v, want [3 5]", present[i], me.Missing)
				}
				wantErr(t, r.err, "ranks 3, 5 never arrived after 10s (4 of 6 registered)")
				wantErr(t, r.err, fmt.Sprintf("rank %d of 6 (%s)", present[i], ident(i)))
				if r.took > time.Minute {
					t.Fatalf("rank %d gave up after %v", present[i], r.took)
				}
			}
		})
	}
}

func TestJoinBadOptions(t *testing.T) {
	t.Parallel()
	occupied, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer occupied.Close()
	go func() {
		for {
			c, err := occupied.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			c.Close()
		}
	}()
	noEnv := envFunc(nil)
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"bad url", Options{URL: "tcp//x", Size: 1}, "accepted: env://"},
		{"zero size", Options{URL: "tcp://127.0.0.1:1", Size: 0}, "world size 0: must be at least 1, or -1"},
		{"rank out of range", Options{URL: "tcp://127.0.0.1:1", Rank: 3, Size: 3}, "rank 3 out of range for world size 3 (accepted: 0..2"},
		{"negative timeout", Options{URL: "tcp://127.0.0.1:1", Size: 1, Timeout: -time.Second}, "negative timeout"},
		{"rank from an empty environment", Options{URL: "tcp://127.0.0.1:1", Rank: -1, Size: 2, Getenv: noEnv}, "no rank in the environment"},
		{"env without MASTER_ADDR", Options{URL: "env://", Rank: 0, Size: 1, Getenv: envFunc(map[string]string{"MASTER_PORT": "1"})},
			"MASTER_ADDR: not set; env:// needs MASTER_ADDR and MASTER_PORT"},
		{"env without MASTER_PORT", Options{URL: "env://", Rank: 0, Size: 1, Getenv: envFunc(map[string]string{"MASTER_ADDR": "x"})},
			"MASTER_PORT: not set"},
		{"port 0 with others to find it", Options{URL: "tcp://127.0.0.1:0", Rank: 0, Size: 2}, "port 0 names no store"},
		{"port taken by something else", Options{URL: "tcp://" + occupied.Addr().String(), Rank: 0, Size: 1, Timeout: 5 * time.Second},
			"is in use, and not by this job's store: store " + occupied.Addr().String() + ": not a distbench rendezvous store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.o.Getenv == nil {
				tt.o.Getenv = noEnv
			}
			s, err := Join(context.Background(), tt.o)
			if err == nil {
				s.Close()
				t.Fatal("joined")
			}
			wantErr(t, err, tt.want)
		})
	}
}

func TestJoinAloneOnAnyPort(t *testing.T) {
	t.Parallel()
	s, err := Join(context.Background(), Options{URL: "tcp://127.0.0.1:0", Rank: 0, Size: 1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.Store().Add(context.Background(), "n", 2); err != nil || n != 2 {
		t.Fatalf("add = %d, %v", n, err)
	}
	if !strings.Contains(s.Identity(), "/pid ") {
		t.Fatalf("default identity %q, want host/pid N", s.Identity())
	}
}
