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
#       and the API's CPU per 1,000 impressions / the bare server's for the same answers
#       (issue 38: the record path's own cost);                                      target <= 2
#   (c) API CPU per steady-state request / bare server CPU per request;             target <= 1.3
#   (d) open-loop p99 at a fixed offered rate of half the API's best steady-state req/s, ratio to
#       the bare server's p99 at the same rate (benchtool openloop);                target <= 1.5
#   (e) first visits: every GET a uid never seen before (BENCH_UID_MODE=fresh) shown the record
#       popup and recorded, req/s as a ratio to (b)'s returning users in the same round;
#                                                                                   target >= 0.85
#       and MySQL loads of user state per 1,000 first visits (the API's own count)  target <= 1
#   (f) revisits: users drawn from a Zipf distribution over BENCH_ZIPF_USERS (1,000,000), so that
#       most return and some are new, req/s ratio to the bare steady-state server;   target >= 0.7
#   (g) audiences (issue 34; on by default, BENCH_AUDIENCES=0 leaves them out): two audiences of
#       BENCH_AUDIENCE_SIZE (1,000,000) uids uploaded through the admin API, an include one holding
#       every bench user and an exclude one holding none, targeted by every other bench popup, so
#       bench users pass every check and each decision does (a)'s work plus the audience checks.
#       In every round (a)'s load runs with that targeting and without it (one import each way,
#       waited for until served; the order alternates by round), each as a ratio to a bare run of
#       the same round: ratio without minus ratio with;                            target <= 0.03
#       It is on by default because it is one of the service's targets, at about a minute a round
#       (three more load runs and, after each switch, one GET of every pool user to refill the
#       local answers a new snapshot generation ends) plus a few seconds of uploads. A popup-api
#       that does not load audience sets stops the run (benchtool target says so), and an audience
#       check answered fail-closed in the with-run counts as an error: neither measures nothing.
#   (h) audience propagation across two instances: scripts/bench-audiences.sh (make bench-audiences).
#   (i) conversion ingest (issue 36; on by default, BENCH_CONVERSIONS=0 leaves it out): after the
#       rounds above (its clicks would change what they measure), BENCH_CONVERSION_ROUNDS rounds of:
#       click actions on the record popup (POST /api/v1/popups/{id}/actions, the action path) and
#       single conversions (POST /api/v1/conversions of a goal it creates), each through the same wrk
#       load (loadtest/bench-ingest.lua; the order alternates by round, the queue drained before
#       each), conversion req/s / action req/s;                                  target >= 1
#       then the batch route (POST /api/v1/conversions/batch, BENCH_CONVERSION_BATCH conversions a
#       request) driven open-loop (benchtool openloop -batch) at the actions' rate of the round:
#       conversions answered 2xx per second / that rate;                         target >= 0.98
#   (j) the revisit mix (issue 57; on by default, BENCH_MIX=0 leaves it out), last: BENCH_MIX_CONFIGS
#       (1,000) popups more over ten regions of their own (benchtool mix), the team's daily cap at
#       2, users drawn from a Zipf distribution over BENCH_MIX_USERS (200,000; loadtest/
#       bench-revisit.lua), a BENCH_MIX_WARMUP (15s) warm-up, then per round the bare steady-state
#       server and the API on that load: req/s, api / bare;                       target >= 0.9
#       (with the API's CPU per request against the bare server's, reported)
#   (k) rules and placements (issue 51; on by default, BENCH_RULES=0 leaves it out): half the
#       popups (bench-<even>, or the mix's mix-<even>) carry two rules the traffic passes (plan in
#       [pro, team], or build semver >= 9.0.0) and the placements home and checkout (benchtool
#       rules: one import, waited for until served), the requests attr.plan=pro|free (by uid
#       parity) and attr.build=9.2.0 (BENCH_ATTRS=1 in the wrk scripts); against the same run
#       without rules or attributes. In every round of (a) the API with and without (the order
#       alternating by round), each after a GET of every pool user as (g) does; and after (j)'s
#       rounds, per round the mix with and without, each after BENCH_RULES_WARMUP (5s) of the
#       mix's load. Each API run is taken against a bare run just before it on the same
#       requests. Ratio without minus ratio with (medians over the rounds), each of the steady
#       state and the mix;                                                            target <= 0.02
#       (with the API's CPU-ms per 1,000 requests with and without, reported)
#
# and prints a summary table with PASS/FAIL per target (BENCH_STRICT=1: exit 1 on any FAIL). Ratios
# are taken per round (neighbouring runs share the machine's mood) and their median is judged.
# This script only starts the stack and runs the loads: it writes each run's raw readings (req/s,
# latencies, CPU ticks, counters before and after) as one line of $run_dir/results, and
# `benchtool judge` (loadtest/benchtool/judge.go) computes every ratio and verdict from them.
#
#   BENCH_CONFIGS (20)  BENCH_UIDS (100000)  BENCH_DURATION (8s)  BENCH_CONNS (64)  BENCH_THREADS (2)
#   BENCH_ROUNDS (3)    BENCH_OPEN_DURATION (8s)  BENCH_OPEN_ROUNDS (2)  BENCH_OPEN_CONNS (64)
#   BENCH_REGIONS (8)   BENCH_DRAIN_TARGET (5: seconds)  BENCH_BIG=1 (10,000 popups, 1,000,000 users,
#   5,000 regions, BENCH_WARM=fill)    BENCH_WARM (api: GET every user until it answers no popup; fill: write that
#   state straight into Redis with `benchtool fill`)  BENCH_WARM_TRIES (30)
#   BENCH_PROFILE (file: CPU profile of the API during the first steady-state run; FILE-first.prof
#   of the first first-visit run; FILE-impression.prof of the first impression-path run;
#   FILE-audiences-on.prof and -off.prof of round 1's (g) runs; FILE-mix.prof of round 1's (j) run;
#   FILE-rulesteady-on.prof, -off.prof, FILE-rulemix-on.prof and -off.prof of round 1's (k) runs)
#   BENCH_EXPERIMENTS=1 (a running experiment, two variants and a show-nothing control at
#   40/40/20, on every other popup and on the record popup)
#   BENCH_TRANSLATIONS (0: every popup, the record popup too, translated into that many languages,
#   at most 8; issue 37's target compares (a) at 5 against the same run at 0)
#   BENCH_AUDIENCES (1)  BENCH_AUDIENCE_SIZE (1000000: members of each audience of (g))
#   BENCH_CONVERSIONS (1)  BENCH_CONVERSION_ROUNDS (2)  BENCH_CONVERSION_BATCH (100: conversions a batch request)
#   BENCH_MIX (1)  BENCH_MIX_CONFIGS (1000)  BENCH_MIX_USERS (200000)  BENCH_MIX_WARMUP (15s)
#   BENCH_RULES (1)  BENCH_RULES_WARMUP (5s: the mix's load after each switch of (k))
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

