package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/reports/nccltests"
	"github.com/distbench/distbench/results"
)

// testTokenEnv is a job secret for ranks a test starts under an engine by
// hand (--launcher env), as a user exports one: without it they refuse to
// start.
const testTokenEnv = "DISTBENCH_TOKEN=00112233445566778899aabbccddeeff"

// engineRows checks run's table as an engine's ranks print it: rank 0's
// rows, every element right.
func engineRows(t *testing.T, stdout string, want int) {
	t.Helper()
	rows := 0
	for _, line := range strings.Split(stdout, "\n") {
		r, err := nccltests.ParseRow(line)
		if err != nil {
			continue
		}
		rows++
		if r.Wrong != [2]string{"0", "0"} {
			t.Errorf("wrong elements: %s", line)
		}
	}
	if rows != want {
		t.Errorf("%d rows, want %d (rank 0 alone prints):\n%s", rows, want, stdout)
	}
}

// engineRun runs `run --launcher mpirun` with args (2 sizes, checked),
// and checks that it succeeds, prints the line it ran (beginning with
// line), and that rank 0's rows are right.
func engineRun(t *testing.T, line string, args ...string) {
	t.Helper()
	t.Setenv(envArgv, "1")
	args = append([]string{"run", "--launcher", "mpirun", "-c", "1",
		"-b", "4KiB", "-e", "64KiB", "-f", "16", "-n", "3", "-w", "1", "--timeout", "1m"}, args...)
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "distbench: running "+line) {
		t.Errorf("want the line it ran, %q...: %s", line, stderr)
	}
	engineRows(t, stdout, 2)
}

// TestEngineMpirun runs `run --launcher mpirun`: distbench builds the
// mpirun line, Open MPI starts 4 ranks, each finds its rank in Open MPI's
// environment and the rendezvous in the variables mpirun exported.
func TestEngineMpirun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not found (Debian: apt-get install openmpi-bin; .ci/run installs it)")
	}
	engineRun(t, "mpirun -n 4 ", "--np", "4")
}

// TestEngineMPICH runs the same under MPICH's Hydra, which exports with
// -genvlist, and checks what a user who runs it by hand without the
// rendezvous is told.
func TestEngineMPICH(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	hydra, err := exec.LookPath("mpirun.mpich")
	if err != nil {
		t.Skip("mpirun.mpich not found (Debian: apt-get install mpich; .ci/run installs it)")
	}
	// A script, not a link: Hydra finds its proxy beside the path it was
	// started by.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "mpirun"), []byte("#!/bin/sh\nexec "+hydra+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	engineRun(t, "mpirun -n 3 -genvlist DISTBENCH_TOKEN,MASTER_PORT,MASTER_ADDR ", "--np", "3")

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hydra, "-n", "2", self, "run", "--launcher", "env", "-b", "4KiB", "-e", "4KiB")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "MASTER_") }), testTokenEnv)
	out, err := cmd.CombinedOutput()
	want := "MPICH tells its ranks no host of the job: pass the host of rank 0 and a free port to every rank, mpiexec -genv MASTER_ADDR"
	if err == nil || !strings.Contains(string(out), want) {
		t.Errorf("by hand without MASTER_ADDR: %v, want an error with %q:\n%s", err, want, out)
	}
}

// TestEngineDedicatedServers runs a parameter server with dedicated server
// processes under mpirun: distbench asks Open MPI for np workers and k
// servers, and the engine's last k ranks become the servers.
func TestEngineDedicatedServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not found (Debian: apt-get install openmpi-bin; .ci/run installs it)")
	}
	// 2 workers and 2 servers.
	engineRun(t, "mpirun -n 4 ", "--np", "2", "--strategy", "ps", "--opt", "placement=dedicated", "--opt", "servers=2")
}

// standInSrun is srun as far as distbench uses it: -n N, --export, and the
// program; each task gets Slurm's variables.
const standInSrun = `#!/bin/sh
n=1
while [ $# -gt 0 ]; do
  case $1 in
    -n) n=$2; shift 2 ;;
    --export=*) shift ;;
    -*) shift ;;
    *) break ;;
  esac
done
pids=
i=0
while [ $i -lt $n ]; do
  SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_PROCID=$i SLURM_LOCALID=$i SLURM_NTASKS=$n SLURM_STEP_NUM_TASKS=$n \
    SLURM_STEP_NODELIST=localhost SLURM_JOB_NODELIST=localhost "$@" &
  pids="$pids $!"
  i=$((i+1))
done
trap 'kill -TERM $pids 2>/dev/null' TERM INT
rc=0
for p in $pids; do wait $p || rc=$?; done
exit $rc
`

