#!/usr/bin/env bash
# The GPU proof (issue #32), in two halves, so that the minutes on a lent
# GPU go to measuring, not building or debugging (docs/gpu.md):
#
#   scripts/gpu-proof.sh bundle     here: builds .gpu-proof/ (ignored by git), what the
#                                   device tool carries: the cgo distbench, `go test -c`
#                                   binaries of the GPU-facing packages, nccl-tests' source
#   scripts/gpu-proof.sh run [OUT]  there (no Go; nvcc, nvidia-smi, PyTorch's venv): unpacks
#                                   it, measures, and writes log.txt, summary.md,
#                                   gpu-check.json and proof.tar.gz (run directories with
#                                   their reports and plots, every step's log) to OUT ($OUT
#                                   under the device tool)
#
# run's steps each have a deadline, and the whole a budget (GPU_PROOF_BUDGET,
# 420 s): a step that would pass it is skipped, saying so, and what was
# measured is packed whatever happened. Rehearsed without a GPU against the
# stand-in libraries: DISTBENCH_NCCL_LIB=bin/standin/libnccl.so.2
# DISTBENCH_CUDART_LIB=bin/standin/libnccl.so.2 scripts/gpu-proof.sh run /tmp/proof
#
# NCCL_TESTS_SRC names nccl-tests' source for bundle (a checkout, or a bare
# git repository, e.g. the fetch tool's mirror); without it all_reduce_perf
# is skipped there.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bundle_dir=${GPU_PROOF_DIR:-$root/.gpu-proof}
# The sizes and iterations distbench run and all_reduce_perf share (make gpu-check's).
SIZES=${GPU_PROOF_SIZES:--b 8 -e 256M -f 8 -n 20 -w 5}

bundle() {
	set -e
	local go=${GO:-go}
	[ "$($go env CGO_ENABLED)" = 1 ] || { echo "gpu-proof: cgo is off; the GPU path needs it (CGO_ENABLED=1 and a C compiler)" >&2; exit 2; }
	rm -rf "$bundle_dir"
	local stage
	stage=$(mktemp -d)
	mkdir -p "$bundle_dir" "$stage/bin"
	echo "gpu-proof: building the binaries"
	(cd "$root" && $go build -trimpath -ldflags='-s -w' -o "$stage/bin/distbench" ./cmd/distbench)
	for p in strategies/nccl internal/cuda internal/telemetry; do
		(cd "$root" && $go test -c -trimpath -ldflags='-s -w' -o "$stage/bin/$(basename $p).test" "./$p")
	done
	tar -C "$stage" -cJf "$bundle_dir/bin.tar.xz" bin
	local src=${NCCL_TESTS_SRC:-}
	if [ -z "$src" ] && [ -d /work/.mirror/NVIDIA+nccl-tests/repo ]; then src=/work/.mirror/NVIDIA+nccl-tests/repo; fi
	if [ -n "$src" ] && git -C "$src" rev-parse --verify -q HEAD >/dev/null 2>&1; then
		git -C "$src" archive --prefix=nccl-tests/ HEAD | gzip -9 >"$bundle_dir/nccl-tests.tar.gz"
		echo "nccl-tests $(git -C "$src" log -1 --format='%h %s' HEAD)" >>"$stage/manifest"
	elif [ -n "$src" ] && [ -f "$src/src/Makefile" ]; then
		tar -C "$(dirname "$src")" -czf "$bundle_dir/nccl-tests.tar.gz" --transform "s,^$(basename "$src"),nccl-tests," "$(basename "$src")"
		echo "nccl-tests from $src" >>"$stage/manifest"
	else
		echo "gpu-proof: no nccl-tests source (set NCCL_TESTS_SRC); all_reduce_perf will be skipped there" >&2
	fi
	{
		echo "distbench $(git -C "$root" describe --always --dirty 2>/dev/null) built $(date -u +%FT%TZ) with $($go version)"
		cat "$stage/manifest" 2>/dev/null || true
		(cd "$stage" && ls -l bin)
	} >"$bundle_dir/MANIFEST"
	rm -rf "$stage"
	local size
	size=$(du -sb "$bundle_dir" | cut -f1)
	echo "gpu-proof: $bundle_dir holds $((size / 1024 / 1024)) MiB; carry it: carry [\".gpu-proof\"], command: bash scripts/gpu-proof.sh run"
	if [ "$size" -gt $((48 * 1024 * 1024)) ]; then
		echo "gpu-proof: over 48 MiB: with the working tree it may pass the device tool's 64 MiB" >&2
		exit 1
	fi
}

