package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distbench/distbench/internal/rendezvous"
	"github.com/distbench/distbench/internal/wire"
)

// strangerEnv is this process's environment without any launcher's or
// job's variables, for ranks a test starts by hand.
func strangerEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, p := range []string{"DISTBENCH_", "MASTER_", "RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "OMPI_", "PMI_", "SLURM_", "TORCHELASTIC_"} {
			if strings.HasPrefix(kv, p) {
				return true
			}
		}
		return false
	})
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// recordingConn keeps what it wrote.
type recordingConn struct {
	net.Conn
	mu  sync.Mutex
	out bytes.Buffer
}

func (c *recordingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(b)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// handshakeRecordTypes reads the handshake records a server sends until it
// closes the connection, and returns their types (internal/wire's framing:
// magic, version, type, and a 2-byte body length).
func handshakeRecordTypes(t *testing.T, c net.Conn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	var types []byte
	for {
		var hdr [6]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return types
		}
		types = append(types, hdr[3])
		if _, err := io.CopyN(io.Discard, c, int64(binary.LittleEndian.Uint16(hdr[4:]))); err != nil {
			return types
		}
	}
}

// TestStrangerNeverJoinsEnvJob starts ranks as mpirun and torchrun do
// (--launcher env, the launcher's variables, rank 0 hosting the store at
// MASTER_ADDR:MASTER_PORT) and has a stranger on the same machine try to
// join. Without DISTBENCH_TOKEN a rank refuses to start, in one line that
// says how to set one and quotes neither a secret nor the job id, since no
// such launcher gives its processes a secret of its own (the job id used
// to be the secret, and defaulted to "distbench"). With one, the stranger
// is refused with the default secret, with the job id as its secret, with
// a job id it hoped to learn from a refusal, and with a real rank's
// handshake replayed; the real rank 1 then joins and the job checks out.
func TestStrangerNeverJoinsEnvJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	conventions := []struct{ name, rank, size string }{
		{"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
		{"torchrun", "RANK", "WORLD_SIZE"},
	}
	for _, conv := range conventions {
		t.Run(conv.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			l.Close()
			_, port, _ := net.SplitHostPort(addr)
			jobID := "job-" + randomHex(t, 8)
			token := randomHex(t, 16)
			base := append(strangerEnv(), envArgv+"=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port,
				"DISTBENCH_JOB_ID="+jobID, conv.size+"=2")
			args := []string{"run", "--launcher", "env", "-b", "4KiB", "-e", "4KiB", "-n", "2", "-w", "1", "--check", "--timeout", "1m"}
			rank := func(r int, env ...string) *exec.Cmd {
				cmd := exec.Command(os.Args[0], args...)
				cmd.Env = append(append(slices.Clip(base), conv.rank+"="+strconv.Itoa(r)), env...)
				return cmd
			}

			// No secret: one line, exit 2, before anything listens.
			out, err := rank(0).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || strings.Count(string(out), "\n") != 1 ||
				!strings.Contains(string(out), "DISTBENCH_TOKEN is not set") || !strings.Contains(string(out), "openssl rand -hex 16") {
				t.Fatalf("without DISTBENCH_TOKEN: %v, want exit 2 and one line saying how to set it:\n%s", err, out)
			}
			if strings.Contains(string(out), jobID) {
				t.Errorf("the refusal quotes the job id: %s", out)
			}

			r0 := rank(0, "DISTBENCH_TOKEN="+token)
			var r0out, r0err bytes.Buffer
			r0.Stdout, r0.Stderr = &r0out, &r0err
			if err := r0.Start(); err != nil {
				t.Fatal(err)
			}
			defer r0.Process.Kill()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for {
				c, err := net.Dial("tcp", addr)
				if err == nil {
					c.Close()
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("rank 0's store never listened at %s:\n%s", addr, r0err.String())
				}
				time.Sleep(20 * time.Millisecond)
			}

			dial := func(o rendezvous.ClientOptions) error {
				o.Timeout = time.Minute
				c, err := rendezvous.Dial(ctx, addr, o)
				if err == nil {
					c.Close()
				}
				return err
			}
			if err := dial(rendezvous.ClientOptions{JobID: "distbench"}); err == nil {
				t.Error("a stranger with the default secret joined the store")
			}
			if err := dial(rendezvous.ClientOptions{JobID: jobID}); err == nil {
				t.Error("a stranger with the job id as its secret joined the store")
			}
			// A stranger that guesses wrong learns nothing to guess better.
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			err = wire.ClientHandshake(ctx, c, wire.HandshakeConfig{Service: wire.ServiceStore, JobID: "guess", Token: []byte("guess"), Rank: 1, Size: 2}, 0)
			c.Close()
			if err == nil || strings.Contains(err.Error(), jobID) || strings.Contains(err.Error(), token) {
				t.Errorf("a stranger's refusal: %v; want a refusal that quotes no job id or secret", err)
			}
			if err := dial(rendezvous.ClientOptions{JobID: jobID, Token: []byte("guess")}); err == nil {
				t.Error("a stranger with the job id and a guessed token joined the store")
			}

			// Replay: what a true client sent, sent again by a stranger.
			secret, _ := hex.DecodeString(token)
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recordingConn{Conn: nc}
			if err := wire.ClientHandshake(ctx, rec, wire.HandshakeConfig{Service: wire.ServiceStore, JobID: jobID, Token: secret, Rank: 1, Size: 2}, 0); err != nil {
				t.Fatalf("a client holding the token was refused: %v", err)
			}
			nc.Close()
			replay, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := replay.Write(rec.out.Bytes()); err != nil {
				t.Fatal(err)
			}
			const recAccept, recReject = 3, 4 // internal/wire's record types
			types := handshakeRecordTypes(t, replay)
			replay.Close()
			if slices.Contains(types, recAccept) || !slices.Contains(types, recReject) {
				t.Errorf("a replayed handshake got records %v; want a reject (%d) and never an accept (%d)", types, recReject, recAccept)
			}

			// The job's own rank 1 still joins, and the results check out.
			r1 := rank(1, "DISTBENCH_TOKEN="+token)
			if out, err := r1.CombinedOutput(); err != nil {
				t.Fatalf("rank 1: %v\n%s\nrank 0:\n%s", err, out, r0err.String())
			}
			if err := r0.Wait(); err != nil {
				t.Fatalf("rank 0: %v\n%s", err, r0err.String())
			}
			engineRows(t, r0out.String(), 1)
			if s := r0err.String(); strings.Contains(s, jobID) || strings.Contains(s, token) {
				t.Errorf("rank 0's stderr quotes the job id or the secret:\n%s", s)
			}
		})
	}
}
