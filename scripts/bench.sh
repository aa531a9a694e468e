#!/usr/bin/env bash
# bench.sh (`make bench`): popup-api against a bare net/http server (loadtest/refserver) answering
# a fixed body of the same size as the API's answer, same machine, same load generator, same
# connection count, A and B alternating in every round. One run checks the throughput targets:
#
#   (a) steady state: GET /api/v1/popup of warm users who have seen everything they can see (every
#       answer is "no popup"), req/s as a ratio to the bare server;                  target >= 0.8
#   (b) impression path: every GET shows a popup and records it (region=rec: a popup with
#       reshow_after_seconds 0), worker running, req/s ratio to the bare server;    target >= 0.4
#       and the queue backlog left at the end drained within BENCH_DRAIN_TARGET seconds
#   (c) API CPU per steady-state request / bare server CPU per request;             target <= 1.3
#   (d) open-loop p99 at a fixed offered rate of half the API's best steady-state req/s, ratio to
#       the bare server's p99 at the same rate (benchtool openloop);                target <= 1.5
#   (e) first visits: every GET a uid never seen before (BENCH_UID_MODE=fresh) shown the record
#       popup and recorded, req/s as a ratio to (b)'s returning users in the same round;
#                                                                                   target >= 0.85
#       and MySQL loads of user state per 1,000 first visits (the API's own count)  target <= 1
#   (f) revisits: users drawn from a Zipf distribution over BENCH_ZIPF_USERS (1,000,000), so that
#       most return and some are new, req/s ratio to the bare steady-state server;   target >= 0.7
#
# and prints a summary table with PASS/FAIL per target (BENCH_STRICT=1: exit 1 on any FAIL). Ratios
# are taken per round (neighbouring runs share the machine's mood) and their median is judged.
#
#   BENCH_CONFIGS (20)  BENCH_UIDS (100000)  BENCH_DURATION (8s)  BENCH_CONNS (64)  BENCH_THREADS (2)
#   BENCH_ROUNDS (3)    BENCH_OPEN_DURATION (8s)  BENCH_OPEN_ROUNDS (2)  BENCH_OPEN_CONNS (64)
#   BENCH_REGIONS (8)   BENCH_DRAIN_TARGET (5: seconds)  BENCH_BIG=1 (10,000 popups, 1,000,000 users,
#   5,000 regions, BENCH_WARM=fill)    BENCH_WARM (api: GET every user until it answers no popup; fill: write that
#   state straight into Redis with `benchtool fill`)  BENCH_WARM_TRIES (30)
#   BENCH_PROFILE (file: CPU profile of the API during the first steady-state run; FILE-first.prof
#   of the first first-visit run)
#   BENCH_EXPERIMENTS=1 (a running experiment, two variants and a show-nothing control at
#   40/40/20, on every other popup and on the record popup)
#   BENCH_SWEEP ("": connection counts of a bare-vs-api sweep for the plots, e.g. "8 16 32 64 128 256")
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
unset BENCH_QUERY_REGION # only the impression runs set it
if [ "${BENCH_BIG:-0}" = 1 ]; then
  : "${BENCH_CONFIGS:=10000}" "${BENCH_UIDS:=1000000}" "${BENCH_WARM:=fill}"
  # 10,000 popups over 5,000 region codes: a handful of candidates per request, as a real
  # campaign list has (over 8 regions every request would match hundreds, and fill would
  # simulate each user seeing all of them).
  : "${BENCH_REGIONS:=5000}"
  export BENCH_WARM
fi
configs=${BENCH_CONFIGS:-20}
export BENCH_UIDS=${BENCH_UIDS:-100000} BENCH_REGIONS=${BENCH_REGIONS:-8}
duration=${BENCH_DURATION:-8s}
conns=${BENCH_CONNS:-64}
threads=${BENCH_THREADS:-2}
rounds=${BENCH_ROUNDS:-3}
open_duration=${BENCH_OPEN_DURATION:-8s}
open_rounds=${BENCH_OPEN_ROUNDS:-2}
open_conns=${BENCH_OPEN_CONNS:-64}
drain_target=${BENCH_DRAIN_TARGET:-5}

log() { printf '[bench] %s\n' "$*" >&2; }

source scripts/benchstack.sh