# ---- run, on the GPU machine -------------------------------------------------

run() {
	local out=${1:-${OUT:-$root/runs/gpu-proof-$(date +%Y%m%d-%H%M%S)}}
	mkdir -p "$out"
	work=$(mktemp -d /tmp/gpu-proof.XXXXXX)
	mkdir -p "$work/logs" "$work/runs"
	exec 3>&1 > >(tee -a "$out/log.txt") 2>&1
	local tee=$!
	budget=${GPU_PROOF_BUDGET:-420}
	start=$SECONDS
	status=()
	echo "gpu-proof: $(date -u +%FT%TZ) on $(hostname), budget ${budget}s, work in $work, out $out"
	cat "$bundle_dir/MANIFEST" 2>/dev/null || { echo "gpu-proof: no $bundle_dir/MANIFEST: make gpu-proof-bundle here first, and carry .gpu-proof"; }
	# tar's xz, or Python's lzma where the image has no xz.
	tar -xJf "$bundle_dir/bin.tar.xz" -C "$work" 2>/dev/null ||
		python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle_dir/bin.tar.xz" "$work" ||
		{ echo "gpu-proof: cannot unpack $bundle_dir/bin.tar.xz"; pack "$out"; return 1; }
	B=$work/bin

	step env 30 bash -c "$(declare -f environment); environment"
	step gpu-check 60 "$B/distbench" gpu-check
	timeout 60 "$B/distbench" gpu-check --json >"$work/gpu-check.json" 2>/dev/null
	cp "$work/gpu-check.json" "$out/gpu-check.json"
	nccl_path=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nccl"].get("path",""))' "$work/gpu-check.json" 2>/dev/null)
	nccl_dir=$(dirname "${nccl_path:-.}")
	nccl_tests_build &
	local build=$!

	# The packages' tests on the real libraries (DISTBENCH_REAL_LIBS=1: none
	# of the stand-ins), each run in its directory, for its testdata; they
	# check, so nvcc building nccl-tests meanwhile costs nothing but time.
	step test-nccl 150 env -C "$root/strategies/nccl" DISTBENCH_REAL_LIBS=1 "$B/nccl.test" -test.run 'TestAvailable|TestOneRankNCCL|TestConformance' -test.short -test.v -test.timeout 140s
	step test-cuda 60 env -C "$root/internal/cuda" DISTBENCH_REAL_LIBS=1 "$B/cuda.test" -test.run 'TestMemory|TestNoDevice|TestPlace$' -test.v -test.timeout 50s
	step test-nvml 30 env -C "$root/internal/telemetry" "$B/telemetry.test" -test.run 'TestRealNVML' -test.v -test.timeout 25s
	# NCCL's answer to two ranks on one GPU (it has refused them so far).
	step nccl-np2-one-gpu 60 "$B/distbench" run --strategy nccl --np 2 --device cuda -b 8 -e 1M -f 32 -n 5 -w 1 --timeout 40s

	# Nothing times while nvcc builds: wait for it (within the budget).
	while kill -0 "$build" 2>/dev/null && [ $((budget - (SECONDS - start))) -gt 200 ]; do sleep 1; done
	kill -0 "$build" 2>/dev/null && echo "gpu-proof: nccl-tests still building; going on without it"

	# nccl through distbench beside nccl-tests, the same flags, one GPU.
	step run-nccl 90 env NCCL_DEBUG=VERSION "$B/distbench" run --strategy nccl --np 1 --device cuda $SIZES -J "$work/runs/distbench-nccl.json" --json "$work/runs/distbench-nccl.jsonl"
	if [ -x "$work/nccl-tests/build/all_reduce_perf" ]; then
		step all_reduce_perf 90 env NCCL_DEBUG=VERSION LD_LIBRARY_PATH="$nccl_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/nccl-tests/build/all_reduce_perf" $SIZES -g 1 -J "$work/runs/all_reduce_perf.json"
	else
		echo "== all_reduce_perf: skipped, not built (logs/nccl-tests-build.txt)"
		status+=("all_reduce_perf|skipped|0")
	fi

	# ring, tree and ps at np 2 and 4 sharing the GPU, on device buffers and
	# on host buffers: the difference is the staging copies' share. Every
	# point checked (#wrong), NVML sampled.
	step sweep-staged 150 "$B/distbench" sweep --strategy ring,tree,ps --np 2,4 --device cpu,cuda --collective allreduce \
		--sizes 4KiB,256KiB,16MiB --iters 10 --out "$work/runs/staged"
	step env-after 20 nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,TEMPERATURE
	pack "$out"
	# Let tee write the last lines before the device tool collects $OUT.
	exec >&3 2>&3
	wait "$tee" 2>/dev/null
}

