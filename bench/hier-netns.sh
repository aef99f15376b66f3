#!/usr/bin/env bash
# hier-netns.sh: hierarchical against flat ring allreduce across hosts that
# are network namespaces on this machine (scripts/netns-cluster.sh), 2
# hosts x 2 ranks, every host's NIC capped by tbf (default 1gbit), the two
# interleaved in rounds. Prints each's median in-place time, their ratio,
# and each against its closed form (docs/design/hier.md):
#   flat ring   2(N-1)/N x S / B     the busiest NIC carries 1.5 S at N = 4
#   hier        2(m-1)/m x S / B     each host's NIC carries S at m = 2
# Target (issue 20): hier >= 1.3x faster than the flat ring at 64 MiB and
# 1 Gbit/s, and within 15% of its closed form.
# STRATEGY=ps compares the parameter server (a colocated server per rank)
# without and with --opt local_agg=1: 2 S / B against S / B per host.
# Usage (root): [STRATEGY=ps] bench/hier-netns.sh [ROUNDS] [SIZE] [RATE]
set -uo pipefail
rounds="${1:-5}"
size="${2:-64MiB}"
rate="${3:-1gbit}"
bin="$(realpath -m "${DISTBENCH:-bin/distbench}")"
here="$(cd "$(dirname "$0")/.." && pwd)"
cluster="$here/scripts/netns-cluster.sh"
export DISTBENCH_NETNS_PREFIX=dbh
hosts=2 per=2 n=4
strategy=${STRATEGY:-ring}
flat=algo=rsag hier=algo=hier
[ "$strategy" = ps ] && flat=local_agg=0 hier=local_agg=1
out=$(mktemp -d)
trap '"$cluster" down; rm -rf "$out"' EXIT
"$cluster" down
"$cluster" up $hosts "$rate" || exit 2

# ns OPT: one run of the strategy with --opt OPT across the namespaces,
# rank r on host r/per; prints the in-place time (us).
ns() {
	local token port=$((29900 + RANDOM % 90)) r
	token=$(head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	for ((r = 0; r < n; r++)); do
		RANK=$r WORLD_SIZE=$n MASTER_ADDR=$("$cluster" addr 0) MASTER_PORT=$port DISTBENCH_TOKEN=$token \
			"$cluster" exec $((r / per)) "$bin" run --launcher env --strategy "$strategy" --opt "$1" --inplace in \
			-b "$size" -e "$size" -n 5 -w 1 -c 0 --timeout 5m >"$out/ns.$r" 2>&1 &
	done
	wait
	awk '/^ *[0-9]+ +[0-9]+ +[a-z]/ { print $6 }' "$out/ns.0"
}
for i in $(seq 1 "$rounds"); do
	for a in flat hier; do
		t=$(ns "${!a}")
		echo "$t" >>"$out/$a"
		echo "round $i of $rounds: $a $t us" >&2
	done
done
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
bytes=$("$bin" run --np 1 -b "$size" -e "$size" -n 1 -w 0 -c 0 --inplace in 2>/dev/null | awk '/^ *[0-9]+ +[0-9]+ +[a-z]/ { print $1 }')
bps=$(awk -v r="$rate" 'BEGIN { n = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u)
	m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : (u == "gbit") ? 1e9 : 1; print n * m / 8 }')
cflat=$(awk -v s="$bytes" -v n=$n -v b="$bps" 'BEGIN { printf "%.0f", 2 * (n - 1) / n * s / b * 1e6 }')
[ "$strategy" = ps ] && cflat=$(awk -v s="$bytes" -v b="$bps" 'BEGIN { printf "%.0f", 2 * s / b * 1e6 }')
chier=$(awk -v s="$bytes" -v m=$hosts -v b="$bps" 'BEGIN { printf "%.0f", 2 * (m - 1) / m * s / b * 1e6 }')
a=$(median "$out/flat") b=$(median "$out/hier")
printf "# %d hosts x %d ranks, %s NICs (tbf), %s allreduce, median of %d interleaved rounds, in-place time (us)\n" $hosts $per "$rate" "$size" "$rounds"
printf "# every round: flat %s; hier %s\n" "$(tr '\n' ' ' <"$out/flat")" "$(tr '\n' ' ' <"$out/hier")"
printf "%-20s %12s %12s %10s\n" run median closed-form ratio
printf "%-20s %12s %12s %10.3f\n" "$strategy $flat" "$a" "$cflat" "$(awk -v a="$a" -v b="$cflat" 'BEGIN { print a / b }')"
printf "%-20s %12s %12s %10.3f\n" "$strategy $hier" "$b" "$chier" "$(awk -v a="$b" -v b="$chier" 'BEGIN { print a / b }')"
printf "speedup of %s over %s: %.3fx\n" "$hier" "$flat" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"
