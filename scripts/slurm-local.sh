#!/usr/bin/env bash
# slurm-local.sh: a one-node Slurm cluster on loopback, for tests of
# distbench under srun (make slurm-test). It starts its own munged,
# slurmctld and slurmd with a private configuration and state under DIR,
# on ports of their own, and stops exactly those:
#
#   scripts/slurm-local.sh start DIR    start; prints the SLURM_CONF to export
#   scripts/slurm-local.sh stop DIR     stop what start started, remove DIR
#
# The node claims 4 CPUs whatever the machine has (SlurmdParameters=
# config_overrides), so that 4 tasks run on a 2-core machine, as the local
# launcher's 4 ranks do. Needs root and Debian's slurm-wlm and munge.
set -euo pipefail

die() { echo "slurm-local: $*" >&2; exit 2; }
[ $# -eq 2 ] || die "usage: $0 start|stop DIR"
cmd=$1 D=$(realpath -m "$2")

stop() {
  for p in slurmd slurmctld munged; do
    if [ -s "$D/$p.pid" ]; then
      kill "$(cat "$D/$p.pid")" 2>/dev/null || true
    fi
  done
  sleep 1
  for p in slurmd slurmctld munged; do
    if [ -s "$D/$p.pid" ]; then
      kill -9 "$(cat "$D/$p.pid")" 2>/dev/null || true
    fi
  done
  rm -rf "$D"
}

start() {
  for b in munged slurmctld slurmd srun; do
    command -v "$b" >/dev/null || die "$b not found (Debian: apt-get install slurm-wlm munge)"
  done
  [ "$(id -u)" = 0 ] || die "needs root (slurmd runs jobs as their users)"
  [ ! -e "$D" ] || die "$D exists: stop it first"
  mkdir -p "$D/state" "$D/spool" "$D/munge"
  chmod 700 "$D/munge"
  dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$D/munge/munge.key"
  munged --force --socket="$D/munge/munge.sock" --key-file="$D/munge/munge.key" \
    --pid-file="$D/munged.pid" --log-file="$D/munged.log" --seed-file="$D/munge/seed"
  local host
  host=$(hostname -s)
  cat > "$D/slurm.conf" <<CONF
ClusterName=distbench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=${SLURM_LOCAL_PORT:-16817}
SlurmdPort=$(( ${SLURM_LOCAL_PORT:-16817} + 1 ))
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  export SLURM_CONF=$D/slurm.conf
  slurmctld -i
  slurmd
  # Up when the node is idle.
  for _ in $(seq 1 60); do
    if sinfo -h -o %t 2>/dev/null | grep -q idle; then
      echo "SLURM_CONF=$D/slurm.conf"
      return 0
    fi
    sleep 0.5
  done
  echo "slurm-local: the node did not come up within 30s:" >&2
  tail -5 "$D/slurmctld.log" "$D/slurmd.log" >&2 || true
  stop
  exit 1
}

case $cmd in
  start) start ;;
  stop) stop ;;
  *) die "usage: $0 start|stop DIR" ;;
esac
