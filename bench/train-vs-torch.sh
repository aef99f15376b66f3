#!/usr/bin/env bash
# train-vs-torch.sh: training compute beside PyTorch (issue 19), in one run.
# For each round, and in each round for lenet and resnet20 at np 1 and 2, it
# trains distbench (and $DISTBENCH_BEFORE, if set, the same way) and PyTorch
# 1.13 (DDP over gloo, cores/np threads per rank; bench/torch_train.py) for STEPS
# steps at global batch BATCH on Fashion-MNIST, the tools in an order rotated
# from round to round. A run's figure is the median over its steps (the first
# left out) of global batch / step seconds, distbench's per-step images/s;
# the summary is, per tool, model and np, the median over rounds, and the
# ratios to torch. Then the GEMM's GFLOP/s at ResNet-20's shapes against the
# machine's AVX2 peak (cores × GHz × 2 FMA units × 8 float32 lanes × 2
# flops, the GHz being /proc/cpuinfo's, which is the nominal clock on this
# VM; AVX-512's 16 lanes double it).
#
# Usage: bench/train-vs-torch.sh [ROUNDS] [STEPS] [BATCH]
#   DISTBENCH_BEFORE=/tmp/before bench/train-vs-torch.sh 3 20 128
# Needs Debian's python3-torch and the data (make data).
set -uo pipefail
rounds="${1:-3}"
steps="${2:-20}"
batch="${3:-128}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${DISTBENCH:-$root/bin/distbench}"
data="${DATA:-$root/data/fashion-mnist}" # DATA: a copy with a short test set makes runs quicker
py=/usr/bin/python3
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
[[ -x $bin ]] || (cd "$root" && go build -o "$bin" ./cmd/distbench) || exit 1

tools=(distbench torch)
[[ -n ${DISTBENCH_BEFORE:-} ]] && tools=(distbench before torch)

# step_rate RESULTS: the median per-step images/s of a distbench run.
step_rate() {
	$py - "$1" <<'PY'
import json, statistics, sys
r = [json.loads(l)["images_per_s"] for l in open(sys.argv[1]) if '"train_step"' in l][1:]
print(statistics.median(r) if r else "nan")
PY
}

run() { # tool model np round -> appends "tool model np rate" to $out/results
	local tool=$1 model=$2 np=$3 rate b
	case $tool in
	distbench | before)
		b=$bin
		[[ $tool == before ]] && b=$DISTBENCH_BEFORE
		rm -rf "$out/run"
		"$b" train --model "$model" --dataset fashion-mnist --data "$data" --np "$np" --batch "$batch" \
			--max-steps "$steps" --epochs 1 --out "$out/run" >/dev/null 2>&1 || { echo "$tool $model np $np failed" >&2; return; }
		rate=$(step_rate "$out/run/results.jsonl")
		;;
	torch)
		rate=$($py "$root/bench/torch_train.py" --model "$model" --np "$np" --batch "$batch" --steps "$steps" --data "$data" 2>/dev/null |
			$py -c 'import json,sys; print(json.loads(sys.stdin.read())["images_per_s"])') || { echo "torch $model np $np failed" >&2; return; }
		;;
	esac
	echo "$tool $model $np $rate" >>"$out/results"
	echo "round $4: $tool $model np $np: $rate images/s" >&2
}

for ((r = 0; r < rounds; r++)); do
	for model in lenet resnet20; do
		for np in 1 2; do
			n=${#tools[@]}
			for ((i = 0; i < n; i++)); do run "${tools[(i + r) % n]}" "$model" "$np" "$r"; done
		done
	done
done

echo "# training images/s (median over $rounds rounds of each run's median step), global batch $batch, $steps steps, $(nproc) cores"
$py - "$out/results" "${tools[*]}" <<'PY'
import collections, statistics, sys
rates = collections.defaultdict(list)
for line in open(sys.argv[1]):
    t, m, n, v = line.split()
    rates[(t, m, int(n))].append(float(v))
tools = sys.argv[2].split()
print("| model | np | " + " | ".join(tools) + " | " + " | ".join(f"{t}/torch" for t in tools if t != "torch") + " |")
print("|---|---|" + "---|" * (2 * len(tools) - 1))
for m in ("lenet", "resnet20"):
    for n in (1, 2):
        med = {t: statistics.median(rates[(t, m, n)]) if rates[(t, m, n)] else float("nan") for t in tools}
        print(f"| {m} | {n} | " + " | ".join(f"{med[t]:.0f}" for t in tools) + " | " +
              " | ".join(f"{med[t] / med['torch']:.2f}" for t in tools if t != "torch") + " |")
PY

ghz=$(awk -F: '/cpu MHz/ {print $2 / 1000; exit}' /proc/cpuinfo)
cores=$(nproc)
peak=$(awk -v c="$cores" -v g="$ghz" 'BEGIN {printf "%.1f", c * g * 2 * 8 * 2}')
echo "# GEMM at ResNet-20's shapes, one goroutine; AVX2 peak $peak GFLOP/s for $cores cores ($(awk -v g="$ghz" 'BEGIN {printf "%.1f", g * 32}') a core) at $ghz GHz, twice that with AVX-512's 16 lanes"
echo "# (a VM's /proc/cpuinfo gives the nominal clock; the cores boost above it, so a kernel can pass 100%)"
(cd "$root/workloads/nn" && go test -run '^$' -bench 'GemmSerial/.*-(16|32|64|144|288|576)x(784|196|144|288|576)x' -count 5 -benchtime 200ms . 2>/dev/null) |
	awk '/GFLOP/ {v[$1] = v[$1] " " $5} END {for (k in v) print k, v[k]}' | sort |
	$py -c '
import statistics, sys
core = float(sys.argv[1])
for line in sys.stdin:
    f = line.split()
    med = statistics.median(float(x) for x in f[1:])
    print(f"{f[0]}: median {med:.1f} GFLOP/s, {100 * med / core:.0f}% of one core'"'"'s peak")' "$(awk -v g="$ghz" 'BEGIN {print g * 32}')"
