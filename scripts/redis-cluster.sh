#!/usr/bin/env bash
# Starts (or stops) a throwaway Redis Cluster on loopback: 3 masters and 3
# replicas (one each), a 2 s node timeout so a killed master's replica takes
# over within seconds. Every node lives under DIR/PORT; `start` prints the
# cluster's URL (its three masters) and writes it to DIR/url.
#
#   scripts/redis-cluster.sh start DIR [REDIS-SERVER FLAGS…]   # e.g. --appendonly yes --appendfsync always
#   scripts/redis-cluster.sh stop DIR                           # stops every node, by pid
set -euo pipefail

cmd=${1:?usage: redis-cluster.sh start|stop DIR [flags…]}
dir=${2:?usage: redis-cluster.sh start|stop DIR [flags…]}
shift 2

# shellcheck source=scripts/retry.sh
source "$(dirname "$0")/retry.sh"

wait_for() { # what, tries, command...
  local what=$1 tries=$2; shift 2
  retry_for "$tries" "$@" && return 0
  echo "redis-cluster: $what; the nodes' logs end:" >&2
  tail -n 5 "$dir"/*/redis.log >&2 || true
  return 1
}

case "$cmd" in
  start)
    command -v redis-server >/dev/null || { echo "redis-cluster: redis-server is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
    mkdir -p "$dir"
    ports=() nodes=()
    for _ in 1 2 3 4 5 6; do
      port=$(python3 "$(dirname "$0")/free-port.py" --plus 10000)  # the bus port, 10000 higher, free too
      ports+=("$port")
      nodes+=("127.0.0.1:$port")
      mkdir -p "$dir/$port"
      redis-server --bind 127.0.0.1 --port "$port" --save "" --daemonize yes "$@" \
        --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
        --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log" --dir "$dir/$port" >/dev/null
    done
    for port in "${ports[@]}"; do wait_for "node $port did not start" 100 redis-cli -h 127.0.0.1 -p "$port" ping; done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 || {
      echo "redis-cluster: redis-cli --cluster create failed:" >&2; tail -n 20 "$dir/create.log" >&2; exit 1; }
    for port in "${ports[@]}"; do
      wait_for "node $port did not see the cluster ok" 150 sh -c "redis-cli -h 127.0.0.1 -p $port cluster info | grep -q cluster_state:ok"
    done
    # Each master with its replica attached and in sync, so a master killed by a test has one to take over.
    for port in "${ports[@]:0:3}"; do
      wait_for "master $port has no replica in sync" 150 sh -c "redis-cli -h 127.0.0.1 -p $port info replication | grep -q 'slave0:.*state=online'"
    done
    url="redis://$(IFS=,; echo "${nodes[*]:0:3}")"
    echo "$url" >"$dir/url"
    echo "$url"
    ;;
  stop)
    for f in "$dir"/*/redis.pid; do
      [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
    done
    ;;
  *) echo "usage: redis-cluster.sh start|stop DIR [flags…]" >&2; exit 2 ;;
esac
