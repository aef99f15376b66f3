#!/usr/bin/env bash
# DDP of torchvision's ResNet-18 (examples/torch_ddp.py) through gloo and
# through distbench's ring, tree and ps, interleaved: round 1 of every
# backend, then round 2, ..., so that a burst of load from other work hits
# one round of each rather than all of one. Prints each round's line, then
# per backend the median over rounds of step time, communication time,
# exposed communication and images/s, and each distbench strategy's
# communication time as a fraction of gloo's.
#
#   make capi && bench/torch-ddp.sh              # np 2, 5 rounds
#   ROUNDS=3 NP=3 ARGS="--steps 10" bench/torch-ddp.sh
#
# Knobs: NP (2), ROUNDS (5), BACKENDS (gloo ring tree ps), ARGS (passed
# to examples/torch_ddp.py; default --steps 10 --warmup 2), PYTHON
# (/usr/bin/python3), OUT (a file for the JSON lines; default a temporary).
set -euo pipefail
cd "$(dirname "$0")/.."
NP=${NP:-2}
ROUNDS=${ROUNDS:-5}
BACKENDS=${BACKENDS:-gloo ring tree ps}
ARGS=${ARGS:---steps 10 --warmup 2}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${OUT:-$(mktemp /tmp/torch-ddp.XXXXXX.jsonl)}
[ -f bin/libdistbench.so ] || { echo "bench/torch-ddp.sh: bin/libdistbench.so is missing: run make capi" >&2; exit 2; }
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
echo "bench/torch-ddp.sh: np $NP, $ROUNDS rounds of: $BACKENDS; lines in $OUT" >&2
for round in $(seq 1 "$ROUNDS"); do
  for b in $BACKENDS; do
    backend=distbench
    [ "$b" = gloo ] && backend=gloo
    # shellcheck disable=SC2086  # ARGS is a list of flags
    # a rendezvous port of its own: --standalone's fixed 29400 may be
    # another torchrun's on a shared machine
    port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    line=$(DISTBENCH_STRATEGY=$b OMP_NUM_THREADS=1 "$PYTHON" -m torch.distributed.run --nnodes 1 --rdzv_backend c10d \
      --rdzv_endpoint "127.0.0.1:$port" --rdzv_id "bench-$$-$round-$b" --nproc_per_node "$NP" --redirects 2 --tee 2 --log_dir "$logs" \
      examples/torch_ddp.py --backend "$backend" $ARGS 2>/dev/null | grep '^{' | tail -n1) || true
    if [ -z "$line" ]; then
      echo "round $round $b: failed (run it alone to see why)" >&2
      continue
    fi
    echo "{\"round\": $round, \"name\": \"$b\", \"run\": $line}" | tee -a "$OUT"
  done
done
"$PYTHON" - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["name"], []).append(r["run"])
med = lambda runs, k: statistics.median(x[k] for x in runs)
print("%-6s %6s %10s %10s %12s %10s %s" % ("name", "rounds", "step ms", "comm ms", "exposed ms", "images/s", "comm / gloo's"))
gloo = by.get("gloo")
for name, runs in by.items():
    ratio = ""
    if gloo and name != "gloo":
        ratio = "%.2f" % (med(runs, "comm_ms") / med(gloo, "comm_ms"))
    print("%-6s %6d %10.1f %10.1f %12.1f %10.1f %s" % (name, len(runs), med(runs, "step_ms"), med(runs, "comm_ms"),
                                                     med(runs, "exposed_ms"), med(runs, "images_per_s"), ratio))
PY
