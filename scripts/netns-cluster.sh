#!/usr/bin/env bash
# netns-cluster.sh: several hosts on one machine, for tests and benchmarks
# that must cross real kernel TCP between distinct network stacks.
#
#   scripts/netns-cluster.sh up HOSTS [RATE]   make HOSTS namespaces joined by a bridge
#   scripts/netns-cluster.sh addr I            print host I's address
#   scripts/netns-cluster.sh exec I CMD...     run CMD inside host I
#   scripts/netns-cluster.sh down              remove every namespace and the bridge
#
# Host I is the namespace ${PREFIX}h$I with address ${SUBNET}.$((I+1))/24 on
# a veth pair whose other end is a port of the bridge ${PREFIX}br. RATE (tc
# syntax: 1gbit, 200mbit; "none" for unshaped) caps each host's NIC in both
# directions with a token bucket (tbf) on both ends of its veth pair: what
# leaves the host, and what the bridge delivers to it. netem does not exist
# on these kernels, so there is no added latency; a host's own ranks talk
# over its loopback, unshaped, as ranks within a host do.
#
# PREFIX (DISTBENCH_NETNS_PREFIX, default "db") keeps concurrent clusters
# apart: interface names are at most 15 bytes, so keep it short.
# SUBNET is DISTBENCH_NETNS_SUBNET, default 10.231.0. Needs root (or
# CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2.
#
# The NIC's queue is a knob, because it decides what many-to-one traffic (a
# parameter server's pushes) costs: NETNS_TBF_LATENCY bounds tbf's queue
# (default 200ms, deep enough never to drop below the rate), NETNS_LEAF puts
# a qdisc under tbf (fq_codel, where the kernel has it: these have only
# tbf and pfifo), NETNS_SYSCTL sets a sysctl in every host, e.g.
# net.ipv4.tcp_slow_start_after_idle=0.
set -euo pipefail

P=${DISTBENCH_NETNS_PREFIX:-db}
SUBNET=${DISTBENCH_NETNS_SUBNET:-10.231.0}
BR=${P}br

die() { echo "netns-cluster: $*" >&2; exit 2; }

# burst: the bucket must hold at least one GSO packet (64KiB) and ~2ms of
# the rate, or tbf drops below its rate; larger only lets short bursts pass.
burst_for() {
  local rate=$1 bits
  bits=$(awk -v r="$rate" 'BEGIN {
    n = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u)
    m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : (u == "gbit") ? 1e9 : (u == "bit" || u == "") ? 1 : -1
    if (m < 0 || n <= 0) { print -1; exit }
    printf "%d", n * m }')
  [ "$bits" -gt 0 ] || die "rate $rate: want a tc rate such as 1gbit, 200mbit, 500kbit (or none)"
  local b=$(( bits / 8 / 500 ))
  echo $(( b < 131072 ? 131072 : b ))
}

shape() { # dev [netns]
  local dev=$1 ns=${2:-} burst
  [ "$RATE" = none ] && return 0
  burst=$(burst_for "$RATE")
  local run=()
  [ -n "$ns" ] && run=(ip netns exec "$ns")
  "${run[@]}" tc qdisc replace dev "$dev" root handle 1: tbf rate "$RATE" burst "$burst" latency "${NETNS_TBF_LATENCY:-200ms}"
  [ -z "${NETNS_LEAF:-}" ] || "${run[@]}" tc qdisc add dev "$dev" parent 1:1 handle 10: $NETNS_LEAF
}

up() {
  local hosts=$1
  RATE=${2:-none}
  [[ $hosts =~ ^[0-9]+$ ]] && [ "$hosts" -ge 1 ] && [ "$hosts" -le 200 ] || die "HOSTS $hosts: want 1 to 200"
  [ "$RATE" = none ] || burst_for "$RATE" >/dev/null
  ip link add "$BR" type bridge 2>/dev/null || die "cannot create bridge $BR (root needed; or it exists: run down first)"
  ip link set "$BR" up
  for ((i = 0; i < hosts; i++)); do
    local ns=${P}h$i
    ip netns add "$ns"
    ip link add "${P}v$i" type veth peer name "${P}p$i"
    ip link set "${P}p$i" netns "$ns"
    ip link set "${P}v$i" master "$BR" up
    ip netns exec "$ns" ip link set lo up
    [ -z "${NETNS_SYSCTL:-}" ] || ip netns exec "$ns" sysctl -qw $NETNS_SYSCTL
    ip netns exec "$ns" ip addr add "$SUBNET.$((i + 1))/24" dev "${P}p$i"
    ip netns exec "$ns" ip link set "${P}p$i" up
    shape "${P}p$i" "$ns"
    shape "${P}v$i"
  done
}

down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${P}h[0-9]+$" || true); do
    ip netns del "$ns"
  done
  ip link del "$BR" 2>/dev/null || true
}

case ${1:-} in
  up) [ $# -ge 2 ] || die "usage: up HOSTS [RATE]"; up "$2" "${3:-none}" ;;
  down) down ;;
  addr) [ $# -eq 2 ] || die "usage: addr I"; echo "$SUBNET.$(($2 + 1))" ;;
  exec) [ $# -ge 3 ] || die "usage: exec I CMD..."; i=$2; shift 2; exec ip netns exec "${P}h$i" "$@" ;;
  *) die "usage: $0 up HOSTS [RATE] | addr I | exec I CMD... | down" ;;
esac
