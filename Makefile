# distbench: `make sweep` measures, `make test` checks. See README.md.
GO      ?= go
BIN     := bin/distbench
PKGS    := ./...

.PHONY: all build test test-short lint sweep bench data peers soak tune clean perf-links

all: build capi

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/distbench  # results name the commit they measured

# The C interface (capi/distbench.h) as a shared library, for the PyTorch
# backend in python/ and any other C caller: the same strategies, built
# from the same packages as the binary.
.PHONY: capi
capi:
	$(GO) build -buildvcs=auto -buildmode=c-shared -o bin/libdistbench.so ./capi
	rm -f bin/libdistbench.h  # cgo's own header; capi/distbench.h is the interface

# vet first (fast, catches the obvious), then every test under the race
# detector, through internal/cmd/testprogress: a line per package as it
# finishes, the output of failed tests, and what is running whenever a
# minute passes in silence. About 26 minutes on a busy 2-core machine, the
# first minutes of it building; test-short is the quick look (CONTRIBUTING.md).
test:
	@echo "make test: go vet, then the tests of $$($(GO) list $(PKGS) | wc -l) packages under -race (about 26 minutes on a busy 2-core machine)"
	$(GO) vet $(PKGS)
	@$(GO) build -o bin/testprogress ./internal/cmd/testprogress
	bin/testprogress -of $$($(GO) list $(PKGS) | wc -l) -- $(GO) test -json -race -count=1 -timeout 25m $(PKGS)

test-short:
	$(GO) test -short -count=1 $(PKGS)

# The race-enabled tests of the transport, the engine, ring, tree and
# training (and the CLI's training run) STRESS_COUNT times over while
# stress-ng keeps STRESS_CPUS workers spinning: the load under which races
# and timing assumptions show. The conformance suites, minutes each under
# -race and over the in-memory transport, are left to `make test`
# (STRESS_SKIP= runs them too). stress-ng stops when the run ends, however
# it ends; a failure in the first run does not skip the second.
STRESS_COUNT   ?= 4
STRESS_CPUS    ?= 4
STRESS_TIMEOUT ?= 30m
STRESS_SKIP    ?= ^Test(Simple)?Conformance
STRESS_PKGS    ?= ./internal/transport/... ./internal/core/... ./strategies/ring/... ./strategies/tree/... ./workloads/train/...

.PHONY: stress
stress:
	@command -v stress-ng >/dev/null 2>&1 || { echo "make stress: stress-ng not found; install it (Debian/Ubuntu: apt-get install stress-ng)" >&2; exit 2; }
	$(GO) test -race -count=1 -run '^$$' $(STRESS_PKGS) ./cmd/distbench >/dev/null  # build before loading the CPU
	@stress-ng --cpu $(STRESS_CPUS) --timeout $(STRESS_TIMEOUT) --quiet & load=$$!; \
	trap 'kill $$load 2>/dev/null; wait $$load 2>/dev/null' EXIT; trap 'exit 130' INT TERM HUP; \
	start=$$(date +%s); \
	$(GO) test -race -count=$(STRESS_COUNT) -timeout $(STRESS_TIMEOUT) -skip '$(STRESS_SKIP)' $(STRESS_PKGS); a=$$?; \
	$(GO) test -race -count=$(STRESS_COUNT) -timeout $(STRESS_TIMEOUT) -run '^TestTrainSchedule$$' ./cmd/distbench; b=$$?; \
	rc=$$(( a > b ? a : b )); echo "make stress: exit $$rc after $$(( $$(date +%s) - start ))s beside stress-ng --cpu $(STRESS_CPUS), -count $(STRESS_COUNT)"; exit $$rc

# distbench under a real Slurm: a one-node cluster on loopback (its own
# munged, slurmctld and slurmd, stopped however the test ends) and the tests
# that run `--launcher srun` on it. Without root or Debian's slurm-wlm and
# munge it says so and skips.
.PHONY: slurm-test
slurm-test:
	@dir=$$(mktemp -d -u /tmp/distbench-slurm.XXXXXX); \
	if ! conf=$$(scripts/slurm-local.sh start $$dir); then echo "make slurm-test: skipped: no Slurm cluster could start here"; exit 0; fi; \
	trap 'scripts/slurm-local.sh stop '$$dir EXIT; trap 'exit 130' INT TERM HUP; \
	export $$conf; $(GO) test -count=1 -run '^TestSlurm$$' -v ./cmd/distbench