degraded() { metrics | awk '/^popup_degraded_responses_total/ {n+=$2} END {printf "%d", n}'; } # every label
# MySQL loads of user state by the API: the state misses the known-users filter could not answer
loads() { metrics | awk '/^popup_user_state_misses_total\{answer="(maybe|untrusted)"\}/ {n+=$2} END {printf "%d", n}'; }
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
div() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b>0)?a/b:0}'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
# openloop URL → "p99_ms non2xx errors degraded"
openloop() {
  local out
  out=$(bin/benchtool openloop -json -url "$1" -rate "$half" -duration "$open_duration" -uids "$BENCH_UIDS" -c "$open_conns" ${2:+-hist "$2"})
  echo "$out" >>"$run_dir/openloop.log"
  python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print(o["p99_ms"], o["non_2xx"], o["errors"], o["degraded"], o["late"])' "$out"
}
redis_pid=$(cat "$run_dir/redis.pid"); mysqld_pid=$(cat "$run_dir/mariadb.pid")
procs="$api_pid $redis_pid $worker_pid $mysqld_pid"

# The bare servers answer a body of the API's size on each path: "no popup" for the steady state,
# the record popup for the impression path (this one GET records one impression, drained below).
steady_size=$(curl -fsS "${api}$(bin/benchtool query 0)" | wc -c)
rec_size=$(curl -fsS "${api}$(bin/benchtool query 0 | sed 's/region=r[0-9]*/region=rec/')" | wc -c)
read -r ref_s_port ref_c_port <<<"$(scripts/services.sh free-port 2 | tr '\n' ' ')"
bin/refserver -addr "127.0.0.1:${ref_s_port}" -size "$steady_size" >>"$run_dir/ref.log" 2>&1 & ref_s_pid=$!; pids+=($ref_s_pid)
bin/refserver -addr "127.0.0.1:${ref_c_port}" -size "$rec_size" >>"$run_dir/ref.log" 2>&1 & ref_c_pid=$!; pids+=($ref_c_pid)
ref_s="http://127.0.0.1:${ref_s_port}"; ref_c="http://127.0.0.1:${ref_c_port}"
for u in "$ref_s" "$ref_c"; do
  for _ in $(seq 1 50); do curl -fsS -o /dev/null "$u/" 2>/dev/null && break; sleep 0.1; done
  curl -fsS -o /dev/null "$u/" # the reference must answer 200 too
done
log "answer sizes: steady ${steady_size} B, impression ${rec_size} B (the bare servers answer the same)"
wait_drained

