#!/usr/bin/env bash
# tune.sh: regenerate the tables behind distbench's tuned constants
# (docs/tuning.md says which constant each table sets) by running distbench
# itself on this machine. Each table is written to $TUNE_OUT/<table>.tsv:
# comment lines naming the command, the machine, the date and the commit,
# then a header row, then one row per setting and size with the median over
# TUNE_ROUNDS rounds of each round's median time (µs). The settings of a
# table are interleaved within every round, so that load from other work
# falls on all of them alike.
#
# Knobs (environment):
#   TUNE_TABLES  tables to make, space-separated (default: all but noise-factor):
#                ring-chunk ring-whole tree-chunk tree-rd spin noise-factor
#   TUNE_ROUNDS  rounds per setting (default 5)
#   TUNE_ITERS   timed iterations per point and round (default 50; warm-up is a fifth)
#   TUNE_QUICK   1: smaller sizes and worlds (np <= 4), to check that it works
#   TUNE_OUT     output directory (default docs/tuning)
#   TUNE_TRIALS  noise-factor: same-build sweep pairs (default 20; slow)
#   DISTBENCH    the binary (default bin/distbench)
#
# Usage: make tune, or TUNE_ROUNDS=1 TUNE_QUICK=1 scripts/tune.sh
set -euo pipefail

bin="${DISTBENCH:-bin/distbench}"
out="${TUNE_OUT:-docs/tuning}"
rounds="${TUNE_ROUNDS:-5}"
iters="${TUNE_ITERS:-50}"
warmup=$(( iters / 5 > 0 ? iters / 5 : 1 ))
quick="${TUNE_QUICK:-0}"
tables="${TUNE_TABLES:-ring-chunk ring-whole tree-chunk tree-rd spin}"
trials="${TUNE_TRIALS:-20}"

