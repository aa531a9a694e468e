#!/usr/bin/env bash
# bench-rules.sh: what rules and attributes cost the steady state's GET, per request, where make
# bench's target (k) cannot say (its throughput rounds spread more than the 0.02 it judges).
# One stack (scripts/benchstack.sh, BENCH_UIDS users warmed); BENCH_ROUNDS (2) rounds, the order
# alternating: make bench's (k) switch (benchtool rules: two rules and a second placement on half
# the popups, GETs with attr.plan and attr.build; or neither), a GET of every user, then a wrk run
# of BENCH_DURATION (16s) with a CPU profile of popup-api over all but its last second. For each
# run: req/s, popup-api's CPU per request, and the CPU per request the profile puts in the GET's
# handler (httpapi.(*Public).getPopup, cumulative) and in its query parsing (reqparse.ScanQuery):
# the handler is where rules and attributes add work, and a share of a long profile is steadier
# than a run's whole CPU, which the machine moves by more than the difference. Profiles go to
# BENCH_RULES_PROFILE (.testdata/bench-rules), MODE-rROUND.prof.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
configs=${BENCH_CONFIGS:-20}
export BENCH_UIDS=${BENCH_UIDS:-100000} BENCH_REGIONS=${BENCH_REGIONS:-8}
unset BENCH_QUERY_REGION
rounds=${BENCH_ROUNDS:-2}
secs=${BENCH_DURATION:-16s}
secs=${secs%s}
out=${BENCH_RULES_PROFILE:-$root/.testdata/bench-rules}
log() { printf '[bench-rules] %s\n' "$*" >&2; }

source scripts/benchstack.sh
mkdir -p "$out"

rules() { bin/benchtool rules -admin "http://127.0.0.1:${admin_port}" -token bench -state "$1" -names bench; }
# cum_us PROFILE FUNCTION REQUESTS: the profile's cumulative seconds in FUNCTION, in µs a request
cum_us() {
  go tool pprof -top -cum -nodecount=1000 bin/popup-api "$1" 2>/dev/null | awk -v fn="$2" -v n="$3" '
    $NF == fn { v = $4; u = 1; if (v ~ /ms$/) u = 1e-3; else if (v ~ /us$|µs$/) u = 1e-6
                sub(/[a-zµ]+$/, "", v); printf "%.2f", v * u * 1e6 / n; found = 1; exit }
    END { if (!found) printf "0.00" }'
}

printf '| round | mode | req/s | popup-api CPU-µs a request | getPopup µs | ScanQuery µs |\n|---|---|---|---|---|---|\n' >"$out/table"
for r in $(seq 1 "$rounds"); do
  order="off on"; [ $((r % 2)) = 0 ] && order="on off"
  for mode in $order; do
    attrs=0; [ "$mode" = on ] && attrs=1
    rules "$mode"
    BENCH_ATTRS=$attrs bin/benchtool warm -url "$api" -uids "$BENCH_UIDS" -tries 1 >/dev/null
    prof="$out/$mode-r$r.prof"
    t0=$(cpu_ticks "$api_pid")
    curl -fsS -H 'Authorization: Bearer bench' -o "$prof" \
      "http://127.0.0.1:${admin_port}/debug/pprof/profile?seconds=$((secs - 1))" & cpid=$!
    res=$(BENCH_ATTRS=$attrs wrk -t2 -c64 -d"${secs}s" --latency -s loadtest/bench.lua "$api")
    wait "$cpid"
    t1=$(cpu_ticks "$api_pid")
    read -r rps _ _ reqs bad < <(bin/benchtool wrkparse <<<"$res")
    if [ "$bad" != 0 ]; then log "$mode round $r: $bad errors; this run measures nothing"; exit 1; fi
    # the profile covers secs-1 of the run's secs seconds: its share of the requests
    n=$((reqs * (secs - 1) / secs))
    cpu=$(awk -v t=$((t1 - t0)) -v c="$clk" -v n="$reqs" 'BEGIN {printf "%.2f", t / c / n * 1e6}')
    line="| $r | $mode | $rps | $cpu | $(cum_us "$prof" 'popupsvc/internal/httpapi.(*Public).getPopup' "$n") | $(cum_us "$prof" popupsvc/internal/reqparse.ScanQuery "$n") |"
    echo "$line" >>"$out/table"
    log "$line"
  done
done
rules off
cat "$out/table"