steady=(); records=(); r_a=(); r_b=(); r_cpu=(); drains=(); backlogs=(); errors=0
firsts=(); revisits=(); r_e=(); r_f=(); e_loads=()
best_api=0
for r in $(seq 1 "$rounds"); do
  # A: bare, steady-state size
  c0=$(cpu_of "$ref_s_pid")
  read -r a_rps a_p50 a_p99 a_reqs a_bad < <(wrk_run "$ref_s")
  a_cpu=$(per_k "$c0" "$(cpu_of "$ref_s_pid")" "$a_reqs")
  if [ "$a_bad" != 0 ]; then log "the reference server answered errors: this run compares nothing; stopping"; exit 1; fi
  # B: the API, steady state
  d0=$(degraded); q0=$(questions); p0=$(cpu_of "$procs")
  if [ -n "${BENCH_PROFILE:-}" ] && [ "$r" = 1 ]; then
    curl -fsS -H 'Authorization: Bearer bench' -o "$BENCH_PROFILE" \
      "http://127.0.0.1:${admin_port}/debug/pprof/profile?seconds=4" & prof_pid=$!
  fi
  read -r b_rps b_p50 b_p99 b_reqs b_bad < <(wrk_run "$api")
  q1=$(questions); d1=$(degraded); p1=$(cpu_of "$procs")
  # A degraded answer (no Redis) is a 200 but not a real answer: it counts as an error here.
  b_bad=$(awk -v b="$b_bad" -v a="$d0" -v c="$d1" 'BEGIN {printf "%d", b + c - a}')
  if [ -n "${prof_pid:-}" ]; then wait "$prof_pid" || true; prof_pid=; fi
  b_cpu=$(per_k "$p0" "$p1" "$b_reqs") # api redis worker mariadb
  stmts=$(awk -v a="$q0" -v b="$q1" -v n="$b_reqs" 'BEGIN {printf "%.3f", (b-a-1)*1000/n}') # minus our SHOW STATUS
  ratio=$(div "$b_rps" "$a_rps")
  cpu_ratio=$(div "${b_cpu%% *}" "$a_cpu")
  log "round $r steady: bare ${a_rps} req/s (${a_cpu% }CPU-ms/1k) | api ${b_rps} req/s p99 ${b_p99} ms errors ${b_bad} | ratio ${ratio} | CPU/req x${cpu_ratio} | CPU-ms/1k api redis worker mariadb = ${b_cpu}| ${stmts} MySQL stmts/1k"
  steady+=("$r $a_rps $a_p99 $b_rps $b_p50 $b_p99 $b_bad $ratio ${a_cpu% } ${b_cpu}${cpu_ratio} $stmts")
  r_a+=("$ratio"); r_cpu+=("$cpu_ratio"); errors=$((errors + b_bad))
  best_api=$(awk -v a="$best_api" -v b="$b_rps" 'BEGIN {print (b>a)?b:a}')

  # A': bare, impression-answer size; C: every GET shows a popup, runs the record script and queues
  # an impression that the worker writes to MariaDB meanwhile.
  read -r ac_rps _ ac_p99 _ ac_bad < <(wrk_run "$ref_c")
  if [ "$ac_bad" != 0 ]; then log "the reference server answered errors: this run compares nothing; stopping"; exit 1; fi
  d0=$(degraded); p0=$(cpu_of "$procs")
  read -r c_rps c_p50 c_p99 c_reqs c_bad < <(BENCH_QUERY_REGION=rec wrk_run "$api")
  p1=$(cpu_of "$procs"); d1=$(degraded)
  backlog=$(queue_len)
  t0=$(date +%s.%N); wait_drained; drained=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b-a}')
  [ "$(queue_len)" = 0 ] || drained=inf
  c_bad=$(awk -v b="$c_bad" -v a="$d0" -v c="$d1" 'BEGIN {printf "%d", b + c - a}')
  c_cpu=$(per_k "$p0" "$p1" "$c_reqs")
  c_ratio=$(div "$c_rps" "$ac_rps")
  log "round $r impression: bare ${ac_rps} req/s | api ${c_rps} req/s p99 ${c_p99} ms errors ${c_bad} | ratio ${c_ratio} | CPU-ms/1k api redis worker mariadb = ${c_cpu}| backlog ${backlog} drained in ${drained} s"
  records+=("$r $ac_rps $c_rps $c_p50 $c_p99 $c_bad $c_ratio ${c_cpu}${backlog} $drained")
  r_b+=("$c_ratio"); backlogs+=("$backlog"); drains+=("$drained"); errors=$((errors + c_bad))

  # E: first visits, the same answer as C, each for a uid the service has never seen
  d0=$(degraded); l0=$(loads); p0=$(cpu_of "$procs")
  if [ -n "${BENCH_PROFILE:-}" ] && [ "$r" = 1 ]; then
    curl -fsS -H 'Authorization: Bearer bench' -o "${BENCH_PROFILE%.prof}-first.prof" \
      "http://127.0.0.1:${admin_port}/debug/pprof/profile?seconds=4" & prof_pid=$!
  fi
  read -r e_rps e_p50 e_p99 e_reqs e_bad < <(BENCH_QUERY_REGION=rec BENCH_UID_MODE=fresh wrk_run "$api")
  p1=$(cpu_of "$procs"); d1=$(degraded); l1=$(loads)
  if [ -n "${prof_pid:-}" ]; then wait "$prof_pid" || true; prof_pid=; fi
  wait_drained
  e_bad=$(awk -v b="$e_bad" -v a="$d0" -v c="$d1" 'BEGIN {printf "%d", b + c - a}')
  e_cpu=$(per_k "$p0" "$p1" "$e_reqs")
  e_per_k=$(awk -v a="$l0" -v b="$l1" -v n="$e_reqs" 'BEGIN {printf "%.3f", (b-a)*1000/n}')
  e_ratio=$(div "$e_rps" "$c_rps")
  log "round $r first visits: api ${e_rps} req/s p99 ${e_p99} ms errors ${e_bad} | ratio to returning users ${e_ratio} | MySQL loads/1k ${e_per_k} | CPU-ms/1k api redis worker mariadb = ${e_cpu}"
  firsts+=("$r $c_rps $e_rps $e_p50 $e_p99 $e_bad $e_ratio $e_per_k ${e_cpu}")
  r_e+=("$e_ratio"); e_loads+=("$e_per_k"); errors=$((errors + e_bad))

  # F: revisits, Zipf over BENCH_ZIPF_USERS users; against A (the bare steady-state server)
  d0=$(degraded); l0=$(loads)
  read -r f_rps f_p50 f_p99 f_reqs f_bad < <(BENCH_UID_MODE=zipf wrk_run "$api")
  d1=$(degraded); l1=$(loads)
  wait_drained
  f_bad=$(awk -v b="$f_bad" -v a="$d0" -v c="$d1" 'BEGIN {printf "%d", b + c - a}')
  f_per_k=$(awk -v a="$l0" -v b="$l1" -v n="$f_reqs" 'BEGIN {printf "%.3f", (b-a)*1000/n}')
  f_ratio=$(div "$f_rps" "$a_rps")
  log "round $r revisits (zipf over ${BENCH_ZIPF_USERS:-1000000}): api ${f_rps} req/s p99 ${f_p99} ms errors ${f_bad} | ratio to bare ${f_ratio} | MySQL loads/1k ${f_per_k}"
  revisits+=("$r $a_rps $f_rps $f_p50 $f_p99 $f_bad $f_ratio $f_per_k")
  r_f+=("$f_ratio"); errors=$((errors + f_bad))
