package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/internal/exact"
	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// The point-to-point benchmarks are OSU micro-benchmarks' (v7.4,
// c/mpi/pt2pt/standard/osu_latency.c, osu_bw.c, osu_bibw.c), between
// ranks 0 and 1 of the world through the strategy's Send/Recv and
// ISend/IRecv; other ranks wait at the barriers around them. As OSU, only
// rank 0's clock counts: each timed iteration is one sample, and OSU's
// t_total is their sum.
//
//   - p2p-latency: rank 0 sends the message and receives it back; rank 1
//     receives, then sends. Latency = t_total / (2 × iterations).
//   - p2p-bw: rank 0 issues a window of non-blocking sends, rank 1 a
//     window of non-blocking receives; when all are done rank 1 sends a
//     one-byte ack. Bandwidth = size × window × iterations / t_total.
//   - p2p-bibw: both ranks issue a window of receives then of sends and
//     wait for all; bandwidth counts both directions (× 2).
//
// Their records: TimeUs and its statistics are those of one iteration
// (a round trip; a window), and AlgBWGBs and BusBWGBs are OSU's bandwidth
// (for latency, the size over the one-way latency) in GB/s. OSUFigure
// gives the figure OSU prints.

// Tags of the p2p messages, as OSU's (1 for latency; 100 for windows, 101
// for bw's ack; 10 for bibw's reverse direction).
const (
	tagLatency = 1
	tagWindow  = 100
	tagAck     = 101
	tagReverse = 10
)

// p2pStep is one iteration of a p2p benchmark on one rank.
type p2pStep func(ctx context.Context) error

// p2pSteps returns the step of comm's rank at p, and wrong, which counts
// the elements its receive buffer holds that differ from the peer's
// pattern (the check: the sender fills its buffer with exact.FillPattern).
func p2pSteps(comm collective.Comm, p job.Point, dt collective.DType) (step p2pStep, wrong func() int64, err error) {
	count := p.Count(dt, comm.Size())
	sbuf, rbuf := collective.NewTensor(dt, count), collective.NewTensor(dt, count)
	r := comm.Rank()
	exact.FillPattern(sbuf, r, 0)
	wrong = func() int64 {
		if r > 1 || (r == 0 && p.Collective == "p2p-bw") {
			return 0 // receives nothing checkable
		}
		return exact.CountPattern(rbuf, 1-r, 0)
	}
	step, err = rankStep(comm, p, sbuf, rbuf)
	return step, wrong, err
}

func rankStep(comm collective.Comm, p job.Point, sbuf, rbuf collective.Tensor) (p2pStep, error) {
	ack := collective.NewTensor(collective.Uint8, 1)
	window := p.WindowOf()
	works := make([]collective.Work, 0, 2*window)
	waitAll := func(ctx context.Context) error {
		var first error
		for _, w := range works {
			if err := w.Wait(ctx); err != nil && first == nil {
				first = err
			}
		}
		works = works[:0]
		return first
	}
	r := comm.Rank()
	if r > 1 {
		return func(context.Context) error { return nil }, nil
	}
	peer := 1 - r
	switch p.Collective {
	case "p2p-latency":
		if r == 0 {
			return func(ctx context.Context) error {
				if err := comm.Send(ctx, sbuf, peer, tagLatency); err != nil {
					return err
				}
				return comm.Recv(ctx, rbuf, peer, tagLatency)
			}, nil
		}
		return func(ctx context.Context) error {
			if err := comm.Recv(ctx, rbuf, peer, tagLatency); err != nil {
				return err
			}
			return comm.Send(ctx, sbuf, peer, tagLatency)
		}, nil
	case "p2p-bw":
		if r == 0 {
			return func(ctx context.Context) error {
				for range window {
					works = append(works, comm.ISend(ctx, sbuf, peer, tagWindow))
				}
				if err := waitAll(ctx); err != nil {
					return err
				}
				return comm.Recv(ctx, ack, peer, tagAck)
			}, nil
		}
		return func(ctx context.Context) error {
			for range window {
				works = append(works, comm.IRecv(ctx, rbuf, peer, tagWindow))
			}
			if err := waitAll(ctx); err != nil {
				return err
			}
			return comm.Send(ctx, ack, peer, tagAck)
		}, nil
	case "p2p-bibw":
		// Rank 0 receives on tag 10 and sends on 100, rank 1 the other
		// way round, as OSU.
		sendTag, recvTag := tagWindow, tagReverse
		if r == 1 {
			sendTag, recvTag = tagReverse, tagWindow
		}
		return func(ctx context.Context) error {
			for range window {
				works = append(works, comm.IRecv(ctx, rbuf, peer, recvTag))
			}
			for range window {
				works = append(works, comm.ISend(ctx, sbuf, peer, sendTag))
			}
			return waitAll(ctx)
		}, nil
	}
	return nil, fmt.Errorf("%s: not a point-to-point benchmark", p.Collective)
}