# the local answers' misses so far: GETs that read the user's state from Redis (decide.LocalAnswers)
local_misses() { metrics | awk '/^popup_local_answers_misses_total/ {n+=$2} END {printf "%d", n}'; }
degraded() { metrics | awk '/^popup_degraded_responses_total/ {n+=$2} END {printf "%d", n}'; } # every label
# MySQL loads of user state by the API: the state misses the known-users filter could not answer
loads() { metrics | awk '/^popup_user_state_misses_total\{answer="(maybe|untrusted)"\}/ {n+=$2} END {printf "%d", n}'; }
questions() { mariadb --no-defaults -h127.0.0.1 -P"$mysql_port" -upopup -ppopup -N -e "SHOW GLOBAL STATUS LIKE 'Questions'" | awk '{print $2}'; }

# wrk_run URL [CONNS] → "rps p50_ms p99_ms requests non2xx_or_errors" (benchtool wrkparse); the load
# is loadtest/bench.lua's GETs, or BENCH_WRK_SCRIPT's
wrk_run() {
  local out
  out=$(wrk -t"$threads" -c"${2:-$conns}" -d"$duration" --latency -s "${BENCH_WRK_SCRIPT:-loadtest/bench.lua}" "$1")
  echo "$out" >>"$run_dir/wrk.log"
  bin/benchtool wrkparse <<<"$out"
}
# cpu_of "PID..." → their CPU ticks now, comma-separated in the order given
cpu_of() { local p out=; for p in $1; do out+="${out:+,}$(cpu_ticks "$p")"; done; echo "$out"; }
results="$run_dir/results"
# record KIND KEY=VALUE...: one line of raw readings for benchtool judge, then its log line
record() { echo "$*" >>"$results"; log "$(bin/benchtool judge -results "$results" -round)"; }
# openloop URL → "p99_ms non2xx errors degraded late"
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
steady_size=$(answer_size steady); rec_size=$(answer_size rec)
start_bare "$steady_size"; ref_s_pid=$bare_started_pid ref_s=$bare_started_url
start_bare "$rec_size"; ref_c_pid=$bare_started_pid ref_c=$bare_started_url
log "answer sizes: steady ${steady_size} B, impression ${rec_size} B (the bare servers answer the same)"
wait_drained