done

# (d) the same offered rate to both, alternating; the API at half its best closed-loop req/s
half=$(awk -v b="$best_api" 'BEGIN {printf "%d", b/2}')
stamp=$(date -u +%Y%m%dT%H%M%SZ)
r_p99=(); opens=()
for r in $(seq 1 "$open_rounds"); do
  hist_a=; hist_b=
  [ "$r" = 1 ] && hist_a="loadtest/reports/latency-bare-${stamp}.csv" hist_b="loadtest/reports/latency-api-${stamp}.csv"
  read -r oa_p99 oa_non2xx oa_err _ oa_late < <(openloop "$ref_s" "$hist_a")
  read -r ob_p99 ob_non2xx ob_err ob_deg ob_late < <(openloop "$api" "$hist_b")
  p_ratio=$(div "$ob_p99" "$oa_p99")
  log "round $r open loop at ${half} req/s: bare p99 ${oa_p99} ms (late ${oa_late}) | api p99 ${ob_p99} ms (non-2xx ${ob_non2xx} errors ${ob_err} degraded ${ob_deg} late ${ob_late}) | ratio ${p_ratio}"
  opens+=("$r $half $oa_p99 $ob_p99 $p_ratio $((ob_non2xx + ob_err + ob_deg)) $oa_late $ob_late")
  r_p99+=("$p_ratio"); errors=$((errors + ob_non2xx + ob_err + ob_deg))
done
decisions=$(metrics | grep '^popup_decisions_total' || true)
# why any answer was degraded (the API logs that at most once a second)
grep -h "degraded" "$run_dir/popup-api.log" | cut -c1-400 | head -5 >&2 || true

sweep_csv=
if [ -n "${BENCH_SWEEP:-}" ]; then
  sweep_csv="loadtest/reports/sweep-${stamp}.csv"
  echo "conns,bare_rps,api_rps,bare_p99_ms,api_p99_ms" >"$sweep_csv"
  for c in $BENCH_SWEEP; do
    read -r sa_rps _ sa_p99 _ _ < <(wrk_run "$ref_s" "$c")
    read -r sb_rps _ sb_p99 _ _ < <(wrk_run "$api" "$c")
    log "sweep c=$c: bare ${sa_rps} req/s, api ${sb_rps} req/s"
    echo "$c,$sa_rps,$sb_rps,$sa_p99,$sb_p99" >>"$sweep_csv"
  done
fi

