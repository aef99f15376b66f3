package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNamespaceHier runs the ring flat and hierarchical (--opt algo=hier)
// on 2 hosts × 2 ranks, each host a network namespace whose NIC is shaped
// to 200 Mbit/s, and counts the bytes each host's NIC sent: the transport
// learns the hosts from the namespaces (every rank publishes its host
// identity), and the hierarchical allreduce sends S across per operation
// where the flat ring sends 1.5 S, so the same runs of both must show a
// ratio near 2/3 (frame headers and the runs' barriers ride on both). It
// counts bytes, not time, so a slow machine passes as a fast one does.
func TestNamespaceHier(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const hosts, perHost = 2, 2
	c := newNetnsCluster(t, hosts, "200mbit")
	sent := map[string]float64{}
	for _, algo := range []string{"rsag", "hier"} {
		before := c.txBytes(hosts)
		out := c.runRanks(t, hosts, perHost, "run", "--launcher", "env", "--np", fmt.Sprint(hosts*perHost), "--strategy", "ring",
			"--opt", "algo="+algo, "-b", "4MiB", "-e", "4MiB", "-n", "4", "-w", "1", "-c", "1", "--inplace", "in", "--timeout", "2m")
		after := c.txBytes(hosts)
		rows := 0
		for _, line := range strings.Split(out, "\n") {
			// In place only: the row's last field is its #wrong.
			if f := strings.Fields(line); len(f) > 5 && f[0] == "4194304" {
				rows++
				if f[len(f)-1] != "0" {
					t.Errorf("algo=%s: %s wrong elements:\n%s", algo, f[len(f)-1], out)
				}
			}
		}
		if rows != 1 {
			t.Fatalf("algo=%s: %d rows, want 1:\n%s", algo, rows, out)
		}
		for h := range hosts {
			sent[algo] += after[h] - before[h]
		}
		t.Logf("algo=%s: the hosts' NICs sent %.1f MB", algo, sent[algo]/1e6)
	}
	if r := sent["hier"] / sent["rsag"]; r < 0.6 || r > 0.75 {
		t.Errorf("hier sent %.3f× the flat ring's bytes across hosts, want about 2/3", r)
	}
}

// txBytes reads how many bytes each host's NIC has sent.
func (c *netnsCluster) txBytes(hosts int) []float64 {
	c.t.Helper()
	out := make([]float64, hosts)
	for h := range hosts {
		b, err := exec.Command("ip", "netns", "exec", fmt.Sprintf("%sh%d", c.prefix, h),
			"cat", fmt.Sprintf("/sys/class/net/%sp%d/statistics/tx_bytes", c.prefix, h)).Output()
		if err != nil {
			c.t.Fatalf("reading host %d's NIC counters: %v", h, err)
		}
		if out[h], err = strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err != nil {
			c.t.Fatal(err)
		}
	}
	return out
}

// runRanks runs the CLI with args as hosts × perHost ranks, rank r on host
// r/perHost, as an engine would start them (--launcher env), and returns
// rank 0's output.
func (c *netnsCluster) runRanks(t *testing.T, hosts, perHost int, args ...string) string {
	t.Helper()
	token := make([]byte, 16)
	rand.Read(token)
	js, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var outs []*bytes.Buffer
	var cmds []*exec.Cmd
	for r := range hosts * perHost {
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", fmt.Sprintf("%sh%d", c.prefix, r/perHost), os.Args[0])
		cmd.Env = append(os.Environ(), envLaunch+"="+string(js),
			fmt.Sprintf("RANK=%d", r), fmt.Sprintf("WORLD_SIZE=%d", hosts*perHost),
			"MASTER_ADDR="+c.addr(0), "MASTER_PORT=29512", "DISTBENCH_TOKEN="+hex.EncodeToString(token), "DISTBENCH_HOST_ID=")
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		outs, cmds = append(outs, out), append(cmds, cmd)
	}
	for r, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("rank %d: %v\n%s", r, err, outs[r])
		}
	}
	return outs[0].String()
}