audiences=${BENCH_AUDIENCES:-1}
if [ "$audiences" = 1 ]; then
  # The popups were seeded and warmed without audiences: bench users pass both checks, so the
  # warm state is the steady state with them too.
  read -r aud_in aud_ex < <(bin/benchtool audiences -admin "http://127.0.0.1:${admin_port}" -token bench \
    -uids "$BENCH_UIDS" -size "${BENCH_AUDIENCE_SIZE:-1000000}")
  log "audiences: include ${aud_in}, exclude ${aud_ex}"
fi
# target on|off: every other bench popup targets the audiences, or none does; returns once served
target() {
  bin/benchtool target -admin "http://127.0.0.1:${admin_port}" -token bench -include "$aud_in" -exclude "$aud_ex" -state "$1"
}
fail_closed() { metrics | awk '/^popup_audience_fail_closed_total/ {n+=$2} END {printf "%d", n}'; }

# rules on|off bench|mix: two rules and a second placement on half the bench (or mix) popups, or on
# none; returns once served
rules() { bin/benchtool rules -admin "http://127.0.0.1:${admin_port}" -token bench -state "$1" -names "$2"; }
# After a switch a new snapshot generation has ended every local answer: the steady state GETs
# each pool user once (as (g) does), the mix runs its load for BENCH_RULES_WARMUP.
rules_warm_bench() {
  if [ "$BENCH_UIDS" -le "${POPUP_LOCAL_ANSWER_CACHE_SIZE:-100000}" ]; then
    bin/benchtool warm -url "$api" -uids "$BENCH_UIDS" -tries 1 >/dev/null
  fi
}
rules_warm_mix() {
  wrk -t"$threads" -c"$conns" -d"${BENCH_RULES_WARMUP:-5s}" -s loadtest/bench-revisit.lua "$api" >/dev/null
  wait_drained
}
# rules_round KIND NAMES ROUND SCRIPT: one round of (k) on SCRIPT's load: the API with rules on half
# the NAMES popups and requests carrying the attributes they read (BENCH_ATTRS=1), and without
# rules or attributes, the order alternating by round, each after rules_warm_NAMES on the same
# requests and after a bare run of its own on those requests (the generator's and the kernel's
# part of the longer requests, and the machine's drift between the two, stay out of the loss);
# one KIND record (rulesteady or rulemix)
rules_round() {
  local kind=$1 names=$2 r=$3 script=$4 order rec mode attrs k_rps k_p99 k_reqs k_bad b_rps b_bad d0 d1 t0 t1 m0 m1
  order="on off"; [ $((r % 2)) = 0 ] && order="off on"
  rec="$kind r=$r order=${order/ /-}"
  for mode in $order; do
    attrs=0; [ "$mode" = on ] && attrs=1
    rules "$mode" "$names"
    BENCH_ATTRS=$attrs "rules_warm_$names"
    read -r b_rps _ _ _ b_bad < <(BENCH_ATTRS=$attrs BENCH_WRK_SCRIPT=$script wrk_run "$ref_s")
    if [ "$b_bad" != 0 ]; then log "the reference server answered errors: this run compares nothing; stopping"; exit 1; fi
    d0=$(degraded); t0=$(cpu_ticks "$api_pid"); m0=$(local_misses)
    if [ -n "${BENCH_PROFILE:-}" ] && [ "$r" = 1 ]; then
      curl -fsS -H 'Authorization: Bearer bench' -o "${BENCH_PROFILE%.prof}-${kind}-${mode}.prof" \
        "http://127.0.0.1:${admin_port}/debug/pprof/profile?seconds=4" & prof_pid=$!
    fi
    read -r k_rps _ k_p99 k_reqs k_bad < <(BENCH_ATTRS=$attrs BENCH_WRK_SCRIPT=$script wrk_run "$api")
    t1=$(cpu_ticks "$api_pid"); d1=$(degraded); m1=$(local_misses)
    if [ -n "${prof_pid:-}" ]; then wait "$prof_pid" || true; prof_pid=; fi
    log "$kind round $r rules $mode: local-answer misses $((m1 - m0)) of $k_reqs requests"
    [ "$names" = mix ] && wait_drained
    rec+=" ${mode}_bare=$b_rps ${mode}_rps=$k_rps ${mode}_p99=$k_p99 ${mode}_reqs=$k_reqs ${mode}_bad=$k_bad ${mode}_d0=$d0 ${mode}_d1=$d1 ${mode}_p0=$t0 ${mode}_p1=$t1"
  done
  [ "$order" = "off on" ] && rules off "$names" # the other runs measure what they always have
  record $rec
}