# step NAME SECONDS CMD...: runs CMD under a deadline of SECONDS (less where
# the budget has less), its output in logs/NAME.txt and its tail here.
step() {
	local name=$1 secs=$2
	shift 2
	local left=$((budget - (SECONDS - start) - 20))
	if [ "$left" -lt 10 ]; then
		echo "== $name: skipped, the budget is spent"
		status+=("$name|skipped|0")
		return 0
	fi
	[ "$secs" -gt "$left" ] && secs=$left
	local line="$*"
	[ "${#line}" -gt 240 ] && line="${line:0:240}..."
	echo "== $name (at most ${secs}s): $line"
	local t0=$SECONDS rc
	timeout -k 5 "$secs" "$@" >"$work/logs/$name.txt" 2>&1 </dev/null
	rc=$?
	tail -n 40 "$work/logs/$name.txt"
	[ "$rc" = 124 ] && echo "== $name: TIMED OUT after ${secs}s"
	echo "== $name: exit $rc in $((SECONDS - t0))s"
	status+=("$name|$rc|$((SECONDS - t0))")
}

environment() {
	uname -a
	command -v nvidia-smi >/dev/null && nvidia-smi && nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,MEMORY | head -80 || echo "nvidia-smi: not found"
	command -v nvcc >/dev/null && nvcc --version || echo "nvcc: not found"
	echo "python3: $(command -v python3)"
	python3 - <<-'EOF' 2>&1 || true
		import sys
		print("sys.prefix", sys.prefix)
		try:
		    import torch
		    print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
		    print("torch nccl", torch.cuda.nccl.version())
		except Exception as e:
		    print("torch:", e)
	EOF
	env | grep -E '^(CUDA|NCCL|LD_LIBRARY_PATH|VIRTUAL_ENV|CONDA|PATH)' | sort
}

