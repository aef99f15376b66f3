# distbench: `make sweep` measures, `make test` checks. See README.md.
GO      ?= go
BIN     := bin/distbench
PKGS    := ./...

.PHONY: all build test test-short lint sweep bench data peers soak clean

all: build

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/distbench  # results name the commit they measured

# vet first (fast, catches the obvious), then every test under the race detector.
test:
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 25m $(PKGS)

test-short:
	$(GO) test -short -count=1 $(PKGS)

# gofmt, vet, and go.mod/go.sum exactly as `go mod tidy` would leave them.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@cp go.mod /tmp/distbench-go.mod.bak && cp go.sum /tmp/distbench-go.sum.bak && \
	  $(GO) mod tidy && \
	  if ! git diff --quiet -- go.mod go.sum; then echo "go mod tidy changes go.mod/go.sum:"; git --no-pager diff -- go.mod go.sum; \
	    cp /tmp/distbench-go.mod.bak go.mod; cp /tmp/distbench-go.sum.bak go.sum; exit 1; fi

# The main job: the embedded default plan on this machine, then the report.
sweep: build
	$(BIN) sweep

# 30 minutes of checked allreduces through every strategy at np 2-8, watching
# goroutines and memory; run it beside `stress-ng --cpu 4` to soak under load.
soak: build
	$(BIN) soak --duration $${SOAK_DURATION:-30m} --np 2,3,4,5,6,7,8

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
	rm -rf bin
