#!/usr/bin/env bash
# bench-ab.sh VAR "V1 V2 ...": one stack (scripts/benchstack.sh), popup-api restarted with each
# value of the environment variable VAR in turn, BENCH_ROUNDS rounds alternating, same wrk
# settings: req/s, p99 and requests per API CPU-second for each. Used to keep or drop a hot-path
# lever, e.g.  scripts/bench-ab.sh POPUP_REDIS_PIPELINES "0 1 4"
# BENCH_AB_OPEN_RATE=N adds, after each wrk run, an open-loop run at N req/s (benchtool openloop,
# same duration) and prints its latency line: the tail at a fixed rate for each value.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
var=$1; values=$2
configs=${BENCH_CONFIGS:-20}
export BENCH_UIDS=${BENCH_UIDS:-20000} BENCH_REGIONS=${BENCH_REGIONS:-8}
rounds=${BENCH_ROUNDS:-2}
duration=${BENCH_DURATION:-8s}
log() { printf '[bench-ab] %s\n' "$*" >&2; }

source scripts/benchstack.sh

restart_api() { # VALUE
  kill -TERM "$api_pid"; wait "$api_pid" 2>/dev/null || true
  env "$var=$1" bin/popup-api >>"$run_dir/api.log" 2>&1 & api_pid=$!; pids+=($api_pid)
  for _ in $(seq 1 100); do curl -fsS -o /dev/null "$api/readyz" 2>/dev/null && break; sleep 0.1; done
  wrk -t2 -c64 -d3s -s loadtest/bench.lua "$api" >/dev/null # warm the process up
}
for r in $(seq 1 "$rounds"); do
  for v in $values; do
    restart_api "$v"
    c0=$(cpu_ticks "$api_pid")
    out=$(wrk -t2 -c64 -d"$duration" --latency -s loadtest/bench.lua "$api")
    c1=$(cpu_ticks "$api_pid")
    rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
    n=$(awk '/requests in/ {print $1}' <<<"$out")
    p99=$(awk '$1=="99%" {print $2}' <<<"$out")
    bad=$(awk '/Non-2xx/ {n+=$NF} END {print n+0}' <<<"$out")
    echo "round $r $var=$v: $rps req/s, p99 $p99, $(awk -v n="$n" -v c=$((c1 - c0)) -v t="$clk" 'BEGIN {printf "%d", n/(c/t)}') req/API-CPU-s, non-2xx $bad"
    if [[ -n ${BENCH_AB_OPEN_RATE:-} ]]; then
      echo "round $r $var=$v open loop: $(bin/benchtool openloop -url "$api" -rate "$BENCH_AB_OPEN_RATE" -duration "$duration" -uids "$BENCH_UIDS" -c "${BENCH_OPEN_CONNS:-64}")"
    fi
  done
done
