package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/harness/launch"
	"github.com/distbench/distbench/internal/linkspec"
	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/workloads/data"
	"github.com/distbench/distbench/workloads/nn"
	"github.com/distbench/distbench/workloads/train"
)

// trainEmit prints each epoch's line on stdout, a status line between them
// on status (nil: none), and records every record in w.
func trainEmit(stdout, status io.Writer, w *results.Writer, maxSteps int) func(*results.Record) error {
	var prog *trainProgress
	if status != nil {
		prog = &trainProgress{w: status, maxSteps: maxSteps}
	}
	return func(r *results.Record) error {
		if prog != nil && r.Kind == results.KindTrainStep {
			prog.step(r)
		}
		if r.Kind == results.KindTrainEpoch {
			if prog != nil {
				prog.epochDone(r)
			}
			fmt.Fprintf(stdout, "epoch %d: step %d, lr %.4g, loss %.4f, test loss %.4f, test accuracy %.2f%%, %.0f images/s, %.0fs\n",
				r.Epoch, r.Step, r.LR, r.Loss, r.TestLoss, 100*r.TestAcc, r.ImagesPerS, r.WallSeconds)
		}
		return w.Write(r)
	}
}

func newTrainCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		cfg      train.Config
		strategy string
		np       int
		out      string
		timeout  time.Duration
		opts     []string
		link     string
		trans    string
		launcher string
		engArgs  []string
	)
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a real model on real data with synchronous data-parallel SGD through a strategy",
		Long: `Train a real model on real data with synchronous data-parallel SGD through a strategy.

The learning rate starts at --lr and follows --lr-schedule, stepped once per
epoch as torch's schedulers are (epoch e, from 0, trains at the schedule's
rate for e), in every mode: in ps-sync and ps-async each gradient push
carries the rate to the servers, which run the optimizer.

  constant                    --lr throughout (the default)
  step:EVERY:GAMMA            ×GAMMA every EVERY epochs (StepLR)
  multistep:M1,M2,...:GAMMA   ×GAMMA at each epoch Mi (MultiStepLR; ResNet: 30,60,80:0.1)
  cosine, cosine:MIN          from --lr down to MIN (default 0) over --epochs (CosineAnnealingLR)

--lr-warmup N ramps up linearly over the first N epochs: epoch e < N trains at
(e+1)/(N+1) of the schedule's rate, so the ramp is even and independent of
--np (torch's LinearLR starts at 1/3, Goyal et al. at lr/k for k workers).
Every step and epoch record carries the rate it trained at (lr).

Modes (--mode): ddp allreduces gradient buckets as backward produces them;
tutorial allreduces each gradient after backward; dp is torch's DataParallel:
rank 0 is the master, and every step it broadcasts the parameters, scatters
the global batch, gathers the outputs, computes the loss and scatters its
gradient back, reduces the gradients and steps the optimizer alone (the same
learning as ddp; every transfer timed in the records, and each rank's wait);
ps-sync and ps-async (--strategy ps) push gradients to parameter servers.`,
		Example: `  distbench train --model lenet --dataset mnist --strategy ring --np 2 --epochs 2 --batch 128 --lr 0.01 --momentum 0.5
  distbench train --model resnet20 --dataset fashion-mnist --strategy ring --np 2 --mode ddp --bucket-mb 25
  distbench train --model resnet20 --dataset fashion-mnist --strategy tree --np 4 --mode dp --link 10Gbit,25us
  distbench train --model resnet20 --dataset cifar10 --augment --epochs 90 --lr 0.1 --momentum 0.9 --lr-schedule multistep:30,60,80:0.1 --lr-warmup 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := collective.Lookup(strategy); err != nil {
				return usageError{err}
			}
			if err := linkspec.CheckTransport(trans); err != nil {
				return usagef("--transport: %v", err)
			}
			if launcher == "env" {
				// The engine's world size, less a parameter server's
				// dedicated servers (its last ranks); --np, if given, must
				// agree.
				o, err := parseOpts(opts)
				if err != nil {
					return usageError{err}
				}
				n, err := harness.EngineNP(os.Getenv, strategy, o, np, cmd.Flags().Changed("np"))
				if err != nil {
					return usageError{err}
				}
				np = n
			}
			if np < 1 {
				return usagef("--np %d: must be at least 1", np)
			}
			if cfg.DataDir == "" {
				cfg.DataDir = data.DefaultDir(cfg.Dataset)
			}
			if err := cfg.Validate(np); err != nil {
				return usageError{err}
			}
			if abs, err := filepath.Abs(cfg.DataDir); err == nil {
				cfg.DataDir = abs // workers may start elsewhere
			}
			if err := checkData(cfg.Dataset, cfg.DataDir); err != nil {
				return usageError{err}
			}
			spec := &job.Spec{Strategy: strategy, NP: np, Timeout: timeout, Iters: 1, Link: link, Transport: job.CanonicalTransport(trans), Train: &cfg}
			var err error
			if spec.Options, err = parseOpts(opts); err != nil {
				return usageError{err}
			}
			if err := spec.Validate(); err != nil {
				return usageError{err}
			}
			if strings.HasPrefix(cfg.Mode, "ps-") {
				st := spec.Options["staleness"]
				switch {
				case strategy != "ps":
					return usagef("--mode %s needs --strategy ps (its servers hold the parameters)", cfg.Mode)
				case cfg.Mode == "ps-sync" && st != "" && st != "0":
					return usagef("--mode ps-sync is staleness 0; got --opt staleness=%s (use --mode ps-async)", st)
				case cfg.Mode == "ps-async" && (st == "" || st == "0"):
					return usagef("--mode ps-async needs --opt staleness=N with N > 0 (steps a worker may run ahead)")
				}
			}
			if err := checkLauncher(launcher, engArgs); err != nil {
				return usageError{err}
			}
			if out == "" {
				out = filepath.Join("runs", "train-"+time.Now().Format("20060102-150405"))
			}
			if launcher == "mpirun" || launcher == "srun" {
				cmd.Flags().Set("out", out) // the directory rank 0 writes
				k, err := harness.ServerProcesses(strategy, spec.Options, np)
				if err != nil {
					return usageError{err}
				}
				return runEngine(cmd, launcher, np+k, engArgs, stdout, stderr)
			}
			if !isRank0(launcher) {
				// One rank of an engine's job: rank 0 writes and prints.
				return harness.RunRank(cmd.Context(), spec, os.Getenv, func(*results.Record) error { return nil })
			}
			env := results.CaptureEnv()
			env.Args = os.Args
			env.Link = link
			w, err := results.NewWriter(out, env)
			if err != nil {
				return err
			}
			defer w.Close()
			sched := ""
			if cfg.LRSchedule != "" && cfg.LRSchedule != "constant" {
				sched = " " + cfg.LRSchedule
			}
			if cfg.LRWarmup > 0 {
				sched += fmt.Sprintf(" after a %d-epoch warm-up", cfg.LRWarmup)
			}
			fmt.Fprintf(stdout, "# distbench train: %s on %s, %s mode, strategy %s, np %d, transport %s, global batch %d, lr %g%s, momentum %g\n",
				cfg.Model, cfg.Dataset, cfg.Mode, strategy, np, spec.TransportName(), cfg.Batch, cfg.LR, sched, cfg.Momentum)
			emit := trainEmit(stdout, statusWriter(launcher, stderr), w, cfg.MaxSteps)
			if launcher == "env" {
				err = harness.RunRank(cmd.Context(), spec, os.Getenv, emit)
			} else {
				err = launch.Launch(cmd.Context(), launch.Options{Spec: spec, Args: []string{"worker"}, Emit: emit, Stderr: stderr})
			}
			if err != nil {
				fmt.Fprintf(stdout, "# incomplete: results so far in %s\n", out)
				return err
			}
			if err := w.Finish(); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "# results in %s (distbench report %s)\n", out, out)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&launcher, "launcher", "local", launcherUsage)
	fl.StringArrayVar(&engArgs, "launcher-arg", nil, "an argument for --launcher mpirun or srun, before the program (repeatable)")
	fl.StringVar(&cfg.Model, "model", "lenet", "model (mlp, lenet, resnet20, resnet18, resnet50)")
	fl.StringVar(&cfg.Dataset, "dataset", "mnist", "dataset (mnist, fashion-mnist, cifar10); see 'make data'")
	fl.StringVar(&cfg.DataDir, "data", "", "dataset directory (default data/<dataset>)")
	fl.StringVar(&cfg.Mode, "mode", "ddp", "gradient synchronisation: "+strings.Join(train.Modes, ", "))
	fl.IntVar(&cfg.Epochs, "epochs", 2, "epochs")
	fl.IntVar(&cfg.Batch, "batch", 128, "global batch size, split across ranks")
	fl.Float64Var(&cfg.LR, "lr", 0.01, "learning rate (the schedule's base rate)")
	fl.StringVar(&cfg.LRSchedule, "lr-schedule", "constant", "learning-rate schedule, stepped per epoch: "+nn.ScheduleSyntax)
	fl.IntVar(&cfg.LRWarmup, "lr-warmup", 0, "linear warm-up epochs N: epoch e < N trains at (e+1)/(N+1) of the scheduled rate")
	fl.Float64Var(&cfg.Momentum, "momentum", 0.5, "SGD momentum")
	fl.BoolVar(&cfg.Nesterov, "nesterov", false, "Nesterov momentum")
	fl.Float64Var(&cfg.Decay, "weight-decay", 0, "weight decay")
	fl.Float64Var(&cfg.BucketMiB, "bucket-mb", 25, "DDP gradient bucket cap in MiB")
	fl.Uint64Var(&cfg.Seed, "seed", 1, "seed for initialisation, shuffling and dropout")
	fl.IntVar(&cfg.MaxSteps, "max-steps", 0, "end each epoch after this many steps (0: the whole epoch)")
	fl.IntVar(&cfg.TestSamples, "test-samples", 0, "evaluate on the first N test images (0: the whole test set)")
	fl.BoolVar(&cfg.Augment, "augment", false, "random crop and horizontal flip")
	fl.StringVar(&strategy, "strategy", "ring", "strategy (see 'distbench strategies')")
	fl.IntVar(&np, "np", 2, "number of ranks")
	fl.StringVar(&out, "out", "", "run directory for results.jsonl (default runs/train-TIME)")
	fl.DurationVar(&timeout, "timeout", collective.DefaultTimeout, "deadline of every operation")
	fl.StringArrayVar(&opts, "opt", nil, "strategy option key=value (repeatable)")
	fl.Var(newLinkValue(&link), "link", linkUsage)
	fl.StringVar(&trans, "transport", linkspec.TransportTCP, transportUsage)
	return cmd
}

// checkData fails early, with the fix, when a dataset's files are missing.
func checkData(name, dir string) error {
	if name == "cifar10" {
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("dataset cifar10: %s not found (put the CIFAR-10 binary batches there)", dir)
		}
		return nil
	}
	img, _ := data.IDXFiles(data.Train)
	for _, f := range []string{img, img + ".gz", strings.TrimSuffix(img, ".gz")} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("dataset %s not found in %s (run 'make data', or pass --data DIR)", name, dir)
}
