#!/usr/bin/env bash
# shm-vs-vader.sh: distbench's allreduce over shared memory (--transport
# shm) against Open MPI's shared-memory BTL, vader (mpirun --mca btl
# self,vader, single copy by CMA for large messages), np 2, in one
# interleaved run: every round runs every tool at every size, in an order
# rotated from round to round, so that a burst of load from other work on a
# shared machine hits one round of one tool rather than all of one tool's
# measurements. Per tool and size: the median over rounds of each round's
# median time (the slowest rank's, per iteration, as everywhere in
# distbench), the busbw it gives, and the ratios to vader, of those medians
# and the median of the per-round ratios. Issue 20's targets read off the
# last lines: busbw at 1 MiB and 16 MiB at least vader's, time at 4 KiB at
# most 1.5 times vader's.
#
# Usage: bench/shm-vs-vader.sh [ROUNDS] [SIZES] [STRATEGY]
#   e.g. bench/shm-vs-vader.sh 7 4KiB,1MiB,16MiB ring
# TOOLS picks the tools (default "shm vader"; "tcp" adds distbench over
# loopback TCP, "vader-copy" vader without its single copy, CMA, which is
# slow on some VMs), "base" distbench over shared memory again from the
# binary DISTBENCH_BASE, for a before/after of a change in the same run.
# Open MPI is timed by bench/mpi_allreduce.c, built here
# against Debian's libmpi.so.40 (openmpi-bin has no headers) or with mpicc
# where Open MPI's headers are installed.
set -uo pipefail
rounds="${1:-7}"
sizes="${2:-4KiB,1MiB,16MiB}"
strategy="${3:-ring}"
np=2
bin="${DISTBENCH:-bin/distbench}"
py=/usr/bin/python3
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

mpibin="$out/mpi_allreduce"
if ! mpicc -DHAVE_MPI_H -O2 -o "$mpibin" bench/mpi_allreduce.c 2>/dev/null; then
	lib=$(ls /usr/lib/x86_64-linux-gnu/libmpi.so.40 /usr/lib/*/libmpi.so.40 2>/dev/null | head -1)
	gcc -O2 -o "$mpibin" bench/mpi_allreduce.c "${lib:?no Open MPI libmpi.so.40 found}" 2>"$out/cc" ||
		{ cat "$out/cc" >&2; exit 1; }
fi

bytes_of() { # 4KiB -> 4096
	$py -c 'import sys; s=sys.argv[1].lower()
for u,m in (("kib",1<<10),("mib",1<<20),("gib",1<<30),("k",1<<10),("m",1<<20)):
    if s.endswith(u): print(int(float(s[:-len(u)])*m)); break
else: print(int(s))' "$1"
}

iters_for() { # many iterations for small sizes, where one costs microseconds
	local b; b=$(bytes_of "$1")
	if [ "$b" -le 65536 ]; then echo "2000 200"; elif [ "$b" -le 4194304 ]; then echo "200 20"; else echo "40 5"; fi
}

run_tool() { # tool size -> appends "tool bytes median_us round" to $out/results
	local tool=$1 size=$2 it wu
	read -r it wu <<<"$(iters_for "$size")"
	case $tool in
	shm | tcp | base)
		local exe=$bin transport=$tool
		[ "$tool" = base ] && exe=${DISTBENCH_BASE:?DISTBENCH_BASE names the binary of tool base} transport=shm
		rm -f "$out/db.json"
		"$exe" run --strategy "$strategy" --np "$np" --transport "$transport" -b "$size" -e "$size" -n "$it" -w "$wu" --inplace in \
			--json "$out/db.json" >/dev/null 2>"$out/err" || { echo "distbench failed: $(tail -1 "$out/err")" >&2; return; }
		$py -c 'import sys,json
rs=[json.loads(l) for l in open(sys.argv[2])]; r=[r for r in rs if r["kind"]=="collective"][-1]
print(sys.argv[1], r["bytes"], r["time_us"])' "$tool" "$out/db.json" ;;
	vader | vader-copy)
		local copy=()
		[ "$tool" = vader-copy ] && copy=(--mca btl_vader_single_copy_mechanism none)
		mpirun --allow-run-as-root --mca btl self,vader "${copy[@]}" -n "$np" "$mpibin" "$(bytes_of "$size")" "$it" "$wu" 2>"$out/err" |
			awk -v tool="$tool" '{ if ($3 != 0) print tool ": " $3 " wrong elements" > "/dev/stderr"; print tool, $1, $2 }' ;;
	esac | sed "s/\$/ $round/" >>"$out/results"
}

read -r -a tools <<<"${TOOLS:-shm vader}"
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores; load $(uptime | sed 's/.*load average: //')" >&2
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
by_round = {}
for line in open(path):
    tool, size, us, rnd = line.split()
    t[(tool, int(size))].append(float(us))
    by_round[(tool, int(size), int(rnd))] = float(us)
factor = 2 * (np_ - 1) / np_
sizes = sorted({s for _, s in t})
print(f"# allreduce float32 sum in place, np {np_}, distbench {strategy}; median over rounds of per-round median times")
print("| size | tool | rounds | time (us) | busbw (GB/s) | per-round medians (us) |")
print("|--:|---|--:|--:|--:|---|")
med = {}
for s in sizes:
    for tool in tools:
        v = t.get((tool, s))
        if not v:
            continue
        m = st.median(v)
        med[(tool, s)] = m
        print(f"| {s} | {tool} | {len(v)} | {m:.1f} | {s / (m * 1e-6) / 1e9 * factor:.3f} | {', '.join(f'{x:.1f}' if x < 100 else f'{x:.0f}' for x in v)} |")
for base in (x for x in tools if x.startswith("vader")):
    for s in sizes:
        v = med.get((base, s))
        for tool in (x for x in tools if not x.startswith("vader")):
            d = med.get((tool, s))
            if not (d and v):
                continue
            paired = [by_round[(tool, s, r)] / by_round[(base, s, r)]
                      for (x, size, r) in by_round if x == base and size == s and (tool, s, r) in by_round]
            print(f"size {s}: distbench {tool} time / {base} time = {d / v:.2f} (busbw ratio {v / d:.2f}); "
                  f"median of per-round ratios {st.median(paired):.2f} over {len(paired)} rounds")
PY
