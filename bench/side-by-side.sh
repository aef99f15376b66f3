#!/usr/bin/env bash
# side-by-side.sh: distbench's allreduce against Open MPI (TCP BTL) and
# torch.distributed's gloo on this machine, in interleaved rounds, so that a
# burst of load from other work hits one round of one tool rather than all
# of one tool's measurements. Each round runs every tool at every size, in an
# order rotated from round to round; the summary is, per tool and size, the
# median over rounds of each round's median time (the slowest rank's, per
# iteration, as everywhere in distbench), the busbw that gives, and the
# ratios: of those medians, and the median of the per-round ratios. Issue 2's
# targets read off its last lines.
#
# Usage: bench/side-by-side.sh [ROUNDS] [SIZES] [NP] [STRATEGY]
#   e.g. bench/side-by-side.sh 5 4KiB,16MiB,64MiB 2 ring
# Needs Debian's openmpi-bin, python3-mpi4py and python3-torch (make peers).
# TOOLS picks the tools (default "distbench mpi gloo"); the tool "before"
# runs the binary $DISTBENCH_BEFORE the same way as distbench, so that a
# change is measured against the commit before it in one interleaved run:
#   DISTBENCH_BEFORE=/tmp/before TOOLS="distbench before" bench/side-by-side.sh
set -uo pipefail
rounds="${1:-5}"
sizes="${2:-4KiB,16MiB,64MiB}"
np="${3:-2}"
strategy="${4:-ring}"
bin="${DISTBENCH:-bin/distbench}"
py=/usr/bin/python3
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

iters_for() { # many iterations for small sizes, where one costs microseconds
	case "$1" in
	*KiB | *K | [0-9] | [0-9][0-9] | [0-9][0-9][0-9] | [0-9][0-9][0-9][0-9]) echo "500 50" ;;
	*) echo "20 3" ;;
	esac
}

run_tool() { # tool size -> appends "tool size median_us round" to $out/results
	local tool=$1 size=$2 it wu
	read -r it wu <<<"$(iters_for "$size")"
	case $tool in
	distbench | before)
		local b=$bin
		[ "$tool" = before ] && b=${DISTBENCH_BEFORE:?TOOLS has before: set DISTBENCH_BEFORE to the binary to compare}
		"$b" run --strategy "$strategy" --np "$np" -b "$size" -e "$size" -n "$it" -w "$wu" --inplace in \
			--json "$out/db.json" >/dev/null 2>"$out/err" || { echo "distbench failed: $(tail -1 "$out/err")" >&2; return; }
		tail -1 "$out/db.json" | $py -c 'import sys,json; r=json.loads(sys.stdin.read()); print(sys.argv[1], r["bytes"], r["time_us"])' "$tool" ;;
	mpi)
		mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self --mca btl_tcp_if_include lo \
			--mca oob_tcp_if_include lo -n "$np" $py peers/mpi_allreduce.py --sizes "$size" \
			--iters "$it" --warmup "$wu" 2>/dev/null | sed -n 's/^distbench-record //p' |
			$py -c 'import sys,json,statistics as st
for l in sys.stdin: r=json.loads(l); print("mpi", r["bytes"], st.median(r["samples_us"]))' ;;
	gloo)
		$py peers/gloo_allreduce.py --np "$np" --sizes "$size" --iters "$it" --warmup "$wu" 2>/dev/null |
			sed -n 's/^distbench-record //p' | $py -c 'import sys,json,statistics as st
for l in sys.stdin: r=json.loads(l); print("gloo", r["bytes"], st.median(r["samples_us"]))' ;;
	esac | sed "s/\$/ $round/" >>"$out/results" # tool size median_us round
}

read -r -a tools <<<"${TOOLS:-distbench mpi gloo}"
for round in $(seq 1 "$rounds"); do
	for size in ${sizes//,/ }; do
		for k in "${!tools[@]}"; do
			run_tool "${tools[$(((k + round) % ${#tools[@]}))]}" "$size"
		done
	done
	echo "round $round of $rounds done ($(uptime | sed 's/.*load average: //'))" >&2
done
$py - "$out/results" "$np" "$strategy" "${tools[@]}" <<'PY'
import sys, statistics as st
from collections import defaultdict
path, np_, strategy, tools = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
t = defaultdict(list)
by_round = {}  # (tool, size, round) -> median us
for line in open(path):
    tool, size, us, rnd = line.split()
    t[(tool, int(size))].append(float(us))
    by_round[(tool, int(size), int(rnd))] = float(us)
factor = 2 * (np_ - 1) / np_  # allreduce busbw = algbw × 2(n−1)/n
sizes = sorted({s for _, s in t})
print(f"# allreduce float32 sum in place, np {np_}, {strategy}; median over rounds of per-round median times")
print(f"| size | tool | rounds | time (us) | busbw (GB/s) | per-round medians (us) |")
print(f"|--:|---|--:|--:|--:|---|")
med = {}
for s in sizes:
    for tool in tools:
        v = t.get((tool, s))
        if not v:
            continue
        m = st.median(v)
        med[(tool, s)] = m
        bw = s / (m * 1e-6) / 1e9 * factor
        print(f"| {s} | {tool} | {len(v)} | {m:.1f} | {bw:.3f} | {', '.join(f'{x:.0f}' for x in v)} |")
for s in sizes:
    d = med.get(("distbench", s))
    for peer in (x for x in tools if x != "distbench"):
        p = med.get((peer, s))
        if d and p:
            # The same ratio round by round, each pair measured minutes apart
            # at most: a burst of load that slows one round of both tools
            # cancels out of it.
            paired = [by_round[(peer, s, r)] / by_round[("distbench", s, r)]
                      for (tool, size, r) in by_round if tool == "distbench" and size == s and (peer, s, r) in by_round]
            print(f"size {s}: {peer} time / distbench time = {p / d:.2f}; median of per-round ratios "
                  f"{st.median(paired):.2f} over {len(paired)} rounds (above 1: distbench is faster)")
PY
