package results

import "time"

// SchemaVersion is the version of the record layout this build writes.
const SchemaVersion = 1

// Record kinds.
const (
	KindEnv        = "env"
	KindCollective = "collective"
	KindTrainStep  = "train_step"
	KindTrainEpoch = "train_epoch"
	KindSoak       = "soak" // `distbench soak`: one record per launch
	// KindOp is one operation of a job measuring itself (the PyTorch
	// backend, capi/bridge): what ran, how long the communicator spent on
	// it (TimeUs) and the job's step (Step). Reports summarise a job's ops
	// through the collective records written beside them.
	KindOp = "op"
)

// Record is one line of results.jsonl. Fields that do not apply to a kind
// are omitted.
type Record struct {
	Schema int    `json:"schema"`
	Kind   string `json:"kind"`
	RunID  string `json:"run_id,omitempty"`
	// Point is a stable identifier of the sweep point ("allreduce/ring/np=4/bytes=16777216/float32/sum"),
	// used by --resume and compare to match points across runs.
	Point string `json:"point,omitempty"`

	Env *Env `json:"env,omitempty"` // KindEnv only

	// What was measured.
	Collective string `json:"collective,omitempty"`
	Strategy   string `json:"strategy,omitempty"`
	Peer       string `json:"peer,omitempty"` // "mpi", "gloo": a reference implementation, not distbench
	NP         int    `json:"np,omitempty"`
	Bytes      int64  `json:"bytes"`
	Count      int64  `json:"count"`
	DType      string `json:"dtype,omitempty"`
	Op         string `json:"op,omitempty"`
	Root       int    `json:"root"`
	InPlace    bool   `json:"inplace"`
	Link       string `json:"link,omitempty"` // network shaping, "" for none
	// Transport is what carried same-host pairs' payloads: "tcp", "shm"
	// (shared memory), or "auto" (shared memory within a host, TCP
	// across). Empty in older files, which were all TCP; see TransportOf.
	Transport string            `json:"transport,omitempty"`
	Device    string            `json:"device,omitempty"` // "cuda": buffers in GPU memory; "" for host memory
	Hosts     string            `json:"hosts,omitempty"`  // simulated hosts of a local launch (job.HostsOf), "" for none
	Options   map[string]string `json:"options,omitempty"`
	Iters     int               `json:"iters,omitempty"`
	Warmup    int               `json:"warmup,omitempty"`
	// Workload names what the point replays when it is not one of a sweep's
	// sizes: "resnet20 DDP bucket" for one of the model's DDP gradient
	// bucket sizes. Reports draw such points apart from the line through
	// the swept sizes. Empty for a plain point, and in older files.
	Workload string `json:"workload,omitempty"`

	// Rounds. A sweep may measure each point in several rounds, each a
	// launch of its own, interleaved across the whole sweep (round 1 of every
	// launch, then round 2, ...), so that a burst of load from other work
	// hits one round of a point rather than all of its samples. Each round
	// is written as its own record: Round (1-based) of Rounds. Records
	// without them (older files, `distbench run`) are round 1 of 1; see
	// RoundOf. MergeRounds turns a point's round records into one record, in
	// which Round is 0 (it stands for all rounds) and the fields below are
	// set.
	Round  int `json:"round,omitempty"`
	Rounds int `json:"rounds,omitempty"`
	// RoundMediansUs is each pooled round's median time, in round order,
	// and RoundSampleCounts how many of SamplesUs each contributed (the
	// samples are concatenated in the same order). Only merged records have
	// them; fewer entries than Rounds mean rounds are missing (MissingRounds).
	RoundMediansUs    []float64 `json:"round_medians_us,omitempty"`
	RoundSampleCounts []int     `json:"round_sample_counts,omitempty"`

	// Statistics of the per-iteration time of the slowest rank, in microseconds.
	TimeUs      float64   `json:"time_us"` // median
	TimeUsP5    float64   `json:"time_us_p5,omitempty"`
	TimeUsP95   float64   `json:"time_us_p95"`
	TimeUsP99   float64   `json:"time_us_p99,omitempty"`
	TimeUsMin   float64   `json:"time_us_min,omitempty"`
	TimeUsMax   float64   `json:"time_us_max,omitempty"`
	TimeUsMean  float64   `json:"time_us_mean,omitempty"`
	TimeUsStd   float64   `json:"time_us_stddev,omitempty"`
	TimeUsCV    float64   `json:"time_us_cv,omitempty"`
	TimeUsCILo  float64   `json:"time_us_ci_lo,omitempty"` // 95% confidence interval of the median
	TimeUsCIHi  float64   `json:"time_us_ci_hi,omitempty"`
	SamplesUs   []float64 `json:"samples_us,omitempty"`
	AlgBWGBs    float64   `json:"algbw_gbs"`
	BusBWGBs    float64   `json:"busbw_gbs"`
	Wrong       int64     `json:"wrong"`
	Incomplete  bool      `json:"incomplete,omitempty"`
	Error       string    `json:"error,omitempty"`
	StartedAt   time.Time `json:"started_at,omitzero"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	ElapsedSecs float64   `json:"elapsed_s,omitempty"`

	// Bytes on the wire per operation, measured where busbw is a formula:
	// the payload bytes each rank sent and received, averaged over the
	// timed iterations, indexed by rank; for dedicated parameter servers,
	// each server's too, indexed by server. WireBusiestBytes is the largest
	// of any rank's or server's sent and received bytes. Absent where the
	// strategy does not count (and in older files); see wire.go.
	WireSentBytes       []float64 `json:"wire_sent_bytes,omitempty"`
	WireRecvBytes       []float64 `json:"wire_recv_bytes,omitempty"`
	WireServerSentBytes []float64 `json:"wire_server_sent_bytes,omitempty"`
	WireServerRecvBytes []float64 `json:"wire_server_recv_bytes,omitempty"`
	WireBusiestBytes    float64   `json:"wire_busiest_bytes,omitempty"`

	// GPU is each GPU's telemetry during the timed iterations (gpu.go).
	GPU []GPUStats `json:"gpu,omitempty"`

	// Per rank, indexed by rank (see ranks.go): each rank's hostname and
	// process id, gathered once per launch, and the median and mean of its
	// own per-iteration times, in µs; RankSamplesUs holds those times only
	// when the spec keeps samples (as SamplesUs). Absent in older files.
	// The time fields above are of the slowest rank per iteration; these
	// say which rank that was (SlowestRank).
	RankHosts     []string    `json:"rank_hosts,omitempty"`
	RankPIDs      []int       `json:"rank_pids,omitempty"`
	RankMedianUs  []float64   `json:"rank_median_us,omitempty"`
	RankMeanUs    []float64   `json:"rank_mean_us,omitempty"`
	RankSamplesUs [][]float64 `json:"rank_samples_us,omitempty"`

	// Training (KindTrainStep, KindTrainEpoch).
	Model       string  `json:"model,omitempty"`
	Dataset     string  `json:"dataset,omitempty"`
	Mode        string  `json:"mode,omitempty"` // "tutorial", "ddp", "dp", "ps-sync", "ps-async"
	Epoch       int     `json:"epoch,omitempty"`
	Step        int     `json:"step,omitempty"`
	Loss        float64 `json:"loss,omitempty"`
	LR          float64 `json:"lr,omitempty"` // the learning rate the step (epoch) trained at
	TestLoss    float64 `json:"test_loss,omitempty"`
	TestAcc     float64 `json:"test_acc,omitempty"`
	ComputeMs   float64 `json:"compute_ms,omitempty"`
	CommMs      float64 `json:"comm_ms,omitempty"`
	ExposedMs   float64 `json:"exposed_ms,omitempty"`
	ImagesPerS  float64 `json:"images_per_s,omitempty"`
	WallSeconds float64 `json:"wall_s,omitempty"`
	// TransferMs is the time of each of a step's transfers on rank 0, in
	// ms, by name, where a mode's step is a fixed sequence of them (mode
	// dp: broadcast, the parameters and buffers from the master; scatter,
	// the batch; gather, the outputs; scatter_grad, the loss's gradient;
	// reduce, the gradients to the master); in an epoch record, each one's
	// median over the epoch's steps. Their sum is CommMs.
	TransferMs map[string]float64 `json:"transfer_ms,omitempty"`
	// RankExposedMs, in epoch records, is each rank's median time per step
	// blocked on communication, indexed by rank: rank 0's is ExposedMs's
	// median; in mode dp a non-master rank's is its wait for the master
	// (the transfers and the master's loss and update between them).
	// Training epoch records also carry the wire fields above, counted over
	// the epoch's steps (evaluation left out) and divided by their number:
	// bytes per step.
	RankExposedMs []float64 `json:"rank_exposed_ms,omitempty"`

	// Soak (KindSoak): what a soak ran and how every rank's footprint moved.
	Soak *SoakStats `json:"soak,omitempty"`
}

// SoakStats is the outcome of one soak launch.
type SoakStats struct {
	Ops     int64   `json:"ops"`   // checked allreduces, warm-up included
	Bytes   int64   `json:"bytes"` // their total size
	Wrong   int64   `json:"wrong"` // elements that differed from the exact answer, over all ranks
	Seconds float64 `json:"seconds"`
	// Ranks holds each rank's footprint at every checkpoint, the first
	// taken after the warm-up.
	Ranks []SoakRank `json:"ranks,omitempty"`
}

// SoakRank is one rank's goroutines, live heap (after a collection) and
// resident set size at each checkpoint of a soak.
type SoakRank struct {
	Rank       int     `json:"rank"`
	Goroutines []int   `json:"goroutines"`
	HeapBytes  []int64 `json:"heap_bytes"`
	RSSBytes   []int64 `json:"rss_bytes"`
}

// RoundOf returns which round r is, of how many. A record without round
// fields (an older file, `distbench run`) is round 1 of 1; a record that
// MergeRounds made of several rounds is round 0 of Rounds: all of them.
func (r *Record) RoundOf() (round, rounds int) {
	if r.Rounds <= 1 {
		return 1, 1
	}
	return max(r.Round, 0), r.Rounds
}

// MissingRounds is how many rounds a merged record of a measured point
// lacks: rounds that never ran (an interrupted sweep) or stopped short. It
// is 0 for a merged record with every round, for a failed or unfinished
// one, and for any record that is not merged.
func (r *Record) MissingRounds() int {
	if r.Rounds <= 1 || r.Round != 0 || r.Error != "" || r.Incomplete {
		return 0
	}
	return max(r.Rounds-len(r.RoundMediansUs), 0)
}

// Env describes where and when a run happened.
type Env struct {
	Host      string `json:"host"`
	CPUModel  string `json:"cpu_model"`
	Cores     int    `json:"cores"`
	MemBytes  int64  `json:"mem_bytes"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go_version"`
	Commit    string `json:"commit"`
	// Exe is the binary whose workers measured the run when it is not the
	// one that recorded it: each build of an A/B run (distbench ab).
	Exe string `json:"exe,omitempty"`
	// Reduce names the reduction kernels (kernels.Name):
	// "avx2", "avx2+f16c" or "go".
	Reduce     string    `json:"reduce,omitempty"`
	Args       []string  `json:"args,omitempty"`
	Link       string    `json:"link,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`

	// Planned lists the point ids the run set out to measure, so that a
	// report of an interrupted run can name the points it lacks.
	Planned []string `json:"planned,omitempty"`
	// LeftOut says what the plan named but this machine cannot run (a
	// strategy, a peer, a dataset: skip_unavailable), each with the command
	// that fixes it where there is one, so that a report does not call a
	// run with parts left out complete.
	LeftOut []string `json:"left_out,omitempty"`
}

// TransportOf is r's transport, "tcp" for records from before there was a
// choice.
func TransportOf(r *Record) string {
	if r.Transport == "" {
		return "tcp"
	}
	return r.Transport
}
