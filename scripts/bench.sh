#!/usr/bin/env bash
# bench.sh (`make bench`): one run, same machine, same load settings, alternating
#   A = loadtest/refserver (bare net/http, fixed body of a popup answer's size)
#   B = GET /api/v1/popup on popup-api (warm users, real Redis + MariaDB + worker)
# and reports req/s of both and their ratio, p50/p99, API CPU seconds per 1,000 requests,
# MySQL statements per 1,000 GETs, and p99 at a fixed offered rate of half B's maximum.
#
#   BENCH_CONFIGS (20)  BENCH_UIDS (100000)  BENCH_DURATION (10s)  BENCH_CONNS (64)
#   BENCH_THREADS (2)   BENCH_ROUNDS (2)     BENCH_OPEN_DURATION (10s)  BENCH_REGIONS (8)
#   BENCH_WARM (api: GET every user until it answers no popup; fill: write that state straight into
#   Redis with `benchtool fill`, for a million users)  BENCH_WARM_TRIES (30)  BENCH_PROFILE (file: CPU profile of the first B run)
#   BENCH_SWEEP ("8 16 32 64 128 256": connection counts of the sweep written for the plots; "" skips it)
#   BENCH_RECORD (1): after each B, a run C of GETs that all get a popup (the record script's cost)
#   BENCH_OPEN_CONNS (64): connections of the open-loop runs
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
unset BENCH_QUERY_REGION # only run C sets it
configs=${BENCH_CONFIGS:-20}
export BENCH_UIDS=${BENCH_UIDS:-100000} BENCH_REGIONS=${BENCH_REGIONS:-8}
duration=${BENCH_DURATION:-10s}
conns=${BENCH_CONNS:-64}
threads=${BENCH_THREADS:-2}
rounds=${BENCH_ROUNDS:-2}
open_duration=${BENCH_OPEN_DURATION:-10s}

log() { printf '[bench] %s\n' "$*" >&2; }

source scripts/benchstack.sh

degraded() { metrics | awk '/^popup_degraded_responses_total/ {print $2+0}'; }
questions() { mariadb --no-defaults -h127.0.0.1 -P"$mysql_port" -upopup -ppopup -N -e "SHOW GLOBAL STATUS LIKE 'Questions'" | awk '{print $2}'; }

# wrk_run URL [CONNS] → "rps p50_ms p99_ms requests non2xx_or_errors"
wrk_run() {
  local out
  out=$(wrk -t"$threads" -c"${2:-$conns}" -d"$duration" --latency -s loadtest/bench.lua "$1")
  echo "$out" >>"$run_dir/wrk.log"
  local rps p50 p99 reqs bad
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  bad=$(awk '/Non-2xx/ {n+=$NF} /Socket errors/ {gsub(/[^0-9 ]/," "); n+=$1+$2+$3+$4} END {print n+0}' <<<"$out")
  echo "$rps $(to_ms "$p50") $(to_ms "$p99") $reqs $bad"
}
to_ms() { # wrk prints 1.23ms / 456.00us / 1.02s
  awk -v v="$1" 'BEGIN { if (v ~ /us$/) {sub(/us$/,"",v); print v/1000} else if (v ~ /ms$/) {sub(/ms$/,"",v); print v+0} else {sub(/s$/,"",v); print v*1000} }'
}

# cpu_of "PID..." → their CPU ticks now, one per PID
cpu_of() { local p; for p in $1; do cpu_ticks "$p"; done | tr '\n' ' '; }
# per_k TICKS0 TICKS1 REQS → CPU ms per 1,000 requests of each process, space-separated
per_k() { awk -v a="$1" -v b="$2" -v n="$3" -v t="$clk" 'BEGIN { k=split(a,x," "); split(b,y," ");
  for (i=1;i<=k;i++) printf "%.1f ", (y[i]-x[i])/t*1000*1000/n }'; }
