#!/usr/bin/env bash
# Calibrate the cost model on part of a shaped sweep and predict the rest
# (docs/notes/model-validation.md): ring, tree and ps at np 2-8 on 1Gbit,25us and 10Gbit,25us.
#
#   bench/model-validate.sh [RUN_DIR] [ROUNDS]
#
# On a 2-core machine np 6 and 8 run 3-4 ranks per core: the model knows
# (Topology.Cores), but load from other work shows as noise; use rounds.
set -euo pipefail
out=${1:-runs/model-validate}
rounds=${2:-5}
bin=${DISTBENCH:-bin/distbench}
[ -x "$bin" ] || go build -o "$bin" ./cmd/distbench
if [ ! -f "$out/results.jsonl" ]; then
	"$bin" sweep --strategy ring,tree,ps --np 2,3,4,6,8 --collective allreduce \
		--sizes 4KiB,16KiB,64KiB,256KiB,1MiB,4MiB --link 1Gbit,25us --link 10Gbit,25us \
		--rounds "$rounds" -n 20 --time-budget 1s --no-report --out "$out"
fi
"$bin" model calibrate "$out"
echo "## held out: np 6 and 8, calibrated on np <= 4"
"$bin" model validate "$out" --train 'np<=4'
echo "## held out: every other size"
"$bin" model validate "$out" --train every-other-size
"$bin" report "$out" >/dev/null && echo "report: $out/report.md"
