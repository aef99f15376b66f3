#!/usr/bin/env bash
# ps-transport.sh: the parameter server over the mesh against the ring and
# against itself over gRPC, side by side in one interleaved run (issue 15's
# targets). Every round runs each configuration once, one after another, so
# that load from other work on the machine meets them alike; the summary is
# the median over rounds of each configuration's in-place time, and ratios
# of medians.
#   1. np 2, unshaped, colocated, 16 MiB and 64 MiB: ps busbw >= 0.9x ring's;
#      ps/grpc beside them.
#   2. np 4, 4 dedicated servers, links shaped to 1Gbit,25us, 64 MiB: ps at
#      least 1.3x faster than ring, and within 15% of BytePS's prediction:
#      S/B x max(1, n/k) (a worker sends S and receives S; a server receives
#      and sends n x S/k; links are full duplex), here 64 MiB / 125 MB/s.
#   3. with OLD set to an earlier build's binary: its ps (gRPC, the only
#      transport it had) against this build's ps/grpc, np 2, 16 and 64 MiB.
# Usage: bench/ps-transport.sh [OUTDIR] [ROUNDS]   (OLD=path/to/old/distbench)
set -uo pipefail
out="$(realpath -m "${1:-runs/ps-transport}")"
rounds="${2:-6}"
bin="$(realpath -m "${DISTBENCH:-bin/distbench}")"
old="${OLD:-}"
mkdir -p "$out"
rm -f "$out"/*.txt

# measure NAME BINARY ARGS...: one run; appends "size time_us busbw" rows.
measure() {
	local name="$1" b="$2"
	shift 2
	# In-place time and busbw: fields 6 and 8 in nccl-tests' format,
	# 10 and 12 from older builds, which printed - for out-of-place.
	"$b" run --inplace in "$@" 2>>"$out/stderr.log" |
		awk '/^ *[0-9]+ +[0-9]+ +[a-z]/ { if ($6 == "-") print $1, $10, $12; else print $1, $6, $8 }' >>"$out/$name.txt"
}

np2=(--np 2 -b 16MiB -e 64MiB -f 4 -n 10 -w 3)
np4=(--np 4 -b 64MiB -e 64MiB -n 3 -w 1 --link 1Gbit,25us)
for i in $(seq 1 "$rounds"); do
	echo "round $i of $rounds" >&2
	measure np2-ring "$bin" --strategy ring "${np2[@]}"
	measure np2-ps "$bin" --strategy ps "${np2[@]}"
	measure np2-ps-grpc "$bin" --strategy ps --opt transport=grpc "${np2[@]}"
	if [ -n "$old" ]; then
		measure np2-ps-old "$old" --strategy ps "${np2[@]}"
	fi
	measure np4-1g-ring "$bin" --strategy ring "${np4[@]}"
	measure np4-1g-ps-dedicated "$bin" --strategy ps --opt placement=dedicated --opt servers=4 "${np4[@]}"
done

# median NAME SIZE FIELD: the median over rounds of a configuration's field
# (2: time in us, 3: busbw) at one size.
median() {
	awk -v s="$2" -v f="$3" '$1 == s { print $f }' "$out/$1.txt" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

{
	echo "# ps-transport: medians over $rounds interleaved rounds ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
	echo
	echo "## np 2, unshaped, colocated, in-place allreduce"
	echo
	echo "| size | ring us | ps us | ps/grpc us | ps busbw / ring | ps/grpc busbw / ring | ps/grpc time / ps |"
	echo "|---|---|---|---|---|---|---|"
	for s in 16777216 67108864; do
		r=$(median np2-ring $s 2) p=$(median np2-ps $s 2) g=$(median np2-ps-grpc $s 2)
		rb=$(median np2-ring $s 3) pb=$(median np2-ps $s 3) gb=$(median np2-ps-grpc $s 3)
		echo "| $s | $r | $p | $g | $(ratio "$pb" "$rb") | $(ratio "$gb" "$rb") | $(ratio "$g" "$p") |"
	done
	if [ -n "$old" ]; then
		echo
		echo "## np 2: this build's ps/grpc against the old build's ps"
		echo
		echo "| size | old ps us | ps/grpc us | new / old time |"
		echo "|---|---|---|---|"
		for s in 16777216 67108864; do
			o=$(median np2-ps-old $s 2) g=$(median np2-ps-grpc $s 2)
			echo "| $s | $o | $g | $(ratio "$g" "$o") |"
		done
	fi
	echo
	echo "## np 4, links 1Gbit,25us, 64 MiB in-place allreduce"
	echo
	s=67108864
	r=$(median np4-1g-ring $s 2) p=$(median np4-1g-ps-dedicated $s 2)
	predicted=$(awk -v s=$s 'BEGIN { printf "%.0f", s / 125e6 * 1e6 }')
	echo "| ring us | ps dedicated (k=4) us | ring / ps | BytePS prediction us | ps / prediction |"
	echo "|---|---|---|---|---|"
	echo "| $r | $p | $(ratio "$r" "$p") | $predicted | $(ratio "$p" "$predicted") |"
} | tee "$out/summary.md"