[ -x "$bin" ] || { echo "tune.sh: $bin not found; run make build first" >&2; exit 2; }
command -v jq >/dev/null || { echo "tune.sh: jq not found (Debian/Ubuntu: apt-get install jq)" >&2; exit 2; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- . 2>/dev/null || commit="$commit+dirty"
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
machine="$(nproc) CPUs${cpu:+ ($cpu)}, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?)"
q() { [ "$quick" = 1 ] && echo "$2" || echo "$1"; }

# measure LABEL ENV -- RUN-ARGS...: one round of one setting, appended to
# $tmp/raw as "label<TAB>collective<TAB>np<TAB>bytes<TAB>time_us".
measure() {
	local label=$1 env=$2
	shift 3
	rm -f "$tmp/one.jsonl"
	if ! env $env "$bin" run --inplace in -n "$iters" -w "$warmup" --json "$tmp/one.jsonl" "$@" >"$tmp/log" 2>&1; then
		echo "tune.sh: failed: $bin run $*" >&2
		tail -5 "$tmp/log" >&2
		return 1
	fi
	jq -r --arg l "$label" 'select(.kind == "collective") | [$l, .collective, .np, .bytes, .time_us] | @tsv' "$tmp/one.jsonl" >>"$tmp/raw"
}

# write TABLE SETTING-COLUMN COMMAND: the median over rounds of $tmp/raw's
# rows, by setting, collective, np and size, into $out/TABLE.tsv.
write() {
	local table=$1 col=$2 cmd=$3 f="$out/$1.tsv"
	{
		echo "# $table: median over $rounds rounds of each round's median time (us), $iters iterations a round, settings interleaved"
		echo "# command: $cmd"
		echo "# machine: $machine; date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $commit; rounds $rounds, quick $quick"
		printf 'collective\tnp\tbytes\t%s\ttime_us\n' "$col"
		sort -t$'\t' -k2,2 -k3,3n -k4,4n -k1,1h "$tmp/raw" | awk -F'\t' -v OFS='\t' '
			function flush(   i, j, t, m) {
				if (n == 0) return
				for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
				m = n % 2 ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
				split(key, k, SUBSEP)
				printf "%s\t%s\t%s\t%s\t%.1f\n", k[2], k[3], k[4], k[1], m
				n = 0
			}
			{ kk = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4; if (kk != key) { flush(); key = kk }; v[++n] = $5 }
			END { flush() }'
	} >"$f"
	rm -f "$tmp/raw"
	echo "tune.sh: wrote $f"
}

# Ring chunk (shapes.RingDefaultChunk, shapes.RingRelayChunk): allreduce, allgather and
# reduce-scatter at each chunk size.
ring_chunk() {
	local chunks nps sizes c np r coll
	chunks=$(q "256KiB 512KiB 1MiB" "256KiB 1MiB")
	nps=$(q "2 4 8" "2 4")
	sizes=$(q "-b 4MiB -e 64MiB -f 4" "-b 4MiB -e 16MiB -f 4")
	for r in $(seq "$rounds"); do
		for np in $nps; do
			for coll in allreduce allgather reducescatter; do
				[ "$coll" != allreduce ] && [ "$np" = 2 ] && continue # RelayChunk applies above np 2
				for c in $chunks; do
					measure "$c" "" -- --strategy ring --np "$np" --collective "$coll" $sizes --opt chunk="$c"
				done
			done
		done
	done
	write ring-chunk chunk "$bin run --strategy ring --np N --collective C $sizes --inplace in --opt chunk=X"
}

# Ring whole-buffer switch (ring autoMaxWhole): algo=whole against algo=rsag.
ring_whole() {
	local nps a np r
	nps=$(q "2 4 8" "2 4")
	for r in $(seq "$rounds"); do
		for np in $nps; do
			for a in whole rsag; do
				measure "$a" "" -- --strategy ring --np "$np" -b 4KiB -e 64KiB -f 2 --opt algo="$a"
			done
		done
	done
	write ring-whole algo "$bin run --strategy ring --np N -b 4KiB -e 64KiB -f 2 --inplace in --opt algo=whole|rsag"
}

# Tree chunk (shapes.TreeDefaultChunk): the double binary tree at np 4.
tree_chunk() {
	local chunks c r
	chunks=$(q "64KiB 256KiB 1MiB 4MiB" "64KiB 256KiB 1MiB")
	for r in $(seq "$rounds"); do
		for c in $chunks; do
			measure "$c" "" -- --strategy tree --np 4 -b 4MiB -e 16MiB -f 4 --opt algo=dbtree --opt chunk="$c"
		done
	done
	write tree-chunk chunk "$bin run --strategy tree --np 4 -b 4MiB -e 16MiB -f 4 --inplace in --opt algo=dbtree --opt chunk=X"
}

# Tree recursive-doubling switch (shapes.TreeAutoMaxRD): algo=rd against dbtree.
tree_rd() {
	local nps a np r
	nps=$(q "4 8" "4")
	for r in $(seq "$rounds"); do
		for np in $nps; do
			for a in rd dbtree; do
				measure "$a" "" -- --strategy tree --np "$np" -b 1KiB -e 256KiB -f 4 --opt algo="$a"
			done
		done
	done
	write tree-rd algo "$bin run --strategy tree --np N -b 1KiB -e 256KiB -f 4 --inplace in --opt algo=rd|dbtree"
}

# Spinning (launch.DefaultSpin, harness/launch): DISTBENCH_SPIN=0 against the default,
# which spins when every rank has a core of its own.
spin() {
	local s r
	for r in $(seq "$rounds"); do
		for s in 0 1ms; do
			measure "$s" "DISTBENCH_SPIN=$s" -- --strategy ring --np 2 -b 4KiB -e 64KiB -f 4
		done
	done
	write spin spin "DISTBENCH_SPIN=0|1ms $bin run --strategy ring --np 2 -b 4KiB -e 64KiB -f 4 --inplace in"
}

# Noise factor (reports.DefaultNoiseFactor): pairs of same-build sweeps,
# each pair compared at several factors; a row counts the pairs that compare
# called a regression (all false alarms). Slow: 2 × TUNE_TRIALS sweeps.
noise_factor() {
	local sweep=(--no-report --skip-unavailable --strategy ring,tree --np 2,4 --rounds "$rounds" --iters "$iters")
	[ "$quick" = 1 ] && sweep+=(-b 4KiB -e 1MiB -f 16)
	local f i prev=""
	declare -A alarms=()
	for i in $(seq 0 "$trials"); do
		"$bin" sweep "${sweep[@]}" --out "$tmp/run$i" >"$tmp/log" 2>&1 || { tail -5 "$tmp/log" >&2; return 1; }
		if [ -n "$prev" ]; then
			for f in -1 3 4 5; do
				"$bin" compare "$prev" "$tmp/run$i" --noise-factor "$f" --out "$tmp/cmp" >/dev/null 2>&1 && rc=0 || rc=$?
				[ "$rc" -eq 1 ] && alarms[$f]=$(( ${alarms[$f]:-0} + 1 ))
				[ "$rc" -eq 2 ] && { echo "tune.sh: compare failed ($rc)" >&2; return 1; } # 3: too noisy to judge, no alarm
			done
		fi
		prev="$tmp/run$i"
	done
	{
		echo "# noise-factor: same-build sweep pairs that compare flagged as regressed, by --noise-factor (-1: threshold alone)"
		echo "# command: $bin sweep ${sweep[*]} (twice), then $bin compare A B --noise-factor F"
		echo "# machine: $machine; date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $commit; quick $quick"
		printf 'noise_factor\tpairs\tfalse_alarms\n'
		for f in -1 3 4 5; do printf '%s\t%s\t%s\n' "$f" "$trials" "${alarms[$f]:-0}"; done
	} >"$out/noise-factor.tsv"
	echo "tune.sh: wrote $out/noise-factor.tsv"
}

for t in $tables; do
	case $t in
	ring-chunk) ring_chunk ;;
	ring-whole) ring_whole ;;
	tree-chunk) tree_chunk ;;
	tree-rd) tree_rd ;;
	spin) spin ;;
	noise-factor) noise_factor ;;
	*) echo "tune.sh: unknown table $t (ring-chunk ring-whole tree-chunk tree-rd spin noise-factor)" >&2; exit 2 ;;
	esac
done
