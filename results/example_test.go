package results_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/distbench/distbench/results"
)

func ExampleWriter() {
	dir, err := os.MkdirTemp("", "run")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	env := results.CaptureEnv()
	env.Planned = []string{"allreduce/ring/np=2/bytes=1024", "allreduce/tree/np=2/bytes=1024"}
	w, err := results.NewWriter(dir, env)
	if err != nil {
		log.Fatal(err)
	}
	w.Write(&results.Record{Kind: results.KindCollective, Point: "allreduce/ring/np=2/bytes=1024",
		Collective: "allreduce", Strategy: "ring", NP: 2, Bytes: 1024, TimeUs: 12, SamplesUs: []float64{12, 11, 13}})
	w.Close() // interrupted before the tree point

	done, _ := results.Done(dir)
	run, _ := results.ReadRun(dir)
	fmt.Println("done:", done)
	fmt.Println("finished:", run.Finished, "missing:", run.Missing())
	_, err = os.Stat(filepath.Join(dir, results.BenchFileName))
	fmt.Println("results.bench written:", err == nil)
	// Output:
	// done: map[allreduce/ring/np=2/bytes=1024:true]
	// finished: false missing: [allreduce/tree/np=2/bytes=1024]
	// results.bench written: true
}