// measureP2P measures one p2p point; every rank calls it, and rank 0
// returns the record.
func measureP2P(ctx context.Context, comm collective.Comm, spec *job.Spec, p job.Point) (*results.Record, error) {
	dt, err := collective.ParseDType(p.DType)
	if err != nil {
		return nil, err
	}
	if comm.Size() < 2 {
		return nil, fmt.Errorf("%s: needs ranks 0 and 1, but the world has %d", p.Collective, comm.Size())
	}
	step, countWrong, err := p2pSteps(comm, p, dt)
	if err != nil {
		return nil, err
	}
	iters, warmup := spec.ItersOf(p)
	if err := comm.Barrier(ctx); err != nil {
		return nil, fmt.Errorf("barrier before warm-up: %w", err)
	}
	wrong := int64(-1)
	if spec.Check {
		if err := step(ctx); err != nil {
			return nil, fmt.Errorf("check run: %w", err)
		}
		w := collective.FromInt64([]int64{countWrong()})
		if err := comm.AllReduce(ctx, w, collective.Sum); err != nil {
			return nil, fmt.Errorf("summing #wrong: %w", err)
		}
		wrong = w.Int64s()[0]
	}
	for i := range warmup {
		if err := step(ctx); err != nil {
			return nil, fmt.Errorf("warm-up %d: %w", i, err)
		}
	}
	times := make([]float64, 0, iters)
	for i := range iters {
		t0 := time.Now()
		if err := step(ctx); err != nil {
			return nil, fmt.Errorf("iteration %d: %w", i, err)
		}
		times = append(times, float64(time.Since(t0).Nanoseconds())/1e3)
	}
	// The idle ranks wait here, so that the next point starts together.
	if err := comm.Barrier(ctx); err != nil {
		return nil, fmt.Errorf("barrier after timing: %w", err)
	}
	if comm.Rank() != 0 {
		return nil, nil
	}
	rec := spec.Record(p)
	rec.Iters, rec.Warmup = iters, warmup
	if err := results.Fill(rec, times); err != nil {
		return nil, err
	}
	gbs := p2pBandwidth(p, rec.Bytes, times)
	rec.AlgBWGBs, rec.BusBWGBs = gbs, gbs
	rec.Wrong = wrong
	if !spec.KeepSamples {
		rec.SamplesUs = nil
	}
	return rec, nil
}

// p2pBandwidth is OSU's bandwidth of a p2p point in GB/s, from rank 0's
// iteration times (us): for latency, the size over the one-way latency.
func p2pBandwidth(p job.Point, bytes int64, times []float64) float64 {
	total := 0.0
	for _, t := range times {
		total += t
	}
	if total <= 0 || bytes <= 0 {
		return 0
	}
	n := float64(len(times))
	switch p.Collective {
	case "p2p-latency":
		return stats.AlgBW(bytes, total/(2*n)/1e6)
	case "p2p-bibw":
		return stats.AlgBW(2*bytes*int64(p.WindowOf()), total/n/1e6)
	}
	return stats.AlgBW(bytes*int64(p.WindowOf()), total/n/1e6)
}
