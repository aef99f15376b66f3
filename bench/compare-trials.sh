#!/usr/bin/env bash
# compare-trials.sh: how often `distbench compare` cries wolf, and whether it
# catches a real regression. Issue 6's targets:
#   - 20 trials of (run, rerun) of the default plan, same build, same machine:
#     compare must exit 0 in at least 19;
#   - BASE with links shaped to 1Gbit, NEW to 800Mbit: compare must exit 1
#     and name the bandwidth-bound points.
# Usage: bench/compare-trials.sh [OUTDIR] [TRIALS]
set -uo pipefail
out="${1:-runs/compare-trials}"
trials="${2:-20}"
bin="${DISTBENCH:-bin/distbench}"
mkdir -p "$out"
sweep() { "$bin" sweep --no-report --skip-unavailable --out "$1" "${@:2}" >"$1.log" 2>&1; }

sweep "$out/run0"
quiet=0 blind=0
for i in $(seq 1 "$trials"); do
	sweep "$out/run$i"
	"$bin" compare "$out/run$((i - 1))" "$out/run$i" --out "$out/cmp$i" >"$out/cmp$i.txt" 2>&1
	code=$?
	[ "$code" -eq 0 ] && quiet=$((quiet + 1))
	[ "$code" -eq 3 ] && blind=$((blind + 1))
	echo "trial $i: compare exit $code"
done
echo "same build: compare exited 0 in $quiet of $trials trials, 3 (too noisy to judge) in $blind"

shaped=(--strategy ring --np 2,4 --collective allreduce -b 64KiB -e 16MiB -f 4 --iters 10)
sweep "$out/base-1g" "${shaped[@]}" --link 1Gbit,25us
sweep "$out/new-800m" "${shaped[@]}" --link 800Mbit,25us
"$bin" compare "$out/base-1g" "$out/new-800m" --out "$out/cmp-shaped" >"$out/cmp-shaped.txt" 2>&1
echo "1Gbit -> 800Mbit: compare exit $? (want 1); regressions named:"
grep -iE "worse|regress" "$out/cmp-shaped.txt" | head -20