echo "meta clk=$clk drain_target=$drain_target zipf_users=${BENCH_ZIPF_USERS:-1000000} open_conns=$open_conns open_duration=$open_duration mix_configs=${BENCH_MIX_CONFIGS:-1000} mix_users=${BENCH_MIX_USERS:-200000}" >"$results"
for r in $(seq 1 "$rounds"); do
  # A: bare, steady-state size
  a_t0=$(cpu_ticks "$ref_s_pid")
  read -r a_rps a_p50 a_p99 a_reqs a_bad < <(wrk_run "$ref_s")
  a_t1=$(cpu_ticks "$ref_s_pid")
  if [ "$a_bad" != 0 ]; then log "the reference server answered errors: this run compares nothing; stopping"; exit 1; fi
  # B: the API, steady state. A degraded answer (no Redis) is a 200 but not a real answer: judge
  # counts the degraded counter's growth (d0 → d1) as errors.
  d0=$(degraded); q0=$(questions); p0=$(cpu_of "$procs")
  if [ -n "${BENCH_PROFILE:-}" ] && [ "$r" = 1 ]; then
    curl -fsS -H 'Authorization: Bearer bench' -o "$BENCH_PROFILE" \
      "http://127.0.0.1:${admin_port}/debug/pprof/profile?seconds=4" & prof_pid=$!
  fi
  read -r b_rps b_p50 b_p99 b_reqs b_bad < <(wrk_run "$api")
  q1=$(questions); d1=$(degraded); p1=$(cpu_of "$procs")
  if [ -n "${prof_pid:-}" ]; then wait "$prof_pid" || true; prof_pid=; fi
  record steady r=$r a_rps=$a_rps a_p99=$a_p99 a_reqs=$a_reqs a_t0=$a_t0 a_t1=$a_t1 \
    b_rps=$b_rps b_p50=$b_p50 b_p99=$b_p99 b_reqs=$b_reqs b_bad=$b_bad d0=$d0 d1=$d1 q0=$q0 q1=$q1 p0=$p0 p1=$p1

  # G: audiences; the API with and without them, the order alternating by round, next to a bare run
  if [ "$audiences" = 1 ]; then
    read -r g_rps _ _ _ g_bad < <(wrk_run "$ref_s")
    if [ "$g_bad" != 0 ]; then log "the reference server answered errors: this run compares nothing; stopping"; exit 1; fi
    order="on off"; [ $((r % 2)) = 0 ] && order="off on"
    g_rec="audsteady r=$r order=${order/ /-} a_rps=$g_rps"
    for mode in $order; do
      target "$mode"
      # A new snapshot generation ends every local answer: GET each pool user once so that the
      # run starts as warm as (a)'s. A pool larger than the local-answer cache (BENCH_BIG)
      # churns it in every run anyway.
      if [ "$BENCH_UIDS" -le "${POPUP_LOCAL_ANSWER_CACHE_SIZE:-100000}" ]; then
        bin/benchtool warm -url "$api" -uids "$BENCH_UIDS" -tries 1 >/dev/null
      fi
      d0=$(degraded); f0=$(fail_closed); t0=$(cpu_ticks "$api_pid")
      if [ -n "${BENCH_PROFILE:-}" ] && [ "$r" = 1 ]; then
        curl -fsS -H 'Authorization: Bearer bench' -o "${BENCH_PROFILE%.prof}-audiences-${mode}.prof" \
          "http://127.0.0.1:${admin_port}/debug/pprof/profile?seconds=4" & prof_pid=$!
      fi
      read -r m_rps _ m_p99 m_reqs m_bad < <(wrk_run "$api")
      t1=$(cpu_ticks "$api_pid"); f1=$(fail_closed); d1=$(degraded)
      if [ -n "${prof_pid:-}" ]; then wait "$prof_pid" || true; prof_pid=; fi
      g_rec+=" ${mode}_rps=$m_rps ${mode}_p99=$m_p99 ${mode}_reqs=$m_reqs ${mode}_bad=$m_bad ${mode}_d0=$d0 ${mode}_d1=$d1 ${mode}_p0=$t0 ${mode}_p1=$t1"
      [ "$mode" = on ] && g_rec+=" fc0=$f0 fc1=$f1"
    done
    [ "$order" = "off on" ] && target off # the other runs measure what they always have
    record $g_rec
  fi
  # K: rules and placements on half the popups, and without, next to a bare run
  if [ "${BENCH_RULES:-1}" = 1 ]; then rules_round rulesteady bench "$r" loadtest/bench.lua; fi

  # A': bare, impression-answer size; C: every GET shows a popup, runs the record script and queues
  # an impression that the worker writes to MariaDB meanwhile.
  ac_t0=$(cpu_ticks "$ref_c_pid")
  read -r ac_rps _ _ ac_reqs ac_bad < <(wrk_run "$ref_c")
  ac_t1=$(cpu_ticks "$ref_c_pid")
  if [ "$ac_bad" != 0 ]; then log "the reference server answered errors: this run compares nothing; stopping"; exit 1; fi
  d0=$(degraded); p0=$(cpu_of "$procs")
  if [ -n "${BENCH_PROFILE:-}" ] && [ "$r" = 1 ]; then
    curl -fsS -H 'Authorization: Bearer bench' -o "${BENCH_PROFILE%.prof}-impression.prof" \
      "http://127.0.0.1:${admin_port}/debug/pprof/profile?seconds=4" & prof_pid=$!
  fi
  read -r c_rps c_p50 c_p99 c_reqs c_bad < <(BENCH_QUERY_REGION=rec wrk_run "$api")
  p1=$(cpu_of "$procs"); d1=$(degraded)
  if [ -n "${prof_pid:-}" ]; then wait "$prof_pid" || true; prof_pid=; fi
  backlog=$(queue_len)
  t0=$(date +%s.%N); wait_drained; t1=$(date +%s.%N)
  record impression r=$r ac_rps=$ac_rps ac_reqs=$ac_reqs ac_t0=$ac_t0 ac_t1=$ac_t1 c_rps=$c_rps c_p50=$c_p50 c_p99=$c_p99 c_reqs=$c_reqs c_bad=$c_bad \
    d0=$d0 d1=$d1 p0=$p0 p1=$p1 backlog=$backlog drain_t0=$t0 drain_t1=$t1 left=$(queue_len)

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
  record first r=$r c_rps=$c_rps e_rps=$e_rps e_p50=$e_p50 e_p99=$e_p99 e_reqs=$e_reqs e_bad=$e_bad \
    d0=$d0 d1=$d1 l0=$l0 l1=$l1 p0=$p0 p1=$p1

  # F: revisits, Zipf over BENCH_ZIPF_USERS users; against A (the bare steady-state server)
  d0=$(degraded); l0=$(loads)
  read -r f_rps f_p50 f_p99 f_reqs f_bad < <(BENCH_UID_MODE=zipf wrk_run "$api")
  d1=$(degraded); l1=$(loads)
  wait_drained
  record revisit r=$r a_rps=$a_rps f_rps=$f_rps f_p50=$f_p50 f_p99=$f_p99 f_reqs=$f_reqs f_bad=$f_bad \
    d0=$d0 d1=$d1 l0=$l0 l1=$l1
