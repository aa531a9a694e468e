#!/usr/bin/env bash
# loadtest.sh: `make loadtest`. A headless, distributed locust run of the homepage scenario
# (loadtest/locustfile.py) against a running popup-api: one master and N local worker processes,
# with an HTML report and CSV files in loadtest/reports/<UTC time>-<name>/ (also reachable as
# loadtest/reports/latest). Exit code: the master's verdict (0 = every threshold held, 1 = not;
# see loadtest/README.md), or 2 when the run could not start.
#
#   scripts/loadtest.sh [extra locust master options, e.g. -u 1000 -r 100 -t 5m]
#
# Environment (all optional):
#   POPUP_TARGET          http://127.0.0.1:8080   the public listener under test
#   POPUP_ADMIN_URL       http://127.0.0.1:8081   admin listener, for seeding an empty stack
#   POPUP_ADMIN_TOKEN     .local/admin-token      when that file exists (written by `make up`)
#   LOADTEST_WORKERS      number of CPUs          local worker processes
#   LOADTEST_USERS, LOADTEST_SPAWN_RATE, LOADTEST_RUN_TIME   override -u, -r, -t of locust.conf
#   LOADTEST_SHAPE        none                    step: the step-load shape (POPUP_LOAD_SHAPE=step)
#   LOADTEST_CONFIG       loadtest/locust.conf
#   LOADTEST_NAME         loadtest                suffix of the report directory
#   LOADTEST_RUN_DIR      (generated)             report directory, instead of the generated one
#   LOADTEST_TIMEOUT      0                       seconds after which the master is killed (0 = none)
#   POPUP_LOAD_*          every scenario knob of loadtest/README.md
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[loadtest] %s\n' "$*" >&2; }

target=${POPUP_TARGET:-http://127.0.0.1:8080}
workers=${LOADTEST_WORKERS:-$(nproc)}
conf=${LOADTEST_CONFIG:-loadtest/locust.conf}
name=${LOADTEST_NAME:-loadtest}
run_dir=${LOADTEST_RUN_DIR:-loadtest/reports/$(date -u +%Y%m%dT%H%M%SZ)-$name}
hard_timeout=${LOADTEST_TIMEOUT:-0}

case "$workers" in ''|*[!0-9]*|0) log "LOADTEST_WORKERS must be a positive integer"; exit 2 ;; esac
export POPUP_TARGET="$target"
export POPUP_ADMIN_URL=${POPUP_ADMIN_URL:-http://127.0.0.1:8081}
if [ -z "${POPUP_ADMIN_TOKEN:-}" ] && [ -s .local/admin-token ]; then
  POPUP_ADMIN_TOKEN=$(cat .local/admin-token)
fi
export POPUP_ADMIN_TOKEN=${POPUP_ADMIN_TOKEN:-}
case "${LOADTEST_SHAPE:-${POPUP_LOAD_SHAPE:-none}}" in
  step) export POPUP_LOAD_SHAPE=step ;;
  none|'') unset POPUP_LOAD_SHAPE ;;
  *) log "LOADTEST_SHAPE must be step or none"; exit 2 ;;
esac

scripts/venv.sh
py=.venv/bin/python
locust=.venv/bin/locust

# The target must answer before we spend a minute on it.
if ! "$py" - "$target" <<'PY'
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1].rstrip("/") + "/readyz", timeout=3).read()
except Exception as e:
    sys.exit(f"{sys.argv[1]}/readyz: {e}")
PY
then
  log "the target $target is not ready: start the stack first (make up) or set POPUP_TARGET"
  exit 2
fi

mkdir -p "$run_dir"
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# One connection per simulated user: lift the soft fd limit to the hard one.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

pids=()
cleanup() {
  local pid i
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for i in $(seq 1 50); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive -eq 0 ] && break
    sleep 0.2
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  pids=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for i in $(seq 1 "$workers"); do
  "$locust" -f loadtest/locustfile.py --worker --master-host 127.0.0.1 --master-port "$port" \
    --loglevel WARNING >"$run_dir/worker-$i.log" 2>&1 &
  pids+=($!)
done
sleep 1
for i in $(seq 1 "$workers"); do
  if ! kill -0 "${pids[$((i - 1))]}" 2>/dev/null; then
    log "worker $i exited at start:"; tail -20 "$run_dir/worker-$i.log" >&2; exit 2
  fi
done

args=(-f loadtest/locustfile.py --config "$conf" --headless --master
  --master-bind-host 127.0.0.1 --master-bind-port "$port"
  --expect-workers "$workers" --expect-workers-max-wait 60
  -H "$target" --csv "$run_dir/locust" --html "$run_dir/report.html")
[ -n "${LOADTEST_USERS:-}" ] && args+=(-u "$LOADTEST_USERS")
[ -n "${LOADTEST_SPAWN_RATE:-}" ] && args+=(-r "$LOADTEST_SPAWN_RATE")
[ -n "${LOADTEST_RUN_TIME:-}" ] && args+=(-t "$LOADTEST_RUN_TIME")

log "target $target, 1 master + $workers workers (${POPUP_LOAD_SHAPE:-fixed} load), reports in $run_dir"
timeout_cmd=()
[ "$hard_timeout" != 0 ] && timeout_cmd=(timeout -k 10 "$hard_timeout")
set +e
"${timeout_cmd[@]}" "$locust" "${args[@]}" "$@" 2>&1 | tee "$run_dir/master.log"
rc=${PIPESTATUS[0]}
set -e
cleanup

[ -z "${LOADTEST_RUN_DIR:-}" ] && { ln -sfn "$(basename "$run_dir")" loadtest/reports/latest 2>/dev/null || true; }
case $rc in
  0) log "PASS: report $run_dir/report.html" ;;
  124|137) log "FAIL: the master did not finish within ${hard_timeout} s"; rc=1 ;;
  *) log "FAIL (exit $rc): report $run_dir/report.html; thresholds in $run_dir/master.log" ;;
esac
exit "$rc"