# gofmt, vet, and go.mod/go.sum exactly as `go mod tidy` would leave them.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@cp go.mod /tmp/distbench-go.mod.bak && cp go.sum /tmp/distbench-go.sum.bak && \
	  $(GO) mod tidy && \
	  if ! git diff --quiet -- go.mod go.sum; then echo "go mod tidy changes go.mod/go.sum:"; git --no-pager diff -- go.mod go.sum; \
	    cp /tmp/distbench-go.mod.bak go.mod; cp /tmp/distbench-go.sum.bak go.sum; exit 1; fi

# The main job: the embedded default plan on this machine, then the report.
# Its training runs need MNIST: fetched first from the Go module proxy; where
# that fails, the sweep leaves training out and the report says so.
sweep: build
	@[ -s data/mnist/t10k-labels-idx1-ubyte.gz ] || ./scripts/fetch-data.sh data mnist || echo "make sweep: no MNIST; training will be left out" >&2
	$(BIN) sweep

# 30 minutes of checked allreduces through every strategy at np 2-8, watching
# goroutines and memory; run it beside `stress-ng --cpu 4` to soak under load.
soak: build
	$(BIN) soak --duration $${SOAK_DURATION:-30m} --np 2,3,4,5,6,7,8

# Regenerate docs/tuning/*.tsv, the tables behind the tuned constants
# (docs/tuning.md), on this machine. TUNE_ROUNDS=1 TUNE_QUICK=1 checks that
# it works in minutes; TUNE_TABLES picks tables (noise-factor, hours, is
# made only when named). See scripts/tune.sh for every knob.
tune: build
	DISTBENCH=$(BIN) ./scripts/tune.sh

# Go benchmarks of the hot paths (kernels, transport, strategies).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2x ./...

# Real datasets for the training workloads (MNIST from the Go module cache,
# Fashion-MNIST from Debian's dataset-fashion-mnist when installed).
data:
	./scripts/fetch-data.sh data

# Reference implementations measured beside distbench (Open MPI, gloo).
peers:
	apt-get install -y openmpi-bin python3-mpi4py python3-torch

clean:
	rm -rf bin dist

# The CPU image (deploy/image/Containerfile: the static binary on an empty
# base) built with buildah or podman and no registry, and a checked
# allreduce run in it; skipped, saying why, where no container can run.
.PHONY: image
image:
	scripts/image-check.sh

# Release archives of HEAD into dist/: linux/amd64 and linux/arm64 static,
# cgo builds for GPU machines, SHA256SUMS; reproducible (scripts/release.sh).
.PHONY: release release-check
release:
	scripts/release.sh dist

# Two releases of HEAD from two clones, the second with an empty build
# cache: every archive must be byte-identical.
release-check:
	@a=$$(mktemp -d /tmp/distbench-release-check.XXXXXX) && trap 'chmod -R u+w '$$a'; rm -rf '$$a EXIT && export RELEASE_REV=$$(git rev-parse HEAD) && \
	scripts/release.sh $$a/one >/dev/null && GOCACHE=$$a/gocache scripts/release.sh $$a/two >/dev/null && \
	if cmp -s $$a/one/SHA256SUMS $$a/two/SHA256SUMS; then cat $$a/one/SHA256SUMS; echo "make release-check: two builds, the second with an empty build cache, are byte-identical"; \
	else diff $$a/one/SHA256SUMS $$a/two/SHA256SUMS; echo "make release-check: the archives differ between two builds" >&2; exit 1; fi

# nccl-tests' program names as links to distbench, which then runs as
# `distbench run --collective ...` with nccl-tests' defaults, so that
# runbooks' command lines paste in: bin/all_reduce_perf -b 8 -e 128M -f 2 -g 8.
# PREFIX=/usr/local/bin puts them beside an installed distbench instead.
PERF_PROGRAMS := all_reduce_perf all_gather_perf broadcast_perf reduce_perf reduce_scatter_perf alltoall_perf sendrecv_perf gather_perf scatter_perf
PREFIX ?= bin
perf-links: build
	@mkdir -p $(PREFIX)
	@for p in $(PERF_PROGRAMS); do ln -sf $(abspath $(BIN)) $(PREFIX)/$$p; done
	@echo "linked $(PERF_PROGRAMS) in $(PREFIX) to $(BIN)"

