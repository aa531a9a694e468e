#!/usr/bin/env bash
# bench-audiences.sh (`make bench-audiences`): how fast an audience write reaches every popup-api
# (issue 34, target (h) of docs/PERFORMANCE.md's "Audiences"). On the private stack of
# benchstack.sh (instance 1) it starts a second popup-api on the same MariaDB and Redis with its
# own ports, then `benchtool propagate`:
#
#   an audience of BENCH_PROP_INITIAL uids (1,000,000) targeted by a live popup that only region
#   "aud" requests match; a replace of BENCH_PROP_N uids (10,000,000) PUT through instance 1, then
#   an add of BENCH_PROP_DELTA uids (10,000), each streamed as text/plain. For each: the upload's
#   wall time, and the time from its 200 until each instance's public GET of a uid only the new
#   version holds shows that popup;                          targets: replace <= 30 s, delta <= 2 s
#   and popup_audience_bytes / popup_audience_members of each instance, with its RSS before and
#   after;                                                                   target <= 9 B a member
#
# benchtool writes one line of raw readings per write to $run_dir/results and `benchtool judge`
# computes the times and verdicts (BENCH_STRICT=1: exit 1 on a FAIL).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# The popups and users of the steady-state bench are not what this measures: a small stack starts sooner.
export BENCH_CONFIGS=${BENCH_CONFIGS:-20} BENCH_UIDS=${BENCH_UIDS:-1000} BENCH_REGIONS=${BENCH_REGIONS:-8}
# Unpaced uploads: the propagation after the 200 is what this measures (docs/PERFORMANCE.md).
export POPUP_AUDIENCE_UPLOAD_RATE=${POPUP_AUDIENCE_UPLOAD_RATE:-0}
configs=$BENCH_CONFIGS

log() { printf '[bench-audiences] %s\n' "$*" >&2; }

source scripts/benchstack.sh

read -r api2_port admin2_port <<<"$(scripts/services.sh free-port 2 | tr '\n' ' ')"
POPUP_HTTP_ADDR="127.0.0.1:${api2_port}" POPUP_ADMIN_ADDR="127.0.0.1:${admin2_port}" \
  bin/popup-api </dev/null >>"$run_dir/popup-api-2.log" 2>&1 & api2_pid=$!; pids+=($api2_pid)
api2="http://127.0.0.1:${api2_port}"
for _ in $(seq 1 300); do curl -fsS -o /dev/null "$api2/readyz" 2>/dev/null && break; sleep 0.2; done
curl -fsS -o /dev/null "$api2/readyz" || { log "the second popup-api is not ready:"; tail -5 "$run_dir/popup-api-2.log" >&2; exit 1; }
log "instance 1: pid $api_pid, $api; instance 2: pid $api2_pid, $api2"

results="$run_dir/results"
echo "meta clk=$clk" >"$results"
bin/benchtool propagate -token bench \
  -admin1 "http://127.0.0.1:${admin_port}" -public1 "$api" \
  -admin2 "http://127.0.0.1:${admin2_port}" -public2 "$api2" \
  -initial "${BENCH_PROP_INITIAL:-1000000}" -n "${BENCH_PROP_N:-10000000}" -delta "${BENCH_PROP_DELTA:-10000}" |
  while read -r line; do
    echo "$line" >>"$results"
    log "$(bin/benchtool judge -results "$results" -round)"
  done

stamp=$(date -u +%Y%m%dT%H%M%SZ)
report="loadtest/reports/bench-audiences-${stamp}.md"
{
  echo "# make bench-audiences ${stamp}"
  echo
  echo "two popup-api instances, one MariaDB, one Redis; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  bin/benchtool judge -results "$results"
  echo
  echo '```'
  cat "$results"
  echo '```'
} | tee "$report"
log "report: $report"
if [ "${BENCH_STRICT:-0}" = 1 ] && grep -q '| FAIL |' "$report"; then exit 1; fi
