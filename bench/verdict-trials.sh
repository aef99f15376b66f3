#!/usr/bin/env bash
# verdict-trials.sh: do two sweeps of the same build reach the same
# verdict? Issue 14's target: the verdicts of two identical sweeps agree on
# every significant call. Runs PAIRS pairs of default sweeps and compares
# the calls each report's verdict makes ("**ring** fastest at 4MiB–16MiB"
# under a collective and a world size): a contradiction is a size range
# one sweep gives to a strategy and the other to another; a one-sided call
# is made by one sweep where the other finds a tie.
# Usage: bench/verdict-trials.sh [OUTDIR] [PAIRS]
set -uo pipefail
out="${1:-runs/verdict-trials}"
pairs="${2:-5}"
bin="${DISTBENCH:-bin/distbench}"
mkdir -p "$out"

# calls REPORT: one line per significant call, "section | N ranks | strategy | sizes".
calls() {
	awk '/^## Verdict/ { v = 1; next } v && /^## / { exit }
		v && /^\*\*[a-z]+ \(/ { sec = $0 }
		v && /^- [0-9]+ ranks:/ {
			np = $2
			line = $0
			while (match(line, /\*\*[a-z0-9-]+\*\* fastest at [^,;]*/)) {
				call = substr(line, RSTART, RLENGTH)
				line = substr(line, RSTART + RLENGTH)
				split(call, w, " ")
				gsub(/\*/, "", w[1])
				print sec " | " np " ranks | " w[1] " | " w[4]
			}
		}' "$1"
}

agree=0 contradictions=0 onesided=0
for i in $(seq 1 "$pairs"); do
	for k in a b; do
		"$bin" sweep --out "$out/$i$k" >"$out/$i$k.log" 2>&1
	done
	calls "$out/${i}a/report.md" | sort >"$out/$i.a.calls"
	calls "$out/${i}b/report.md" | sort >"$out/$i.b.calls"
	# The same section, world size and sizes given to different strategies.
	c=$(join -t'|' -j1 <(awk -F' \\| ' '{ print $1 "/" $2 "/" $4 "|" $3 }' "$out/$i.a.calls" | sort) \
		<(awk -F' \\| ' '{ print $1 "/" $2 "/" $4 "|" $3 }' "$out/$i.b.calls" | sort) | awk -F'|' '$2 != $3' | wc -l)
	o=$(comm -3 "$out/$i.a.calls" "$out/$i.b.calls" | wc -l)
	n=$(cat "$out/$i.a.calls" "$out/$i.b.calls" | sort -u | wc -l)
	contradictions=$((contradictions + c))
	onesided=$((onesided + o - 2 * c))
	[ "$o" -eq 0 ] && agree=$((agree + 1))
	echo "pair $i: $n distinct call(s); $c contradicted, $((o - 2 * c)) made by one sweep only"
	comm -3 "$out/$i.a.calls" "$out/$i.b.calls" | sed 's/^/    /'
done
echo "verdicts agreed on every significant call in $agree of $pairs pairs; $contradictions contradiction(s), $onesided one-sided call(s) in all"