redis_pid=$(cat "$run_dir/redis.pid"); mysqld_pid=$(cat "$run_dir/mariadb.pid")
procs="$api_pid $redis_pid $worker_pid $mysqld_pid"

results=()
records=()
best_api=0
for r in $(seq 1 "$rounds"); do
  c0=$(cpu_of "$ref_pid")
  read -r a_rps a_p50 a_p99 a_reqs a_bad < <(wrk_run "$ref")
  a_cpu=$(per_k "$c0" "$(cpu_of "$ref_pid")" "$a_reqs")
  log "round $r A (bare):  ${a_rps} req/s p50 ${a_p50} ms p99 ${a_p99} ms errors ${a_bad} | bare server ${a_cpu}CPU-ms/1k req"
  if [ "$a_bad" != 0 ]; then log "the reference server answered errors: this run compares nothing; stopping"; exit 1; fi
  d0=$(degraded); q0=$(questions); p0=$(cpu_of "$procs")
  if [ -n "${BENCH_PROFILE:-}" ] && [ "$r" = 1 ]; then
    # CPU profile of the API during the first B run (BENCH_PROFILE=file)
    curl -fsS -H 'Authorization: Bearer bench' -o "$BENCH_PROFILE" \
      "http://127.0.0.1:${admin_port}/debug/pprof/profile?seconds=4" & prof_pid=$!
  fi
  read -r b_rps b_p50 b_p99 b_reqs b_bad < <(wrk_run "$api")
  q1=$(questions); d1=$(degraded); p1=$(cpu_of "$procs")
  # A degraded answer (no Redis) is a 200 but not a real answer: it counts as an error here.
  b_bad=$(awk -v b="$b_bad" -v a="$d0" -v c="$d1" 'BEGIN {printf "%d", b + c - a}')
  if [ -n "${prof_pid:-}" ]; then wait "$prof_pid" || true; prof_pid=; fi
  cpu_s=$(awk -v a="${p0%% *}" -v b="${p1%% *}" -v t="$clk" 'BEGIN {print (b-a)/t}') # popup-api is first in $procs
  api_s_per_k=$(awk -v c="$cpu_s" -v n="$b_reqs" 'BEGIN {printf "%.4f", c*1000/n}')
  per_cpu=$(awk -v c="$cpu_s" -v n="$b_reqs" 'BEGIN {printf "%.0f", n/c}')
  # minus the one SHOW STATUS of ours inside the window
  stmts=$(awk -v a="$q0" -v b="$q1" -v n="$b_reqs" 'BEGIN {printf "%.3f", (b-a-1)*1000/n}')
  ratio=$(awk -v a="$a_rps" -v b="$b_rps" 'BEGIN {printf "%.3f", b/a}')
  b_cpu=$(per_k "$p0" "$p1" "$b_reqs")
  log "round $r B (api):   ${b_rps} req/s p50 ${b_p50} ms p99 ${b_p99} ms errors ${b_bad} | ratio ${ratio} | ${api_s_per_k} CPU-s/1k req (${per_cpu} req/CPU-s) | ${stmts} MySQL stmts/1k GETs"
  log "round $r B CPU-ms/1k req: api redis worker mariadb = ${b_cpu}"
  results+=("$r $a_rps $a_p50 $a_p99 $a_bad $b_rps $b_p50 $b_p99 $b_bad $ratio $api_s_per_k $per_cpu $stmts")
  best_api=$(awk -v a="$best_api" -v b="$b_rps" 'BEGIN {print (b>a)?b:a}')
  if [ "${BENCH_RECORD:-1}" = 1 ]; then
    # C: the same GET, but every answer is a popup, so every request also runs the record script
    # and queues an impression that the worker writes to MariaDB meanwhile.
    d0=$(degraded); p0=$(cpu_of "$procs")
    read -r c_rps c_p50 c_p99 c_reqs c_bad < <(BENCH_QUERY_REGION=rec wrk_run "$api")
    p1=$(cpu_of "$procs"); d1=$(degraded)
    c_bad=$(awk -v b="$c_bad" -v a="$d0" -v c="$d1" 'BEGIN {printf "%d", b + c - a}')
    c_cpu=$(per_k "$p0" "$p1" "$c_reqs")
    backlog=$(queue_len)
    c_ratio=$(awk -v a="$b_rps" -v b="$c_rps" 'BEGIN {printf "%.3f", b/a}')
    log "round $r C (record): ${c_rps} req/s p50 ${c_p50} ms p99 ${c_p99} ms errors ${c_bad} | C/B ${c_ratio} | CPU-ms/1k req: api redis worker mariadb = ${c_cpu}| backlog ${backlog}"
    records+=("$r $b_rps $c_rps $c_ratio $c_p50 $c_p99 $c_bad ${b_cpu}${c_cpu}${backlog}")
    wait_drained
  fi