done

# (d) the same offered rate to both, alternating; the API at half its best closed-loop req/s
half=$(bin/benchtool judge -results "$results" -half)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
for r in $(seq 1 "$open_rounds"); do
  hist_a=; hist_b=
  [ "$r" = 1 ] && hist_a="loadtest/reports/latency-bare-${stamp}.csv" hist_b="loadtest/reports/latency-api-${stamp}.csv"
  read -r oa_p99 _ _ _ oa_late < <(openloop "$ref_s" "$hist_a")
  read -r ob_p99 ob_non2xx ob_err ob_deg ob_late < <(openloop "$api" "$hist_b")
  record open r=$r rate=$half oa_p99=$oa_p99 ob_p99=$ob_p99 ob_non2xx=$ob_non2xx ob_err=$ob_err ob_deg=$ob_deg \
    oa_late=$oa_late ob_late=$ob_late
done
# (i) conversion ingest against the action path, in the same run
if [ "${BENCH_CONVERSIONS:-1}" = 1 ]; then
  batch=${BENCH_CONVERSION_BATCH:-100}
  admin="http://127.0.0.1:${admin_port}"
  code=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H 'Authorization: Bearer bench' -H 'Content-Type: application/json' \
    -d '{"key":"bench","name":"Bench purchase","value":"sum"}' "$admin/admin/v1/goals")
  [ "$code" = 201 ] || { log "creating the goal bench answered ${code}: the ingest round measures nothing; stopping"; exit 1; }
  for _ in $(seq 1 50); do # the instance reads the goals every second
    code=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
      -d '{"uid":"user-0","goal":"bench","event_id":"bench-probe"}' "$api/api/v1/conversions")
    [ "$code" = 202 ] && break; sleep 0.2
  done
  [ "$code" = 202 ] || { log "popup-api does not accept the goal bench (${code}) after 10 s; stopping"; exit 1; }
  rec_id=$(curl -fsS "${api}$(query_of rec)" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["popup"]["id"])')
  export BENCH_ACTION_POPUP=$rec_id BENCH_GOAL=bench
  for r in $(seq 1 "${BENCH_CONVERSION_ROUNDS:-2}"); do
    order="action conversion"; [ $((r % 2)) = 0 ] && order="conversion action"
    i_rec="ingest r=$r batch=$batch order=${order/ /-}"
    for kind in $order; do
      wait_drained
      t0=$(cpu_ticks "$api_pid")
      read -r k_rps _ k_p99 k_reqs k_bad < <(BENCH_WRK_SCRIPT=loadtest/bench-ingest.lua BENCH_INGEST=$kind wrk_run "$api")
      t1=$(cpu_ticks "$api_pid")
      k=act; [ "$kind" = conversion ] && k=conv
      i_rec+=" ${k}_rps=$k_rps ${k}_p99=$k_p99 ${k}_reqs=$k_reqs ${k}_bad=$k_bad ${k}_p0=$t0 ${k}_p1=$t1"
      [ "$kind" = action ] && act_rps=$k_rps
    done
    wait_drained
    b_rate=$(python3 -c 'import sys; print(max(1, round(float(sys.argv[1]) / int(sys.argv[2]))))' "$act_rps" "$batch")
    out=$(bin/benchtool openloop -json -url "$api" -rate "$b_rate" -duration "$open_duration" -uids "$BENCH_UIDS" -c 16 -batch "$batch" -goal bench)
    echo "$out" >>"$run_dir/openloop.log"
    i_rec+=" $(python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print("b_rate=%d b_duration=%s b_completed=%d b_elapsed=%s b_p99=%s b_non2xx=%d b_err=%d b_late=%d" % (o["rate"], o["duration_s"], o["completed"], o["elapsed_s"], o["p99_ms"], o["non_2xx"], o["errors"], o["late"]))' "$out")"
    record $i_rec
  done
  wait_drained
