#!/usr/bin/env bash
# bench-ab.sh VAR "V1 V2 ...": one stack (scripts/benchstack.sh), popup-api restarted with each
# value of the environment variable VAR in turn, BENCH_ROUNDS rounds alternating, same wrk
# settings: req/s, p99 and requests per API CPU-second for each value and each mix, then the
# median ratio of each value to the first one per mix. Used to keep or drop a hot-path lever, e.g.
#   scripts/bench-ab.sh POPUP_REDIS_AUTOPIPELINE "true false"
# BENCH_AB_MIXES ("read rec"): read = warm users, nothing to show (one Redis GET per request);
#   rec = every GET shows the record popup (GET + record script + queued impression; the queue is
#   drained before the next run).
# BENCH_AB_OPEN_RATE=N adds, after each wrk run, an open-loop run at N req/s (benchtool openloop,
# same duration) and prints its latency line: the tail at a fixed rate for each value.
# BENCH_CONNS (64): wrk's connections in the measured runs (the warm-up after a restart keeps 64).
# BENCH_AB_PROFILE=PREFIX: a CPU profile of popup-api during each run, PREFIX-MIX-VALUE-rROUND.prof
# (BENCH_DURATION, in seconds, less 2 s; merge a value's rounds with go tool pprof -proto A B C >MERGED).
# Each line also gives Redis's state reads and record scripts per request (INFO commandstats: the
# GETs less the one each record script runs itself, and the EVALSHAs) that a value costs.
# BENCH_AB_BARE=1 adds, after each mix's runs of a round, the same wrk run against a bare net/http
# server (loadtest/refserver) answering that mix's answer size, and prints each value's API CPU per
# request over the bare server's (the median of the rounds): make bench's (b) ratio for one stack.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
var=$1; values=$2
configs=${BENCH_CONFIGS:-20}
export BENCH_UIDS=${BENCH_UIDS:-20000} BENCH_REGIONS=${BENCH_REGIONS:-8}
unset BENCH_QUERY_REGION
rounds=${BENCH_ROUNDS:-2}
duration=${BENCH_DURATION:-8s}
conns=${BENCH_CONNS:-64}
mixes=${BENCH_AB_MIXES:-read rec}
log() { printf '[bench-ab] %s\n' "$*" >&2; }

source scripts/benchstack.sh

restart_api() { # VALUE
  kill -TERM "$api_pid"
  for _ in $(seq 1 300); do kill -0 "$api_pid" 2>/dev/null || break; sleep 0.1; done
  env "$var=$1" setsid bin/popup-api >>"$run_dir/popup-api.log" 2>&1 </dev/null & api_pid=$!
  echo "$api_pid" >"$run_dir/popup-api.pid" # scripts/services.sh stop stops it
  for _ in $(seq 1 100); do curl -fsS -o /dev/null "$api/readyz" 2>/dev/null && break; sleep 0.1; done
  wrk -t2 -c64 -d3s -s loadtest/bench.lua "$api" >/dev/null # warm the process up
}
degraded() { metrics | awk '/^popup_degraded_responses_total/ {n+=$2} END {printf "%d", n}'; }
calls() { # "GET EVALSHA": Redis's calls of each so far
  redis-cli -p "$redis_port" info commandstats | tr -d '\r' |
    awk -F'[:=,]' '$1=="cmdstat_get" {g=$3} $1=="cmdstat_evalsha" {e=$3} END {printf "%d %d\n", g, e}'
}
results="$run_dir/ab.txt"
if [ "${BENCH_AB_BARE:-0}" = 1 ]; then
  # one bare server per mix, each answering as many bytes as that mix's answers
  declare -A bare_url bare_pid
  for mix in $mixes; do
    path=steady; [ "$mix" = rec ] && path=rec
    size=$(answer_size "$path")
    start_bare "$size"; bare_pid[$mix]=$bare_started_pid; bare_url[$mix]=$bare_started_url
    log "bare server for $mix: $size B"
  done
