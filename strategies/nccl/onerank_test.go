//go:build cgo

package nccl

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
)

// TestOneRankNCCL drives NCCL itself through the strategy's cgo calls with
// a communicator of one rank: unique id, non-blocking init polled to
// completion, an allreduce, broadcast, allgather and reducescatter on the
// communicator's stream, grouped send and receive to itself, and destroy.
// On a machine with one GPU this is the only NCCL traffic there is: the
// engine copies the collectives of a world of one without asking its
// strategy, so the conformance suite at np 1 never calls NCCL. Run by
// scripts/gpu-proof.sh with DISTBENCH_REAL_LIBS=1; here, the stand-in.
func TestOneRankNCCL(t *testing.T) {
	if err := load(); err != nil {
		t.Fatal(err)
	}
	if _, err := deviceCount(); err != nil {
		t.Fatal(err)
	}
	const dev, count = 0, 1 << 16
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, rc := uniqueID()
	if rc != ncclSuccess {
		t.Fatalf("ncclGetUniqueId: %s", ncclErr(rc, 0))
	}
	h, rc := commInit(dev, 1, id, 0)
	if rc < 0 || (rc != ncclSuccess && rc != ncclInProgress) {
		t.Fatalf("ncclCommInitRankConfig: %d", rc)
	}
	c := &ncomm{h: h, dev: dev}
	s, crc := streamCreate(dev)
	if crc != cudaSuccess {
		commAbort(h)
		t.Fatalf("cudaStreamCreate: %s", cudaErr(crc))
	}
	c.stream = s
	defer c.close()
	defer c.hold()()
	if err := c.wait(ctx, "communicator initialisation"); err != nil {
		t.Fatal(err)
	}
	t.Logf("NCCL %d: a communicator of one rank on device %d", version(), dev)

	in := make([]byte, 4*count)
	for i := range count {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(float32(i%1000)-500))
	}
	f32, sum := ncclType(collective.Float32), ncclOp(collective.Sum)
	for _, tc := range []struct {
		name string
		kind int
	}{{"allreduce", opAllReduce}, {"broadcast", opBroadcast}, {"allgather", opAllGather}, {"reducescatter", opReduceScatter}} {
		src, err := c.upload(0, in)
		if err != nil {
			t.Fatal(err)
		}
		dst, err := c.staged(1, len(in))
		if err != nil {
			t.Fatal(err)
		}
		if rc := toDevice(dev, dst, make([]byte, len(in))); rc != cudaSuccess {
			t.Fatal(cudaErr(rc))
		}
		rc := collectiveCall(dev, tc.kind, src, dst, count, f32, sum, 0, c.h, c.stream)
		if err := c.issued(ctx, tc.name, rc); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		out := make([]byte, len(in))
		if err := c.download(out, dst); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, in) {
			t.Errorf("%s of one rank changed its data", tc.name)
		}
	}

	// A send to itself and the matching receive, in one group.
	src, _ := c.upload(0, in)
	dst, _ := c.staged(1, len(in))
	toDevice(dev, dst, make([]byte, len(in)))
	rc = groupCall(dev, []p2p{{send: true, peer: 0, buf: src, count: len(in)}, {peer: 0, buf: dst, count: len(in)}}, ncclType(collective.Uint8), c.h, c.stream)
	if err := c.issued(ctx, "send and receive to itself", rc); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(in))
	if err := c.download(out, dst); err != nil || !bytes.Equal(out, in) {
		t.Errorf("send to itself: %v, equal %v", err, bytes.Equal(out, in))
	}
}
