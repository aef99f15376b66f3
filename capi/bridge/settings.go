package bridge

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness/launch"
	"github.com/distbench/distbench/internal/linkspec"
)

// The environment variables Open reads, beside the launcher's (RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...; see internal/rendezvous).
const (
	EnvStrategy  = "DISTBENCH_STRATEGY"  // ring (default), tree, ps, ...
	EnvOptions   = "DISTBENCH_OPTIONS"   // the strategy's options: key=value,key=value
	EnvTransport = "DISTBENCH_TRANSPORT" // tcp (default), auto, shm
	EnvLink      = "DISTBENCH_LINK"      // link shaping, as --link takes it
	EnvTimeout   = "DISTBENCH_TIMEOUT"   // per operation: a Go duration or seconds
	EnvOut       = "DISTBENCH_OUT"       // directory for results.jsonl; rank 0 writes
	EnvModel     = "DISTBENCH_MODEL"     // the job's name in step records; default "torch job"
	// EnvTorchStore says the store at MASTER_ADDR:MASTER_PORT (or
	// DISTBENCH_INIT's address) is torch's c10d TCPStore, as it is
	// whenever torch's own env:// or tcp:// rendezvous ran first: the
	// Python backend sets it.
	EnvTorchStore = "DISTBENCH_TORCH_STORE"
)

// DefaultStrategy is the strategy when DISTBENCH_STRATEGY is unset.
const DefaultStrategy = "ring"

// Settings are what Open builds a communicator from.
type Settings struct {
	Strategy   string
	Options    map[string]string
	Transport  string
	Link       string
	Timeout    time.Duration // 0: collective.DefaultTimeout
	Out        string
	Model      string
	URL        string // rendezvous URL; default env://
	JobID      string
	Token      []byte
	Torch      bool // the store is torch's TCPStore
	Rank, Size int  // -1: from the launcher's environment
	ListenHost string
	Spin       time.Duration
}

// SettingError is a setting that is not accepted: one line naming it and
// what is accepted. It matches collective.ErrInvalid.
type SettingError struct{ Err error }

func (e *SettingError) Error() string        { return e.Err.Error() }
func (e *SettingError) Unwrap() error        { return e.Err }
func (e *SettingError) Is(target error) bool { return target == collective.ErrInvalid }

// SettingsFromEnv reads the settings and checks them before anything
// touches the network: an unknown strategy, option, transport or link is
// a *SettingError.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	s, err := settingsFromEnv(getenv)
	if err != nil {
		return s, &SettingError{err}
	}
	return s, nil
}

func settingsFromEnv(getenv func(string) string) (Settings, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	s := Settings{
		Strategy:   strings.TrimSpace(getenv(EnvStrategy)),
		Transport:  strings.TrimSpace(getenv(EnvTransport)),
		Link:       strings.TrimSpace(getenv(EnvLink)),
		Out:        getenv(EnvOut),
		Model:      getenv(EnvModel),
		URL:        getenv(launch.EnvInit),
		JobID:      getenv(launch.EnvJobID),
		Rank:       -1,
		Size:       -1,
		ListenHost: launch.ListenHost(getenv),
		Spin:       launch.Spin(getenv),
	}
	if s.Strategy == "" {
		s.Strategy = DefaultStrategy
	}
	if s.Model == "" {
		s.Model = "torch job"
	}
	if s.URL == "" {
		s.URL = "env://"
	}
	if s.JobID == "" {
		// torchrun names each run; without it every job on a store is
		// "distbench-torch", which is enough for one job per store.
		s.JobID = "distbench-torch"
		if id := getenv("TORCHELASTIC_RUN_ID"); id != "" {
			s.JobID = "torch-" + id
		}
	}
	s.Token = []byte(s.JobID)
	var err error
	if s.Torch, err = parseBool(EnvTorchStore, getenv(EnvTorchStore)); err != nil {
		return s, err
	}
	st, err := collective.Lookup(s.Strategy)
	if err != nil {
		return s, fmt.Errorf("%s: %w", EnvStrategy, err)
	}
	if s.Options, err = ParseOptions(getenv(EnvOptions)); err != nil {
		return s, err
	}
	if v, ok := st.(collective.OptionValidator); ok {
		if err := v.ValidateOptions(s.Options); err != nil {
			return s, fmt.Errorf("%s: %s: %w", EnvOptions, s.Strategy, err)
		}
	}
	if s.Transport != "" {
		if err := linkspec.CheckTransport(s.Transport); err != nil {
			return s, fmt.Errorf("%s: %w", EnvTransport, err)
		}
	}
	if s.Link != "" {
		if _, err := linkspec.ParseRankLinks(s.Link); err != nil {
			return s, fmt.Errorf("%s: %w", EnvLink, err)
		}
	}
	if s.Timeout, err = parseTimeout(getenv(EnvTimeout)); err != nil {
		return s, err
	}
	for _, v := range []struct {
		name string
		dst  *int
	}{{"RANK", &s.Rank}, {"WORLD_SIZE", &s.Size}} {
		if raw := strings.TrimSpace(getenv(v.name)); raw != "" {
			n, err := strconv.Atoi(raw)
			if err != nil || n < 0 {
				return s, fmt.Errorf("%s=%q: want a non-negative integer", v.name, raw)
			}
			*v.dst = n
		}
	}
	return s, nil
}

// ParseOptions reads "key=value,key=value" (spaces around either ignored).
func ParseOptions(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	opts := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: %q is not key=value (accepted: key=value,key=value, e.g. chunk=256KiB)", EnvOptions, strings.TrimSpace(kv))
		}
		opts[k] = v
	}
	return opts, nil
}

func parseTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil && secs > 0 {
		return time.Duration(secs * float64(time.Second)), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("%s=%q: want a positive duration (accepted: seconds, or a Go duration such as 90s or 2m)", EnvTimeout, s)
}

func parseBool(name, s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "0", "false", "no":
		return false, nil
	case "1", "true", "yes":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q: want 1 or 0", name, s)
}