fi
for r in $(seq 1 "$rounds"); do
  for v in $values; do
    restart_api "$v"
    for mix in $mixes; do
      region=; [ "$mix" = rec ] && region=rec
      read -r g0 e0 < <(calls); c0=$(cpu_ticks "$api_pid"); d0=$(degraded)
      if [[ -n ${BENCH_AB_PROFILE:-} ]]; then
        curl -fsS -H 'Authorization: Bearer bench' -o "${BENCH_AB_PROFILE}-${mix}-${v}-r${r}.prof" \
          "http://127.0.0.1:${admin_port}/debug/pprof/profile?seconds=$(( ${duration%s} - 2 ))" & prof_pid=$!
      fi
      out=$(BENCH_QUERY_REGION=$region wrk -t2 -c"$conns" -d"$duration" --latency -s loadtest/bench.lua "$api")
      c1=$(cpu_ticks "$api_pid"); d1=$(degraded); read -r g1 e1 < <(calls)
      if [[ -n ${prof_pid:-} ]]; then wait "$prof_pid" || true; prof_pid=; fi
      rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
      n=$(awk '/requests in/ {print $1}' <<<"$out")
      p99=$(awk '$1=="99%" {print $2}' <<<"$out")
      bad=$(awk '/Non-2xx/ {n+=$NF} END {print n+0}' <<<"$out")
      per_cpu=$(awk -v n="$n" -v c=$((c1 - c0)) -v t="$clk" 'BEGIN {printf "%d", (c>0)?n/(c/t):0}')
      per_req=$(awk -v n="$n" -v g=$((g1 - g0)) -v e=$((e1 - e0)) 'BEGIN {printf "state reads %.3f, scripts %.3f", (g-e)/n, e/n}')
      # a degraded answer skipped Redis: cheap, and not an answer; a run with many is suspect
      echo "round $r $mix $var=$v: $rps req/s, p99 $p99, $per_cpu req/API-CPU-s, non-2xx $bad, degraded $((d1 - d0)), Redis calls/req: $per_req"
      echo "$mix $v $rps $per_cpu" >>"$results"
      if [[ -n ${BENCH_AB_OPEN_RATE:-} ]]; then
        echo "round $r $mix $var=$v open loop: $(bin/benchtool openloop -url "$api" -rate "$BENCH_AB_OPEN_RATE" -duration "$duration" -uids "$BENCH_UIDS" -c "${BENCH_OPEN_CONNS:-64}")"
      fi
      [ "$mix" = rec ] && wait_drained
    done
  done
  if [ "${BENCH_AB_BARE:-0}" = 1 ]; then
    for mix in $mixes; do
      c0=$(cpu_ticks "${bare_pid[$mix]}")
      out=$(wrk -t2 -c"$conns" -d"$duration" -s loadtest/bench.lua "${bare_url[$mix]}")
      c1=$(cpu_ticks "${bare_pid[$mix]}")
      n=$(awk '/requests in/ {print $1}' <<<"$out")
      per_cpu=$(awk -v n="$n" -v c=$((c1 - c0)) -v t="$clk" 'BEGIN {printf "%d", (c>0)?n/(c/t):0}')
      echo "round $r $mix bare: $(awk '/^Requests\/sec/ {print $2}' <<<"$out") req/s, $per_cpu req/CPU-s"
      echo "$mix bare $r $per_cpu" >>"$results.bare"
    done
  fi
done
# Ratios to the first value, per round (the rounds alternate, so neighbours share the machine's
# mood), then their median: req/s and req per API CPU-second.
first=${values%% *}
echo "median ratio to $var=$first over $rounds rounds (req/s, req/API-CPU-s):"
awk -v first="$first" -v vals="$values" -v mixes="$mixes" '
  { k=$1 SUBSEP $2; n[k]++; rps[k, n[k]]=$3; cpu[k, n[k]]=$4 }
  function median(a, m,   i, j, t) { for (i=1;i<=m;i++) for (j=i+1;j<=m;j++) if (a[j]<a[i]) {t=a[i];a[i]=a[j];a[j]=t}; return (m%2)?a[(m+1)/2]:(a[m/2]+a[m/2+1])/2 }
  END {
    nm=split(mixes, M, " "); nv=split(vals, V, " ")
    for (i=1;i<=nm;i++) for (j=1;j<=nv;j++) {
      f=M[i] SUBSEP first; k=M[i] SUBSEP V[j]; m=n[k]
      delete r; delete c
      for (x=1;x<=m;x++) { r[x]=rps[k,x]/rps[f,x]; c[x]=(cpu[f,x]>0)?cpu[k,x]/cpu[f,x]:0 }
      lo=1e9; hi=0; for (x=1;x<=m;x++) { if (r[x]<lo) lo=r[x]; if (r[x]>hi) hi=r[x] }
      printf "  %-5s %s: req/s x%.3f (range %.3f-%.3f), req/CPU-s x%.3f\n", M[i], V[j], median(r,m), lo, hi, median(c,m)
    }
  }' "$results"
if [ "${BENCH_AB_BARE:-0}" = 1 ]; then
  echo "API CPU per request / the bare server's, median over $rounds rounds (range):"
  # per round: bare req/CPU-s over the value's (both are requests per CPU-second)
  awk -v vals="$values" -v mixes="$mixes" '
    FILENAME ~ /bare$/ { bare[$1, $3]=$4; next }
    { k=$1 SUBSEP $2; n[k]++; cpu[k, n[k]]=$4 }
    function median(a, m,   i, j, t) { for (i=1;i<=m;i++) for (j=i+1;j<=m;j++) if (a[j]<a[i]) {t=a[i];a[i]=a[j];a[j]=t}; return (m%2)?a[(m+1)/2]:(a[m/2]+a[m/2+1])/2 }
    END {
      nm=split(mixes, M, " "); nv=split(vals, V, " ")
      for (i=1;i<=nm;i++) for (j=1;j<=nv;j++) {
        k=M[i] SUBSEP V[j]; m=n[k]; delete r; lo=1e9; hi=0
        for (x=1;x<=m;x++) { r[x]=(cpu[k,x]>0)?bare[M[i],x]/cpu[k,x]:0; if (r[x]<lo) lo=r[x]; if (r[x]>hi) hi=r[x] }
        printf "  %-5s %s: %.2f (%.2f-%.2f)\n", M[i], V[j], median(r,m), lo, hi
      }
    }' "$results.bare" "$results"
fi
