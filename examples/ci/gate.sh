#!/usr/bin/env bash
# gate.sh: distbench as a CI regression gate, for any CI. It builds the
# base and the change from two commits of this repository, measures them
# interleaved on this one runner (distbench ab: paired rounds, so that the
# runner's noise reaches both alike), keeps the run directory, prints the
# markdown summary (and appends it to $GITHUB_STEP_SUMMARY when set), and
# exits as the verdict says.
#
#   examples/ci/gate.sh BASE_REF [CHANGE_REF] [ab flags...]
#
#   BASE_REF     the commit to compare against, e.g. origin/main or $(git merge-base origin/main HEAD)
#   CHANGE_REF   the change (default HEAD)
#   ab flags     what to measure and how strictly (default: the default
#                plan's collectives); e.g. --strategy ring,tree --np 2,4
#                --sizes 64KiB,1MiB,16MiB --threshold 10%
#
# Environment:
#   OUT    the run directory to create (default runs/ci-ab): OUT/base and
#          OUT/new are the two builds' records, OUT/compare.md the report,
#          OUT/verdict.json the verdict (docs/guide/ci.md), OUT/summary.md
#          the summary; keep OUT as the job's artefact
#   NOISY  what "too noisy to judge" (ab's exit 3) does: fail (default),
#          pass, or warn (pass, with a warning line)
#
# Exit status: 0 pass; 1 regression; 2 bad input or a build failed; 3 too
# noisy with NOISY=fail; 130 interrupted.
set -uo pipefail
if [ $# -lt 1 ]; then
	echo "usage: examples/ci/gate.sh BASE_REF [CHANGE_REF] [ab flags...]" >&2
	exit 2
fi
base_ref="$1"
change_ref="${2:-HEAD}"
shift $(($# >= 2 ? 2 : 1))
out="${OUT:-runs/ci-ab}"
noisy="${NOISY:-fail}"
case "$noisy" in fail | pass | warn) ;; *)
	echo "gate.sh: NOISY=$noisy: want fail, pass or warn" >&2
	exit 2
	;;
esac
root="$(git rev-parse --show-toplevel)" || exit 2
work="$(mktemp -d /tmp/distbench-gate.XXXXXX)"
cleanup() {
	for side in base change; do git -C "$root" worktree remove --force "$work/$side" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT

# Each side built in a worktree of its own commit. -trimpath keeps the
# build cache shared between the two (and with earlier jobs' caches).
for side in base change; do
	ref="$base_ref"
	[ "$side" = change ] && ref="$change_ref"
	if ! git -C "$root" worktree add -q --detach "$work/$side" "$ref"; then
		echo "gate.sh: $ref: no such commit" >&2
		exit 2
	fi
	if ! (cd "$work/$side" && go build -trimpath -o "$work/distbench-$side" ./cmd/distbench); then
		echo "gate.sh: building $side ($ref) failed" >&2
		exit 2
	fi
	echo "gate.sh: $side is $(git -C "$root" rev-parse --short=12 "$ref") ($ref)"
done

mkdir -p "$(dirname "$out")"
"$work/distbench-change" ab "$work/distbench-base" "$work/distbench-change" --out "$out" "$@" >"$work/ab.out"
code=$?
# The summary is the markdown from "## distbench ab" on; the lines before
# it are ab's progress.
sed -n '/^## distbench ab/,$p' "$work/ab.out" >"$work/summary.md"
if [ -d "$out" ]; then
	cp "$work/summary.md" "$out/summary.md"
fi
cat "$work/ab.out"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
	cat "$work/summary.md" >>"$GITHUB_STEP_SUMMARY"
fi
case "$code" in
0) echo "gate.sh: pass" ;;
1) echo "gate.sh: FAIL: regression (see $out/compare.md, $out/verdict.json)" ;;
3)
	case "$noisy" in
	fail) echo "gate.sh: FAIL: too noisy to judge (NOISY=fail; see $out/compare.md)" ;;
	pass) echo "gate.sh: pass: too noisy to judge, passed as NOISY=pass asks"; code=0 ;;
	warn) echo "gate.sh: pass, with a warning: too noisy to judge (NOISY=warn)"; [ -n "${GITHUB_ACTIONS:-}" ] && echo "::warning::distbench ab: too noisy to judge; see the run's compare.md"; code=0 ;;
	esac
	;;
*) echo "gate.sh: FAIL: distbench ab exited $code" ;;
esac
exit "$code"
