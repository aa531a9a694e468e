#!/usr/bin/env bash
# bench-floor.sh: the impression path's floor (issue 55). One stack (scripts/benchstack.sh,
# BENCH_UIDS users warmed, 20,000); per round (BENCH_ROUNDS, 3), the order rotating, make bench's
# run C load (every GET shows the record popup) for BENCH_DURATION (8s) with BENCH_CONNS (64) wrk
# connections against:
#   bare    loadtest/refserver answering the impression answer's size (make bench's A')
#   floor2  loadtest/floorserver: that answer after a Redis GET and a record-shaped EVALSHA through
#           the service's Redis client and autopipeliner, nothing else
#   floor1  floorserver -trips 1: the EVALSHA alone (a state already known)
#   raw2    floorserver -client raw: floor2's commands through a minimal full-duplex client
#   win2    floor2 with a 100 µs wait for more commands after each flush (go-redis's MaxFlushDelay)
#   fd2     floor2 with go-redis's full-duplex autopipeliner (a writer and a reader on one connection)
#   api     popup-api itself (its answer, its GET and record script, its queued impression, which
#           the worker drains meanwhile and after the run: the floors' events are not drained)
# BENCH_FLOOR_SERVERS ("floor2 floor1 raw2 api") picks them; bare always runs, once a round.
# For each: req/s, p99 and the server's CPU-µs per request (/proc, its process only); then the
# medians over the rounds of each server's CPU per request over the round's bare run's: make
# bench's (b) CPU ratio for the API, and the same ratio for servers that do no more than the
# Redis round trips. The readings go to loadtest/reports/bench-floor-STAMP.txt.
# BENCH_FLOOR_PROFILE=PREFIX: a CPU profile of each server but bare over each run but its last 2 s,
# PREFIX-SERVER-rROUND.prof (merge a server's rounds with go tool pprof -proto A B C >MERGED); the
# profiler's own CPU then counts in those servers' figures.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
configs=${BENCH_CONFIGS:-20}
export BENCH_UIDS=${BENCH_UIDS:-20000} BENCH_REGIONS=${BENCH_REGIONS:-8}
unset BENCH_QUERY_REGION
rounds=${BENCH_ROUNDS:-3}
duration=${BENCH_DURATION:-8s}
secs=${duration%s}
if [ -n "${BENCH_FLOOR_PROFILE:-}" ] && ! [ "$secs" -gt 2 ] 2>/dev/null; then
  log "BENCH_FLOOR_PROFILE needs BENCH_DURATION in seconds, over 2 (got $duration)"; exit 2
fi
log() { printf '[bench-floor] %s\n' "$*" >&2; }

source scripts/benchstack.sh
go build -o bin/floorserver ./loadtest/floorserver

size=$(answer_size rec)
start_bare "$size"; bare_pid=$bare_started_pid; bare_url=$bare_started_url
declare -A pid url
pid[bare]=$bare_pid url[bare]=$bare_url pid[api]=$api_pid url[api]=$api
servers=(bare)
for s in ${BENCH_FLOOR_SERVERS:-floor2 floor1 raw2 api}; do if [ "$s" != bare ]; then servers+=("$s"); fi; done
declare -A flags=([floor2]="-trips 2" [floor1]="-trips 1" [raw2]="-client raw" [win2]="-flush-delay 100us" [fd2]="-full-duplex")
for name in "${servers[@]}"; do
  case $name in bare | api) continue ;; esac
  [ -n "${flags[$name]:-}" ] || { log "unknown server $name"; exit 2; }
  port=$(scripts/services.sh free-port 1)
  # shellcheck disable=SC2086 # the flags are words
  bin/floorserver -addr "127.0.0.1:${port}" -size "$size" -redis "127.0.0.1:${redis_port}" ${flags[$name]} \
    >>"$run_dir/floor.log" 2>&1 & pid[$name]=$!; pids+=($!)
  url[$name]="http://127.0.0.1:${port}"
  for _ in $(seq 1 50); do curl -fsS -o /dev/null "${url[$name]}/?uid=x" 2>/dev/null && break; sleep 0.1; done
  curl -fsS -o /dev/null "${url[$name]}/?uid=x" # it must answer 200
