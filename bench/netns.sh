#!/usr/bin/env bash
# netns.sh: distbench across hosts that are network namespaces on this
# machine (scripts/netns-cluster.sh), every host's NIC capped at 1 Gbit/s by
# tbf, one rank per host, against the same run on loopback with the
# in-process link shaper (--link 1Gbit,25us), interleaved in rounds: ring,
# ps with a server colocated in each worker, and ps with 4 dedicated
# servers, each on a host of its own ("psd", started by the engine as its
# last ranks).
# Targets (issue 17): ring's 64 MiB allreduce within 15% of its closed form
# 2(n-1)/n x S/B, and ps against ring in the namespaces agreeing with ps
# against ring on shaped loopback within 15% ("agree": the ratio of the two
# verdicts, ps/ring there over ps/ring here); ns/lo compares the times.
# Usage (root): bench/netns.sh [ROUNDS] [SIZE]
set -uo pipefail
rounds="${1:-3}"
size="${2:-64MiB}"
bin="$(realpath -m "${DISTBENCH:-bin/distbench}")"
here="$(cd "$(dirname "$0")/.." && pwd)"
cluster="$here/scripts/netns-cluster.sh"
export DISTBENCH_NETNS_PREFIX=dbn
n=4
out=$(mktemp -d)
trap '"$cluster" down; rm -rf "$out"' EXIT
"$cluster" down
"$cluster" up $((2 * n)) 1gbit || exit 2
strategies="${STRATEGIES:-ring ps psd}"

# args STRATEGY: the strategy's flags; procs STRATEGY: its processes.
args() {
	case $1 in
		psd) echo "--strategy ps --opt placement=dedicated --opt servers=$n" ;;
		*) echo "--strategy $1" ;;
	esac
}
procs() { if [ "$1" = psd ]; then echo $((2 * n)); else echo $n; fi; }

# ns STRATEGY: one run across the namespaces; prints the in-place time (us).
ns() {
	local token port=$((29700 + RANDOM % 200)) world
	token=$(head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	world=$(procs "$1")
	for ((r = 0; r < world; r++)); do
		# shellcheck disable=SC2046 # args is words
		RANK=$r WORLD_SIZE=$world MASTER_ADDR=$("$cluster" addr 0) MASTER_PORT=$port DISTBENCH_TOKEN=$token \
			"$cluster" exec $r "$bin" run --launcher env $(args "$1") --inplace in -b "$size" -e "$size" -n 5 -w 1 -c 0 \
			>"$out/ns.$r" 2>&1 &
	done
	wait
	awk '/^ *[0-9]+ +[0-9]+ +[a-z]/ { print $6 }' "$out/ns.0"
}
# lo STRATEGY: the same on loopback, shaped in process.
lo() {
	# shellcheck disable=SC2046 # args is words
	"$bin" run --np $n $(args "$1") --inplace in -b "$size" -e "$size" -n 5 -w 1 -c 0 --link 1Gbit,25us 2>/dev/null |
		awk '/^ *[0-9]+ +[0-9]+ +[a-z]/ { print $6 }'
}
for i in $(seq 1 "$rounds"); do
	for s in $strategies; do
		echo "$(ns $s)" >>"$out/ns-$s"
		echo "$(lo $s)" >>"$out/lo-$s"
	done
	echo "round $i of $rounds" >&2
done
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
bytes=$("$bin" run --np 1 -b "$size" -e "$size" -n 1 -w 0 -c 0 --inplace in 2>/dev/null | awk '/^ *[0-9]+ +[0-9]+ +[a-z]/ { print $1 }')
closed=$(awk -v s="$bytes" -v n=$n 'BEGIN { printf "%.0f", 2 * (n - 1) / n * s / 125e6 * 1e6 }')
printf "# %d hosts x 1 rank, 1 Gbit/s NICs (tbf), %s allreduce, median of %d rounds, in-place time (us)\n" $n "$size" "$rounds"
printf "%-6s %12s %12s %8s %10s %10s %8s\n" strategy namespaces loopback ns/lo "/ring ns" "/ring lo" agree
nr=$(median "$out/ns-ring") lr=$(median "$out/lo-ring")
for s in $strategies; do
	a=$(median "$out/ns-$s") b=$(median "$out/lo-$s")
	# The verdict "s vs ring" in each network, and how far they agree.
	awk -v s="$s" -v a="$a" -v b="$b" -v nr="$nr" -v lr="$lr" \
		'BEGIN { printf "%-6s %12s %12s %8.3f %10.3f %10.3f %8.3f\n", s, a, b, a / b, a / nr, b / lr, (a / nr) / (b / lr) }'
done
a=$(median "$out/ns-ring")
printf "ring closed form 2(n-1)/n x S/B = %s us; namespaces/closed form = %.3f\n" "$closed" "$(awk -v a="$a" -v b="$closed" 'BEGIN { print a / b }')"
a=$(median "$out/ns-psd") closed=$(awk -v s="$bytes" 'BEGIN { printf "%.0f", s / 125e6 * 1e6 }')
printf "psd closed form S/B = %s us; namespaces/closed form = %.3f\n" "$closed" "$(awk -v a="$a" -v b="$closed" 'BEGIN { print a / b }')"