m_a=$(echo "${r_a[*]}" | median); m_b=$(echo "${r_b[*]}" | median)
m_cpu=$(echo "${r_cpu[*]}" | median); m_p99=$(echo "${r_p99[*]}" | median)
m_e=$(echo "${r_e[*]}" | median); m_f=$(echo "${r_f[*]}" | median)
worst_loads=$(printf '%s\n' "${e_loads[@]}" | sort -g | tail -1)
worst_drain=$(printf '%s\n' "${drains[@]}" | sort -g | tail -1)
verdict() { awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN { ok = (op == ">=") ? (v+0 >= t+0) : (v+0 <= t+0); print ok ? "PASS" : "FAIL" }'; }
v_a=$(verdict "$m_a" ">=" 0.8); v_b=$(verdict "$m_b" ">=" 0.4); v_cpu=$(verdict "$m_cpu" "<=" 1.3)
v_p99=$(verdict "$m_p99" "<=" 1.5); v_drain=$([ "$worst_drain" != inf ] && verdict "$worst_drain" "<=" "$drain_target" || echo FAIL)
v_err=$([ "$errors" = 0 ] && echo PASS || echo FAIL)
v_e=$(verdict "$m_e" ">=" 0.85); v_loads=$(verdict "$worst_loads" "<=" 1); v_f=$(verdict "$m_f" ">=" 0.7)

report="loadtest/reports/bench-${stamp}.md"
{
  echo "# make bench ${stamp}"
  echo
  echo "configs=${configs} uids=${BENCH_UIDS} warm=${BENCH_WARM:-api}; wrk -t${threads} -c${conns} -d${duration} --latency -s loadtest/bench.lua; ${rounds} rounds; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "answer sizes (bare servers the same): steady ${steady_size} B, impression ${rec_size} B"
  echo
  echo "## Summary (median of the per-round ratios)"
  echo
  echo "| target | measured | goal | result |"
  echo "|---|---|---|---|"
  echo "| (a) steady-state req/s, api / bare | ${m_a} (rounds: ${r_a[*]}) | >= 0.8 | ${v_a} |"
  echo "| (b) impression-path req/s, api / bare | ${m_b} (rounds: ${r_b[*]}) | >= 0.4 | ${v_b} |"
  echo "| (b) queue backlog at the end of each impression run, drained in | ${backlogs[*]} events; ${drains[*]} s | <= ${drain_target} s | ${v_drain} |"
  echo "| (c) API CPU per steady-state request / bare CPU per request | ${m_cpu} (rounds: ${r_cpu[*]}) | <= 1.3 | ${v_cpu} |"
  echo "| (d) open-loop p99 at ${half} req/s (half the API's best), api / bare | ${m_p99} (rounds: ${r_p99[*]}) | <= 1.5 | ${v_p99} |"
  echo "| (e) first-visit req/s / returning users' impression req/s | ${m_e} (rounds: ${r_e[*]}) | >= 0.85 | ${v_e} |"
  echo "| (e) MySQL loads of user state per 1,000 first visits (worst round) | ${worst_loads} (rounds: ${e_loads[*]}) | <= 1 | ${v_loads} |"
  echo "| (f) revisit req/s (Zipf over ${BENCH_ZIPF_USERS:-1000000} users) / bare | ${m_f} (rounds: ${r_f[*]}) | >= 0.7 | ${v_f} |"
  echo "| errors: non-2xx, socket errors, degraded answers (all API runs) | ${errors} | 0 | ${v_err} |"
  echo
  echo "## Steady state (warm users, every answer \"no popup\"); CPU in ms per 1,000 requests"
  echo
  echo "| round | bare req/s | bare p99 ms | api req/s | api p50 ms | api p99 ms | api errors (incl. degraded) | ratio | bare CPU | api CPU | redis | worker | mariadb | api/bare CPU | MySQL stmts / 1k GET |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for row in "${steady[@]}"; do echo "| ${row// / | } |"; done
  echo
  echo "## Impression path (every GET shows the record popup: record script + queued impression)"
  echo
  echo "| round | bare req/s | api req/s | api p50 ms | api p99 ms | api errors (incl. degraded) | ratio | api CPU | redis | worker | mariadb | backlog at end | drained in s |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for row in "${records[@]}"; do echo "| ${row// / | } |"; done
  echo
  echo "## First visits (every GET a new uid, shown the record popup and recorded)"
  echo
  echo "| round | returning users req/s (b) | first visits req/s | p50 ms | p99 ms | errors (incl. degraded) | ratio | MySQL loads / 1k | api CPU | redis | worker | mariadb |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  for row in "${firsts[@]}"; do echo "| ${row// / | } |"; done
  echo
  echo "## Revisits (Zipf over ${BENCH_ZIPF_USERS:-1000000} users)"
  echo
  echo "| round | bare req/s | api req/s | p50 ms | p99 ms | errors (incl. degraded) | ratio | MySQL loads / 1k |"
  echo "|---|---|---|---|---|---|---|---|"
  for row in "${revisits[@]}"; do echo "| ${row// / | } |"; done
  echo
  echo "## Open loop (benchtool openloop, ${open_conns} connections, ${open_duration})"
  echo
  echo "| round | rate req/s | bare p99 ms | api p99 ms | ratio | api errors (incl. degraded) | bare late | api late |"
  echo "|---|---|---|---|---|---|---|---|"
  for row in "${opens[@]}"; do echo "| ${row// / | } |"; done
  echo
  echo '```'
  echo "$decisions"
  echo '```'
} | tee "$report"
log "report: $report${sweep_csv:+; sweep: $sweep_csv; plots: python3 loadtest/plot.py $stamp}"
if [ "${BENCH_STRICT:-0}" = 1 ] && grep -q '| FAIL |' "$report"; then exit 1; fi