done
degraded() { metrics | awk '/^popup_degraded_responses_total/ {n+=$2} END {printf "%d", n}'; }
log "answer $size B; $rounds rounds of $duration each"

table="$run_dir/floor.txt"
for r in $(seq 1 "$rounds"); do
  # rotate the order by round, so that no server always runs after the API's drain
  k=$(((r - 1) % ${#servers[@]}))
  order=("${servers[@]:$k}" "${servers[@]:0:$k}")
  for s in "${order[@]}"; do
    d0=$(degraded); t0=$(cpu_ticks "${pid[$s]}")
    prof_pid=
    if [ -n "${BENCH_FLOOR_PROFILE:-}" ] && [ "$s" != bare ]; then
      prof_url="${url[$s]}/debug/pprof/profile" auth=()
      [ "$s" = api ] && prof_url="http://127.0.0.1:${admin_port}/debug/pprof/profile" auth=(-H 'Authorization: Bearer bench')
      curl -fsS "${auth[@]}" -o "${BENCH_FLOOR_PROFILE}-$s-r$r.prof" "$prof_url?seconds=$((secs - 2))" & prof_pid=$!
    fi
    out=$(BENCH_QUERY_REGION=rec wrk -t2 -c"${BENCH_CONNS:-64}" -d"$duration" --latency -s loadtest/bench.lua "${url[$s]}")
    t1=$(cpu_ticks "${pid[$s]}"); d1=$(degraded)
    if [ -n "$prof_pid" ]; then wait "$prof_pid" || log "$s round $r: no profile"; fi
    read -r rps _ p99 reqs bad < <(bin/benchtool wrkparse <<<"$out")
    [ "$s" = api ] && bad=$((bad + d1 - d0))
    if [ "$bad" != 0 ]; then log "$s round $r: $bad errors or degraded answers; this run measures nothing"; exit 1; fi
    us=$(awk -v t=$((t1 - t0)) -v c="$clk" -v n="$reqs" 'BEGIN {printf "%.2f", t / c / n * 1e6}')
    echo "$r $s $rps $p99 $us" >>"$table"
    log "round $r $s: $rps req/s, p99 $p99 ms, $us CPU-µs a request"
    [ "$s" = api ] && wait_drained
  done
done
cp "$table" "loadtest/reports/bench-floor-$(date -u +%Y%m%dT%H%M%SZ).txt" # round server req/s p99 CPU-µs
# the medians of each round's CPU per request over its bare run's
awk '{cpu[$1" "$2] = $5; rps[$1" "$2] = $3; p99[$1" "$2] = $4; if ($1 > n) n = $1}
  function median(a, k,   i, j, t) { for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return k % 2 ? a[(k+1)/2] : (a[k/2] + a[k/2+1]) / 2 }
  END {
    printf "| server | CPU-µs a request (rounds) | over bare (median) | req/s over bare (median) | p99 ms (rounds) |\n|---|---|---|---|---|\n"
    k = split(list_names, names, " ")
    for (s = 1; s <= k; s++) {
      name = names[s]; list = ""; lat = ""
      for (r = 1; r <= n; r++) {
        list = list (r > 1 ? ", " : "") cpu[r" "name]; lat = lat (r > 1 ? ", " : "") p99[r" "name]
        c[r] = cpu[r" "name] / cpu[r" bare"]; q[r] = rps[r" "name] / rps[r" bare"]
      }
      printf "| %s | %s | %.2f | %.3f | %s |\n", name, list, median(c, n), median(q, n), lat
    }
  }' list_names="${servers[*]}" "$table"