// srunCommand is the stand-in srun starting n tasks of this test binary as
// distbench with args, rank 0's store at a free port on loopback.
func srunCommand(t *testing.T, ctx context.Context, n int, args ...string) *exec.Cmd {
	t.Helper()
	srun := filepath.Join(t.TempDir(), "srun")
	if err := os.WriteFile(srun, []byte(standInSrun), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.CommandContext(ctx, srun, append([]string{"-n", strconv.Itoa(n), os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), envArgv+"=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port), testTokenEnv)
	return cmd
}

// TestEngineSrun runs `run --launcher srun` against a stand-in srun (no
// Slurm here): the ranks read SLURM_PROCID and SLURM_NTASKS.
func TestEngineSrun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "srun"), []byte(standInSrun), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(envArgv, "1")
	t.Setenv("MASTER_ADDR", "127.0.0.1")
	code, stdout, stderr := runCLI(t, "run", "--launcher", "srun", "--np", "3", "-c", "1",
		"-b", "4KiB", "-e", "64KiB", "-f", "16", "-n", "3", "-w", "1", "--timeout", "1m")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "distbench: running srun -n 3 --export=ALL,DISTBENCH_TOKEN,MASTER_PORT,MASTER_ADDR ") {
		t.Errorf("the line it ran is not printed: %s", stderr)
	}
	engineRows(t, stdout, 2)
}