fi
# (j) the revisit mix (issue 57), last: its popups and its daily cap would change what the runs
# above measure. BENCH_MIX_CONFIGS popups more in one import (benchtool mix: over ten regions of
# their own, 30% rolled out to part of the users, priorities 1-500, reshown after a day), the team's
# daily cap at 2, users of loadtest/bench-revisit.lua (Zipf over BENCH_MIX_USERS, most of them new
# at first), a warm-up, then BENCH_ROUNDS rounds of the bare server and the API on that load.
if [ "${BENCH_MIX:-1}" = 1 ]; then
  export BENCH_MIX_USERS=${BENCH_MIX_USERS:-200000} BENCH_MIX_REGIONS=10 BENCH_MIX_PREFIX=m
  admin="http://127.0.0.1:${admin_port}"
  code=$(curl -sS -o /dev/null -w '%{http_code}' -X PUT -H 'Authorization: Bearer bench' -H 'Content-Type: application/json' \
    -d '{"reporting_time_zone":"UTC","daily_cap":2}' "$admin/admin/v1/settings")
  [ "$code" = 200 ] || { log "setting the daily cap answered ${code}: the mix measures nothing; stopping"; exit 1; }
  bin/benchtool mix -admin "$admin" -token bench -n "${BENCH_MIX_CONFIGS:-1000}" -regions "$BENCH_MIX_REGIONS" -prefix "$BENCH_MIX_PREFIX"
  for _ in $(seq 1 100); do # served once a probe user of the mix's first region is shown one of them
    curl -fsS "$api/api/v1/popup?uid=mix-probe&platform=ios&app_version=9.2.0&region=${BENCH_MIX_PREFIX}0" | grep -q '"popup":{' && break
    sleep 0.2
  done
  curl -fsS "$api/api/v1/popup?uid=mix-probe2&platform=ios&app_version=9.2.0&region=${BENCH_MIX_PREFIX}0" | grep -q '"popup":{' ||
    { log "popup-api does not serve the mix's popups after 20 s; stopping"; exit 1; }
  # the warm-up: the first visits of the most frequent users, their two popups, their cap
  wrk -t"$threads" -c"$conns" -d"${BENCH_MIX_WARMUP:-15s}" -s loadtest/bench-revisit.lua "$api" >/dev/null
  wait_drained
  for r in $(seq 1 "$rounds"); do
    a_t0=$(cpu_ticks "$ref_s_pid")
    read -r a_rps _ _ a_reqs a_bad < <(BENCH_WRK_SCRIPT=loadtest/bench-revisit.lua wrk_run "$ref_s")
    a_t1=$(cpu_ticks "$ref_s_pid")
    if [ "$a_bad" != 0 ]; then log "the reference server answered errors: this run compares nothing; stopping"; exit 1; fi
    d0=$(degraded); l0=$(loads); p0=$(cpu_of "$procs")
    if [ -n "${BENCH_PROFILE:-}" ] && [ "$r" = 1 ]; then
      curl -fsS -H 'Authorization: Bearer bench' -o "${BENCH_PROFILE%.prof}-mix.prof" \
        "http://127.0.0.1:${admin_port}/debug/pprof/profile?seconds=4" & prof_pid=$!
    fi
    read -r j_rps j_p50 j_p99 j_reqs j_bad < <(BENCH_WRK_SCRIPT=loadtest/bench-revisit.lua wrk_run "$api")
    p1=$(cpu_of "$procs"); d1=$(degraded); l1=$(loads)
    if [ -n "${prof_pid:-}" ]; then wait "$prof_pid" || true; prof_pid=; fi
    wait_drained
    record mix r=$r a_rps=$a_rps a_reqs=$a_reqs a_t0=$a_t0 a_t1=$a_t1 j_rps=$j_rps j_p50=$j_p50 j_p99=$j_p99 j_reqs=$j_reqs j_bad=$j_bad \
      d0=$d0 d1=$d1 l0=$l0 l1=$l1 p0=$p0 p1=$p1
  done
  # K on the mix: rules and placements on half the mix's popups, and without, next to a bare run
  if [ "${BENCH_RULES:-1}" = 1 ]; then
    for r in $(seq 1 "$rounds"); do rules_round rulemix mix "$r" loadtest/bench-revisit.lua; done
  fi
fi
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

report="loadtest/reports/bench-${stamp}.md"
{
  echo "# make bench ${stamp}"
  echo
  echo "configs=${configs} uids=${BENCH_UIDS} warm=${BENCH_WARM:-api}; wrk -t${threads} -c${conns} -d${duration} --latency -s loadtest/bench.lua; ${rounds} rounds; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "answer sizes (bare servers the same): steady ${steady_size} B, impression ${rec_size} B"
  echo
  bin/benchtool judge -results "$results"
  echo
  echo '```'
  echo "$decisions"
  echo '```'
} | tee "$report"
log "report: $report${sweep_csv:+; sweep: $sweep_csv; plots: python3 loadtest/plot.py $stamp}"
if [ "${BENCH_STRICT:-0}" = 1 ] && grep -q '| FAIL |' "$report"; then exit 1; fi
