#!/usr/bin/env bash
# A throwaway Apache Cassandra cluster on loopback, for aggro's cassandra:// target: cassandra-all as
# scripts/cassandra/pom.xml pins it, from Maven Central into a cache (once), each node a JVM on its own
# loopback address (127.0.0.1, 127.0.0.2, … — the whole 127/8 is loopback on Linux) with the same
# ports, a small heap, no JMX, stopped by pid.
#
#   scripts/cassandra.sh fetch                    # the jars, once; prints their directory
#   scripts/cassandra.sh start DIR [NODES] [SYNC] # NODES (default 3), commit log periodic|batch|group;
#                                                 # prints the URL, also written to DIR/url
#   scripts/cassandra.sh stop DIR                 # kills every node it started there
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pom="$here/cassandra/pom.xml"
sum=$(sha256sum "$pom" | cut -c1-12)
lib="${AGGRO_CACHE:-$HOME/.cache/aggro}/cassandra-$sum/lib"

fetch() {
  if [ ! -f "$lib/.complete" ]; then
    command -v mvn >/dev/null || { echo "cassandra: Maven is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
    rm -rf "$lib"
    mvn -q -B -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$lib" >&2 \
      || { echo "cassandra: could not fetch cassandra-all from Maven Central" >&2; exit 1; }
    touch "$lib/.complete"
  fi
  echo "$lib"
}

# A port free on every node's address.
free_port() { # NODES
  local hosts=() i
  for i in $(seq "$1"); do hosts+=("127.0.0.$i"); done
  python3 "$here/free-port.py" "${hosts[@]}"
}

listening() { bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

# JVM flags Cassandra 5 needs on Java 17 (its conf/jvm17-server.options), and a small test heap.
jvm_flags=(-Xms256m -Xmx768m -XX:+UseG1GC -XX:MaxGCPauseMillis=300 -XX:+ParallelRefProcEnabled -Xss512k
  -Djdk.attach.allowAttachSelf=true -Dio.netty.tryReflectionSetAccessible=true
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED --add-exports java.base/java.lang.ref=ALL-UNNAMED
  --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
  --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
  --add-exports java.sql/java.sql=ALL-UNNAMED --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
  --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
  --add-opens java.base/java.lang.module=ALL-UNNAMED --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
  --add-opens java.base/jdk.internal.math=ALL-UNNAMED --add-opens java.base/jdk.internal.module=ALL-UNNAMED
  --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-opens java.base/java.io=ALL-UNNAMED
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
  --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/java.util=ALL-UNNAMED)

# Node I's 8 tokens of NODES: the ring (Murmur3's range) cut in 8 × NODES equal parts dealt out in turn, each
# token mid-part (never the ring's minimum, which no node may take).
tokens() { # I NODES
  python3 -c 'import sys; i, n = int(sys.argv[1]), int(sys.argv[2]); step = 2**64 // (8 * n); print(",".join(str(-2**63 + (k * n + i - 1) * step + step // 2) for k in range(8)))' "$1" "$2"
}

# Starts the node in directory NODE (its cassandra.yaml written) in the background; its pid in NODE/pid.
launch() { # NODE LIB
  local node=$1 lib=$2
  (cd "$node" && exec nohup java "${jvm_flags[@]}" -Dcassandra.config="file://$node/cassandra.yaml" \
    -Dcassandra.storagedir="$node" -Dcassandra.logdir="$node" -Dlogback.configurationFile="$here/cassandra/logback.xml" \
    -Dcassandra-foreground=yes -Dcassandra.ring_delay_ms=1000 -Dcassandra.skip_wait_for_gossip_to_settle=0 \
    -Dcassandra.load_ring_state=false -Dcassandra.superuser_setup_delay_ms=0 \
    -cp "$lib/*" org.apache.cassandra.service.CassandraDaemon) >"$node/stdout.log" 2>&1 &
  echo $! >"$node/pid"
}

start() { # DIR NODES SYNC
  local dir=$1 nodes=$2 sync=$3 cql storage i addr node window
  # Each mode takes its own window, and Cassandra refuses the others' (batch takes none).
  case $sync in
    periodic) window="commitlog_sync_period: 10000ms" ;;
    group) window="commitlog_sync_group_window: 2ms" ;;
    batch) window="" ;;
    *) echo "cassandra: commit log sync $sync: expected periodic, batch or group" >&2; exit 2 ;;
  esac
  lib=$(fetch)
  command -v java >/dev/null || { echo "cassandra: Java is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
  mkdir -p "$dir"
  cql=$(free_port "$nodes")
  storage=$(free_port "$nodes")
  local urls=()
  for i in $(seq "$nodes"); do
    addr="127.0.0.$i"
    node="$dir/node$i"
    mkdir -p "$node"
    sed -e "s|@DIR@|$node|g" -e "s|@ADDR@|$addr|g" -e "s|@SEED@|127.0.0.1|g" -e "s|@STORAGE_PORT@|$storage|g" \
      -e "s|@CQL_PORT@|$cql|g" -e "s|@SYNC@|$sync|g" -e "s|@SYNC_WINDOW@|$window|g" -e "s|@TOKENS@|$(tokens "$i" "$nodes")|g" \
      "$here/cassandra/cassandra.yaml.in" >"$node/cassandra.yaml"
    # Nodes join one at a time, each once the one before serves CQL. A node that gives up while joining (a
    # seed that did not answer its first gossip in time on a loaded machine, seen once in five starts here)
    # is started again from an empty directory, twice at most.
    local try up=0
    for try in 1 2 3; do
      launch "$node" "$lib"
      for _ in $(seq 900); do
        listening "$addr" "$cql" && { up=1; break; }
        kill -0 "$(cat "$node/pid")" 2>/dev/null || break
        sleep 0.2
      done
      [ $up = 1 ] && break
      if kill -0 "$(cat "$node/pid")" 2>/dev/null; then
        echo "cassandra: node $addr did not serve CQL within 3 minutes; its log ends:" >&2; tail -n 20 "$node/system.log" >&2; exit 1
      fi
      echo "cassandra: node $addr exited while joining (try $try of 3); its log ends:" >&2
      grep -v '^\s*at ' "$node/stdout.log" | tail -n 3 >&2
      [ "$try" = 3 ] && exit 1
      rm -rf "$node"/{data,commitlog,saved_caches,hints,cdc_raw}
    done
    urls+=("$addr:$cql")
  done
  local url
  url="cassandra://$(IFS=,; echo "${urls[*]}")"
  echo "$url" >"$dir/url"
  echo "$url"
}

case "${1:-}" in
  fetch) fetch ;;
  start) start "${2:?usage: cassandra.sh start DIR [NODES] [SYNC]}" "${3:-3}" "${4:-periodic}" ;;
  stop)
    pids=()
    for f in "${2:?usage: cassandra.sh stop DIR}"/node*/pid; do
      [ -f "$f" ] && pids+=("$(cat "$f")")
    done
    [ ${#pids[@]} -gt 0 ] || exit 0
    kill "${pids[@]}" 2>/dev/null || true
    # A node takes a few seconds to shut down; one still there after ten is killed outright.
    for _ in $(seq 50); do
      alive=0
      for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
      [ $alive = 1 ] || exit 0
      sleep 0.2
    done
    kill -9 "${pids[@]}" 2>/dev/null || true
    ;;
  *) echo "usage: cassandra.sh fetch | start DIR [NODES] [SYNC] | stop DIR" >&2; exit 2 ;;
esac