// TestEngineInterrupted interrupts `run --launcher mpirun` mid-run, as
// Ctrl-C does: mpirun stops every rank, the exit status says so, and rank
// 0's --json keeps every row it measured, the run marked unfinished.
func TestEngineInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not found (Debian: apt-get install openmpi-bin; .ci/run installs it)")
	}
	t.Setenv(envArgv, "1")
	jsonPath := filepath.Join(t.TempDir(), results.FileName)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runCtx, interrupt := context.WithCancel(ctx)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		// Far more iterations than it gets to: it runs until interrupted.
		done <- run(runCtx, &stdout, &stderr, []string{"run", "--launcher", "mpirun", "--np", "2", "-b", "4KiB", "-e", "4MiB",
			"-f", "2", "-n", "2000", "-w", "1", "--json", jsonPath, "--timeout", "1m"})
	}()
	// Interrupt once the first point's record is on disk.
	for {
		b, _ := os.ReadFile(jsonPath)
		if bytes.Count(b, []byte(`"kind":"collective"`)) >= 1 {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("finished (exit %d) before the interrupt\n%s\n%s", code, stdout.String(), stderr.String())
		case <-ctx.Done():
			t.Fatalf("no record within 3m\n%s\n%s", stdout.String(), stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	interrupt()
	var code int
	select {
	case code = <-done:
	case <-ctx.Done():
		t.Fatal("run did not end after the interrupt")
	}
	if code == 0 {
		t.Errorf("exit 0 after an interrupt")
	}
	// Rank 0 closes its table marked incomplete, but whether that reaches
	// this stdout is mpirun's affair: once signalled, it may stop
	// forwarding the ranks' output. The records are rank 0's own file.
	run, err := results.ReadRun(filepath.Dir(jsonPath))
	if err != nil {
		t.Fatal(err)
	}
	if run.Complete() || len(run.Records) == 0 {
		t.Errorf("complete %v with %d records: want the measured records kept, the run incomplete", run.Complete(), len(run.Records))
	}
}

// TestEngineSweepDedicated sweeps a parameter server with dedicated servers
// at np 2 and 4 in one allocation: 6 ranks, for 4 workers and 2 servers;
// at np 2 the servers are ranks 2 and 3 and the last two idle.
func TestEngineSweepDedicated(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not found (Debian: apt-get install openmpi-bin; .ci/run installs it)")
	}
	t.Setenv(envArgv, "1")
	out := filepath.Join(t.TempDir(), "engine")
	code, stdout, stderr := runCLI(t, "sweep", "--launcher", "mpirun", "--out", out, "--strategy", "ps",
		"--opt", "placement=dedicated", "--opt", "servers=2", "--np", "2,4", "-b", "4KiB", "-e", "64KiB", "-f", "16",
		"-n", "3", "-w", "1", "--rounds", "1", "--timeout", "1m")
	if code != 0 {
		t.Fatalf("sweep under mpirun: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "distbench: running mpirun -n 6 ") || !strings.Contains(stdout, "4 of 4 points measured") {
		t.Errorf("want one mpirun of 6 ranks measuring 4 points:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Records {
		if r.Wrong != 0 || r.Error != "" {
			t.Errorf("np %d, %d bytes: %d wrong, error %q", r.NP, r.Bytes, r.Wrong, r.Error)
		}
	}
}

// TestEngineSweep sweeps np 2 and 4 in one mpirun allocation of 4 ranks:
// the same points as the local launcher's sweep of the same plan, measured
// on the allocation's first np ranks, which compare matches point for
// point.
func TestEngineSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not found (Debian: apt-get install openmpi-bin; .ci/run installs it)")
	}
	t.Setenv(envArgv, "1")
	plan := []string{"--strategy", "ring,ps", "--np", "2,4", "-b", "4KiB", "-e", "64KiB", "-f", "16", "-n", "3", "-w", "1", "--rounds", "1", "--timeout", "1m"}
	engine, local := filepath.Join(t.TempDir(), "engine"), filepath.Join(t.TempDir(), "local")
	code, stdout, stderr := runCLI(t, append([]string{"sweep", "--launcher", "mpirun", "--out", engine}, plan...)...)
	if code != 0 {
		t.Fatalf("sweep under mpirun: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "distbench: running mpirun -n 4 ") || !strings.Contains(stdout, "8 of 8 points measured") {
		t.Errorf("want one mpirun of 4 ranks measuring 8 points:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	if code, stdout, stderr = runCLI(t, append([]string{"sweep", "--out", local}, plan...)...); code != 0 {
		t.Fatalf("local sweep: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	a, err := results.ReadRun(engine)
	if err != nil {
		t.Fatal(err)
	}
	b, err := results.ReadRun(local)
	if err != nil {
		t.Fatal(err)
	}
	points := func(run *results.Run) (ids []string) {
		for _, r := range run.Records {
			if r.Error != "" || r.Wrong != 0 {
				t.Errorf("%s: error %q, %d wrong", r.Point, r.Error, r.Wrong)
			}
			ids = append(ids, r.Point)
		}
		slices.Sort(ids)
		return ids
	}
	if pa, pb := points(a), points(b); !slices.Equal(pa, pb) || len(pa) != 8 {
		t.Errorf("points differ:\nengine %q\nlocal  %q", pa, pb)
	}
	// Within noise: nothing regressed (0), or too few samples to say (3).
	if code, stdout, stderr = runCLI(t, "compare", local, engine, "--out", t.TempDir()); code != 0 && code != 3 {
		t.Errorf("compare local → engine: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestEngineSweepTooSmall: inside an allocation of 2 ranks, a launch that
// needs 3 is recorded as skipped, saying why, and the rest are measured.
func TestEngineSweepTooSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	out := filepath.Join(t.TempDir(), "run")
	cmd := srunCommand(t, context.Background(), 2, "sweep", "--launcher", "env", "--out", out, "--strategy", "ring", "--np", "2,3",
		"-b", "4KiB", "-e", "4KiB", "-n", "2", "-w", "1", "--rounds", "1", "--timeout", "1m")
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1 (a point skipped), got %v\n%s", err, b)
	}
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	measured, skipped := 0, 0
	for _, r := range run.Records {
		switch {
		case r.NP == 2 && r.Error == "" && r.Wrong == 0:
			measured++
		case r.NP == 3 && r.Error == "skipped: np 3 is more than the 2 ranks the engine started":
			skipped++
		default:
			t.Errorf("%s: error %q", r.Point, r.Error)
		}
	}
	if measured != 1 || skipped != 1 {
		t.Errorf("%d measured, %d skipped; want 1 and 1\n%s", measured, skipped, b)
	}
}

// TestEngineSweepRankDies kills rank 2 of a 3-rank allocation mid-sweep:
// the launch it was in fails naming it, the allocation ends (its mesh may
// be broken), the rest of the plan is recorded as not run, and every rank
// exits, within the operation timeout, not at the end of time.
func TestEngineSweepRankDies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// np 3 first (the plan's order is by np, then strategy), long enough
	// that the death lands in it; np 2's launches come after.
	cmd := srunCommand(t, ctx, 3, "sweep", "--launcher", "env", "--out", out,
		"--strategy", "ring,tree", "--np", "3,2", "-b", "1MiB", "-e", "1MiB", "-n", "100000", "-w", "1", "--rounds", "1", "--timeout", "30s")
	cmd.Env = append(cmd.Env, "DISTBENCH_TEST_DIE_RANK=2", "DISTBENCH_TEST_DIE_AFTER=2s")
	b, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the sweep did not end after rank 2 died:\n%s", b)
	}
	if err == nil {
		t.Fatalf("exit 0 after a rank died:\n%s", b)
	}
	run, rerr := results.ReadRun(out)
	if rerr != nil {
		t.Fatalf("%v\n%s", rerr, b)
	}
	failed, notRun := 0, 0
	for _, r := range run.Records {
		switch {
		case strings.Contains(r.Error, "rank 2"):
			failed++
		case strings.Contains(r.Error, "not run: the allocation ended after launch"):
			notRun++
		}
	}
	if failed < 1 || failed+notRun != len(run.Records) || len(run.Records) == 0 {
		for _, r := range run.Records {
			t.Logf("%s: %q", r.Point, r.Error)
		}
		t.Errorf("%d records naming rank 2, %d not run, of %d; want every point one or the other\n%s", failed, notRun, len(run.Records), b)
	}
}
