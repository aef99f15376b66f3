package rendezvous_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/distbench/distbench/internal/rendezvous"
)

// Three ranks, goroutines here but processes in life, join through a
// file store and exchange addresses.
func Example() {
	dir, cleanup := tempDir()
	defer cleanup()
	url := "file://" + filepath.Join(dir, "job.store")
	ctx := context.Background()

	addrs := make([]string, 3)
	var wg sync.WaitGroup
	for rank := range 3 {
		wg.Go(func() {
			sess, err := rendezvous.Join(ctx, rendezvous.Options{URL: url, Rank: rank, Size: 3, Timeout: 10 * time.Second})
			if err != nil {
				fmt.Println(err)
				return
			}
			defer sess.Close()
			st := sess.Store()
			st.Set(ctx, fmt.Sprintf("addr/%d", rank), []byte(fmt.Sprintf("10.0.0.%d:7000", rank+1)))
			next, err := st.Get(ctx, fmt.Sprintf("addr/%d", (rank+1)%3)) // waits for it
			if err != nil {
				fmt.Println(err)
				return
			}
			addrs[rank] = string(next)
		})
	}
	wg.Wait()
	for rank, a := range addrs {
		fmt.Printf("rank %d sends to %s\n", rank, a)
	}
	// Output:
	// rank 0 sends to 10.0.0.2:7000
	// rank 1 sends to 10.0.0.3:7000
	// rank 2 sends to 10.0.0.1:7000
}

// A launcher hosts the store; its workers connect with External set, as
// torchrun's workers do with TORCHELASTIC_USE_AGENT_STORE=True.
func ExampleListen() {
	srv, err := rendezvous.Listen("127.0.0.1:0", rendezvous.ServerOptions{JobID: "job-7"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	sess, err := rendezvous.Join(context.Background(), rendezvous.Options{
		URL: "tcp://" + srv.Addr(), Rank: 0, Size: 1, JobID: "job-7", External: true, Timeout: 10 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()
	n, _ := sess.Store().Add(context.Background(), "epoch", 1)
	fmt.Println("rank", sess.Rank(), "of", sess.Size(), "epoch", n)
	// Output: rank 0 of 1 epoch 1
}

func ExampleFromEnv() {
	env := map[string]string{ // as mpirun sets them
		"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
	}
	info, err := rendezvous.FromEnv(func(k string) string { return env[k] })
	fmt.Println(info.Launcher, info.Rank, info.Size, info.LocalRank, err)

	_, err = rendezvous.FromEnv(func(k string) string { return map[string]string{"RANK": "5", "WORLD_SIZE": "4"}[k] })
	fmt.Println(err)
	// Output:
	// mpirun 5 8 1 <nil>
	// rendezvous: RANK="5": not a rank for WORLD_SIZE=4 (accepted: an integer in 0..3)
}

func ExampleParseURL() {
	for _, s := range []string{"tcp://[::1]:29500", "file:///shared/job.store", "tcp://node1"} {
		ep, err := rendezvous.ParseURL(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("scheme %s addr %q path %q\n", ep.Scheme, ep.Addr, ep.Path)
	}
	// Output:
	// scheme tcp addr "[::1]:29500" path ""
	// scheme file addr "" path "/shared/job.store"
	// rendezvous: URL "tcp://node1": invalid argument: tcp:// needs a host and a port (accepted: env://, tcp://HOST:PORT, file:///ABSOLUTE/PATH)
}

// tempDir stands in for t.TempDir in examples.
func tempDir() (string, func()) {
	dir, err := os.MkdirTemp("", "rendezvous-example")
	if err != nil {
		panic(err)
	}
	return dir, func() { os.RemoveAll(dir) }
}
