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
	Collective string            `json:"collective,omitempty"`
	Strategy   string            `json:"strategy,omitempty"`
	Peer       string            `json:"peer,omitempty"` // "mpi", "gloo": a reference implementation, not distbench
	NP         int               `json:"np,omitempty"`
	Bytes      int64             `json:"bytes"`
	Count      int64             `json:"count"`
	DType      string            `json:"dtype,omitempty"`
	Op         string            `json:"op,omitempty"`
	Root       int               `json:"root"`
	InPlace    bool              `json:"inplace"`
	Link       string            `json:"link,omitempty"` // network shaping, "" for none
	Options    map[string]string `json:"options,omitempty"`
	Iters      int               `json:"iters,omitempty"`
	Warmup     int               `json:"warmup,omitempty"`

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

	// Training (KindTrainStep, KindTrainEpoch).
	Model       string  `json:"model,omitempty"`
	Dataset     string  `json:"dataset,omitempty"`
	Mode        string  `json:"mode,omitempty"` // "tutorial", "ddp", "ps-sync", "ps-async"
	Epoch       int     `json:"epoch,omitempty"`
	Step        int     `json:"step,omitempty"`
	Loss        float64 `json:"loss,omitempty"`
	TestLoss    float64 `json:"test_loss,omitempty"`
	TestAcc     float64 `json:"test_acc,omitempty"`
	ComputeMs   float64 `json:"compute_ms,omitempty"`
	CommMs      float64 `json:"comm_ms,omitempty"`
	ExposedMs   float64 `json:"exposed_ms,omitempty"`
	ImagesPerS  float64 `json:"images_per_s,omitempty"`
	WallSeconds float64 `json:"wall_s,omitempty"`
}

// Env describes where and when a run happened.
type Env struct {
	Host       string    `json:"host"`
	CPUModel   string    `json:"cpu_model"`
	Cores      int       `json:"cores"`
	MemBytes   int64     `json:"mem_bytes"`
	Kernel     string    `json:"kernel"`
	GoVersion  string    `json:"go_version"`
	Commit     string    `json:"commit"`
	Args       []string  `json:"args,omitempty"`
	Link       string    `json:"link,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`

	// Planned lists the point ids the run set out to measure, so that a
	// report of an interrupted run can name the points it lacks.
	Planned []string `json:"planned,omitempty"`
}