# For machines with NVIDIA GPUs, NCCL (libnccl.so.2) and the CUDA runtime:
# the conformance suite through the real libraries (at the world sizes
# there are GPUs for), on host and on device tensors; the device memory and
# NVML telemetry tests on the real runtime and driver; allreduce through
# nccl and through ring on device buffers at the same sizes, and through
# nccl-tests' all_reduce_perf where it is on the PATH, side by side with the
# same busbw definitions; then a sweep of allreduce through nccl, ring, tree
# and ps on device buffers, with GPU telemetry in its records and report
# (GPU_RUN). All of this has been tested only against the stand-in the
# tests build, Debian's CUDA runtime and NVML (no driver) and go-nvml's
# mock until someone runs it on a GPU. GPU_NP defaults to the GPUs
# nvidia-smi lists.
GPU_NP    ?= $(shell n=$$(nvidia-smi -L 2>/dev/null | wc -l); [ "$$n" -gt 0 ] && echo $$n || echo 2)
GPU_SIZES ?= -b 8 -e 256M -f 8 -n 20 -w 5  # flags distbench run and all_reduce_perf share
ifndef GPU_RUN
GPU_RUN := runs/gpu-check-$(shell date +%Y%m%d-%H%M%S)
endif

.PHONY: gpu-check
gpu-check: build
	-$(BIN) gpu-check
	$(BIN) strategies | grep '^nccl '
	@if $(BIN) strategies | grep '^nccl .*unavailable here'; then echo "make gpu-check: the nccl strategy cannot run here (see above)" >&2; exit 2; fi
	DISTBENCH_REAL_LIBS=1 $(GO) test -count=1 -v -run 'TestAvailable|TestOneRankNCCL|TestConformance' ./strategies/nccl
	$(GO) test -count=1 -v -run 'TestNoDevice|TestRealNVML' ./internal/cuda ./internal/telemetry
	$(BIN) run --strategy nccl --np $(GPU_NP) --device cuda $(GPU_SIZES)
	$(BIN) run --strategy ring --np $(GPU_NP) --device cuda $(GPU_SIZES)
	@if command -v all_reduce_perf >/dev/null 2>&1; then \
	  echo "nccl-tests all_reduce_perf, one process and $(GPU_NP) GPUs:"; all_reduce_perf -g $(GPU_NP) $(GPU_SIZES); \
	else echo "make gpu-check: all_reduce_perf (nccl-tests) not on the PATH; skipped"; fi
	$(BIN) sweep --strategy nccl,ring,tree,ps --np $(GPU_NP) --collective allreduce --device cuda $(GPU_SIZES) --out $(GPU_RUN)
	@echo "make gpu-check: the device sweep, with GPU telemetry, is in $(GPU_RUN) (report.md)"

# The GPU proof's bundle (docs/gpu.md): the cgo distbench, the GPU-facing
# packages' test binaries and nccl-tests' source (NCCL_TESTS_SRC) in
# .gpu-proof/, which the device tool carries; scripts/gpu-proof.sh run
# measures with it on the GPU machine. make gpu-proof rehearses that run
# here against the stand-in (GPU_PROOF_OUT).
GPU_PROOF_OUT ?= runs/gpu-proof-standin
.PHONY: gpu-proof-bundle gpu-proof
gpu-proof-bundle:
	scripts/gpu-proof.sh bundle
gpu-proof: gpu-proof-bundle standin
	DISTBENCH_NCCL_LIB=$(CURDIR)/bin/standin/libnccl.so.2 DISTBENCH_CUDART_LIB=$(CURDIR)/bin/standin/libnccl.so.2 \
	  GPU_PROOF_SIZES='-b 8 -e 4M -f 8 -n 5 -w 2' scripts/gpu-proof.sh run $(GPU_PROOF_OUT)

# The stand-in NCCL and CUDA runtime the nccl strategy's tests build, for
# trying the strategy by hand where there is no GPU (see README.md).
.PHONY: standin
standin:
	mkdir -p bin/standin
	$${CC:-cc} -shared -fPIC -O2 -pthread -o bin/standin/libnccl.so.2 strategies/nccl/testdata/standin.c