# nccl_tests_build builds all_reduce_perf with nvcc, for this GPU's
# architecture only (minutes less than nccl-tests' default list), against
# the NCCL gpu-check found, with its headers (the wheel's include/ beside its
# lib/, or the system's); in the background, while the tests run.
nccl_tests_build() {
	local log=$work/logs/nccl-tests-build.txt
	{
		if [ ! -f "$bundle_dir/nccl-tests.tar.gz" ]; then echo "no nccl-tests source carried"; exit 0; fi
		if ! command -v nvcc >/dev/null; then echo "no nvcc"; exit 0; fi
		if [ -z "$nccl_path" ] || [ ! -f "$nccl_path" ]; then echo "gpu-check found no NCCL file ($nccl_path)"; exit 0; fi
		local inc
		for inc in "$nccl_dir/../include" /usr/include /usr/local/cuda/include; do [ -f "$inc/nccl.h" ] && break; done
		[ -f "$inc/nccl.h" ] || { echo "no nccl.h beside $nccl_dir"; exit 0; }
		mkdir -p "$work/ncclhome/lib"
		ln -sfn "$(cd "$inc" && pwd)" "$work/ncclhome/include"
		ln -sf "$nccl_path" "$work/ncclhome/lib/libnccl.so"
		tar -xzf "$bundle_dir/nccl-tests.tar.gz" -C "$work"
		local cc
		cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
		local cuda_home
		cuda_home=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
		echo "building all_reduce_perf: nvcc of $cuda_home, sm_${cc:-90}, NCCL $nccl_path, headers $inc"
		timeout -k 5 300 make -C "$work/nccl-tests/src" -j"$(nproc)" ../build/all_reduce_perf MPI=0 \
			CUDA_HOME="$cuda_home" NCCL_HOME="$work/ncclhome" NVCC_GENCODE="-gencode=arch=compute_${cc:-90},code=sm_${cc:-90}"
		echo "make: exit $?"
	} >"$log" 2>&1
	tail -n 3 "$log" | sed 's/^/nccl-tests build: /'
}

# pack writes summary.md and proof.tar.gz beside log.txt.
pack() {
	local out=$1
	{
		echo "# GPU proof, $(date -u +%FT%TZ), $(hostname)"
		echo
		echo "| step | exit | seconds |"
		echo "|---|---|---|"
		local s
		for s in "${status[@]}"; do echo "| ${s//|/ | } |"; done
		echo
		echo '## gpu-check'
		echo '```'
		cat "$work/logs/gpu-check.txt" 2>/dev/null
		echo '```'
		for s in run-nccl all_reduce_perf; do
			echo "## $s"
			echo '```'
			grep -vE '^(nccl-tests build|$)' "$work/logs/$s.txt" 2>/dev/null | tail -n 40
			echo '```'
		done
		echo '## staging copies: device buffers against host buffers, ring, tree and ps sharing one GPU'
		staged_table "$work/runs/staged/results.jsonl"
		echo
		echo "The sweep's report, with its plots and GPU telemetry: runs/staged/report.md in proof.tar.gz."
	} >"$out/summary.md" 2>&1
	tar -C "$work" -czf "$out/proof.tar.gz" logs runs gpu-check.json 2>/dev/null
	echo "gpu-proof: done in $((SECONDS - start))s: $(ls "$out" | tr '\n' ' ')"
}

# staged_table: per strategy, np and size, the median time on host buffers,
# on device buffers, and the difference (the staging copies) as a share of
# the device time; #wrong summed over both.
staged_table() {
	[ -f "$1" ] || { echo "(no results)"; return; }
	python3 - "$1" <<-'EOF'
		import json, sys
		rows = {}
		for line in open(sys.argv[1]):
		    r = json.loads(line)
		    if r.get("kind") != "collective" or r.get("peer"):
		        continue
		    k = (r["strategy"], r["np"], r["bytes"])
		    rows.setdefault(k, {})[r.get("device") or "cpu"] = r
		print("| strategy | np | bytes | host us | device us | staging share | #wrong | errors |")
		print("|---|---|---|---|---|---|---|---|")
		for (s, n, b), d in sorted(rows.items()):
		    h, c = d.get("cpu"), d.get("cuda")
		    ht = h["time_us"] if h else float("nan")
		    ct = c["time_us"] if c else float("nan")
		    share = (ct - ht) / ct if h and c and ct > 0 else float("nan")
		    wrong = sum(x.get("wrong", 0) for x in d.values())
		    errs = "; ".join(x["error"] for x in d.values() if x.get("error"))
		    print(f"| {s} | {n} | {b} | {ht:.1f} | {ct:.1f} | {share:.0%} | {wrong} | {errs} |")
	EOF
}

case "${1:-}" in
bundle) bundle ;;
run)
	shift
	run "$@"
	;;
*)
	echo "usage: scripts/gpu-proof.sh bundle | run [OUT]   (see docs/gpu.md)" >&2
	exit 2
	;;
esac
