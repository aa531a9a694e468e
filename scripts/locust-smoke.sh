#!/usr/bin/env bash
# locust-smoke.sh: the CI smoke of the load-test kit, run by `make test` (scripts/test.sh) against
# a popup-api that is already running on this machine:
#
#   POPUP_TARGET=http://127.0.0.1:PORT POPUP_ADMIN_URL=http://127.0.0.1:PORT POPUP_ADMIN_TOKEN=... \
#     scripts/locust-smoke.sh
#
# 1. the unit tests of loadtest/*.py (pytest, in .venv);
# 2. a short distributed run: 1 master + 2 worker processes, 20 users for 15 s, seeding the
#    stack when it has no popups (scripts/loadtest.sh does the run);
# 3. it fails (exit 1) when more than 1% of the requests failed (a degraded answer counts as a
#    failure), when there was no traffic at all (request count in the stats CSV is 0), or when no
#    click/close was sent. Latency thresholds are off here: CI machines are noisy; real runs
#    (make loadtest) enforce them.
#
# Loopback only: it refuses any target that is not 127.0.0.0/8, localhost or [::1]. Bounded: it
# waits at most SMOKE_READY_WAIT seconds (30) for the API's /readyz, and the run is killed after
# SMOKE_TIMEOUT seconds (120).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[locust-smoke] %s\n' "$*" >&2; }

: "${POPUP_TARGET:?set POPUP_TARGET to the running API, e.g. http://127.0.0.1:8080}"
: "${POPUP_ADMIN_URL:?set POPUP_ADMIN_URL to its admin listener, e.g. http://127.0.0.1:8081}"
: "${POPUP_ADMIN_TOKEN:?set POPUP_ADMIN_TOKEN}"
users=${SMOKE_USERS:-20}
run_time=${SMOKE_RUN_TIME:-15s}
limit=${SMOKE_TIMEOUT:-120}

loopback() { # URL: is its host a loopback address?
  local hostport=${1#*://}
  hostport=${hostport%%/*}
  local host
  case "$hostport" in
    \[*\]*) host=${hostport#[}; host=${host%%]*} ;;
    *) host=${hostport%%:*} ;;
  esac
  case "$host" in
    localhost|::1|127.*) [[ $host != 127.* || $host =~ ^127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] ;;
    *) return 1 ;;
  esac
}
for url in "$POPUP_TARGET" "$POPUP_ADMIN_URL"; do
  loopback "$url" || { log "refusing $url: the smoke only targets loopback addresses"; exit 2; }
done

scripts/venv.sh

# The caller may have just started the API: give it SMOKE_READY_WAIT seconds to become ready.
.venv/bin/python - "$POPUP_TARGET" "${SMOKE_READY_WAIT:-30}" <<'PY' || { log "$POPUP_TARGET/readyz never answered 200"; exit 1; }
import sys, time, urllib.request
url, deadline = sys.argv[1].rstrip("/") + "/readyz", time.monotonic() + float(sys.argv[2])
while True:
    try:
        urllib.request.urlopen(url, timeout=2).read()
        break
    except Exception as e:
        if time.monotonic() > deadline:
            sys.exit(f"{url}: {e}")
        time.sleep(0.2)
PY

log "unit tests of loadtest/"
.venv/bin/python -m pytest -q -p no:cacheprovider loadtest/test_popup_loadtest.py

mkdir -p loadtest/reports
run_dir="loadtest/reports/$(date -u +%Y%m%dT%H%M%SZ)-smoke-$$"
start=$(date +%s)
set +e
# A fixed scenario whatever the caller's environment says: fast think times so that 20 users
# make a few thousand requests; failure ratio and traffic are the gates.
env -u POPUP_LOAD_SHAPE -u LOADTEST_SHAPE \
  LOADTEST_WORKERS=2 LOADTEST_NAME=smoke LOADTEST_RUN_DIR="$run_dir" LOADTEST_TIMEOUT=$((limit - 15)) \
  LOADTEST_CONFIG=loadtest/locust.conf LOADTEST_USERS="$users" LOADTEST_SPAWN_RATE="$users" \
  LOADTEST_RUN_TIME="$run_time" \
  POPUP_LOAD_WAIT_MIN=0.05 POPUP_LOAD_WAIT_MAX=0.25 \
  POPUP_LOAD_ACTION_DELAY_MIN=0 POPUP_LOAD_ACTION_DELAY_MAX=0.1 \
  POPUP_LOAD_SEED=auto POPUP_LOAD_DEGRADED_OK=false \
  POPUP_LOAD_MAX_FAIL_RATIO=0.01 POPUP_LOAD_MAX_P95_MS=0 POPUP_LOAD_MAX_P99_MS=0 POPUP_LOAD_MIN_REQUESTS=1 \
  timeout -k 5 "$limit" scripts/loadtest.sh >"$run_dir.log" 2>&1
rc=$?
set -e
elapsed=$(( $(date +%s) - start ))
# locust's summary tables and error report, then the kit's own lines (seed, thresholds, verdict)
awk '/^Type +Name/ {p=1} p' "$run_dir.log" | grep -v '^\[loadtest\]' >&2 || true
grep -E 'popup\.load|^\[loadtest\]' "$run_dir.log" | sed 's/^\[[0-9-]* [0-9:,]*\] [^ ]*\/INFO\/popup.load: /  /' >&2 || true
mv "$run_dir.log" "$run_dir/run.log" 2>/dev/null || true

# Independent of the master's own verdict: read the numbers from the stats CSV.
if ! .venv/bin/python - "$run_dir/locust_stats.csv" <<'PY'
import csv, sys
path = sys.argv[1]
try:
    rows = list(csv.DictReader(open(path, newline="")))
except OSError as e:
    sys.exit(f"no stats CSV: {e}")
agg = next((r for r in rows if r["Name"] == "Aggregated"), None)
if agg is None:
    sys.exit("no Aggregated row in " + path)
total, failed = int(agg["Request Count"]), int(agg["Failure Count"])
actions = sum(int(r["Request Count"]) for r in rows if r["Type"] == "POST")
print(f"[locust-smoke] {total} requests ({actions} actions), {failed} failed, "
      f"{float(agg['Requests/s']):.0f} req/s, p99 {agg['99%']} ms", file=sys.stderr)
problems = []
if total == 0:
    problems.append("no traffic: the stats CSV counts 0 requests")
elif failed / total > 0.01:
    problems.append(f"{failed / total:.2%} of requests failed (limit 1%)")
if total and actions == 0:
    problems.append("no click or close was sent: no popup was ever shown")
if problems:
    sys.exit("[locust-smoke] " + "; ".join(problems))
PY
then
  log "FAIL after ${elapsed} s; report: $run_dir/report.html"
  exit 1
fi
if [ $rc -ne 0 ]; then
  log "FAIL: the locust run exited $rc after ${elapsed} s; see $run_dir/run.log"
  exit 1
fi
log "PASS in ${elapsed} s; report: $run_dir/report.html"