done

half=$(awk -v b="$best_api" 'BEGIN {printf "%d", b/2}')
log "open loop at ${half} req/s (half of B's best) for ${open_duration}"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
open_api=$(bin/benchtool openloop -url "$api" -rate "$half" -duration "$open_duration" -uids "$BENCH_UIDS" -c "${BENCH_OPEN_CONNS:-64}" -hist "loadtest/reports/latency-api-${stamp}.csv")
open_ref=$(bin/benchtool openloop -url "$ref" -rate "$half" -duration "$open_duration" -uids "$BENCH_UIDS" -c "${BENCH_OPEN_CONNS:-64}" -hist "loadtest/reports/latency-bare-${stamp}.csv")
log "B ${open_api}"
log "A ${open_ref}"
decisions=$(metrics | grep '^popup_decisions_total' || true)
# why any answer was degraded (the API logs that at most once a second)
grep -h "degraded" "$run_dir/api.log" | cut -c1-400 | head -5 >&2 || true

sweep_csv="loadtest/reports/sweep-${stamp}.csv"
echo "conns,bare_rps,api_rps,bare_p99_ms,api_p99_ms" >"$sweep_csv"
for c in ${BENCH_SWEEP-8 16 32 64 128 256}; do
  read -r sa_rps _ sa_p99 _ _ < <(wrk_run "$ref" "$c")
  read -r sb_rps _ sb_p99 _ _ < <(wrk_run "$api" "$c")
  log "sweep c=$c: bare ${sa_rps} req/s, api ${sb_rps} req/s"
  echo "$c,$sa_rps,$sb_rps,$sa_p99,$sb_p99" >>"$sweep_csv"
done

report="loadtest/reports/bench-${stamp}.md"
{
  echo "# make bench ${stamp}"
  echo
  echo "configs=${configs} uids=${BENCH_UIDS} wrk -t${threads} -c${conns} -d${duration} --latency -s loadtest/bench.lua; $(nproc) cores"
  echo
  echo "| round | bare req/s | bare p50 ms | bare p99 ms | bare errors | api req/s | api p50 ms | api p99 ms | api errors (incl. degraded) | ratio | api CPU-s / 1k req | req / CPU-s | MySQL stmts / 1k GET |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for row in "${results[@]}"; do echo "| ${row// / | } |"; done
  echo
  if [ ${#records[@]} -gt 0 ]; then
    echo "C = the same GET with every answer a popup (record script + queued impression); CPU in ms per 1,000 requests"
    echo
    echo "| round | B req/s | C req/s | C/B | C p50 ms | C p99 ms | C errors (incl. degraded) | B: api | redis | worker | mariadb | C: api | redis | worker | mariadb | backlog after C |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for row in "${records[@]}"; do echo "| ${row// / | } |"; done
    echo
  fi
  echo "open loop, api: ${open_api}"
  echo
  echo "open loop, bare: ${open_ref}"
  echo
  echo '```'
  echo "$decisions"
  echo '```'
} | tee "$report"
log "report: $report; sweep: $sweep_csv; plots: python3 loadtest/plot.py $stamp"
