#!/usr/bin/env bash
# api-fuzz.sh: fuzz both listeners of a real popup-api with schemathesis, driven by
# api/openapi.yaml. Every generated request (valid and invalid) must get an answer that
#   - is not a 5xx                          (not_a_server_error)
#   - has a status the document declares    (status_code_conformance)
#   - has the declared content type         (content_type_conformance)
#   - matches the declared schema           (response_schema_conformance)
# Any finding fails the run (exit 1) and is printed with a curl line that reproduces it.
#
#   scripts/api-fuzz.sh [SECONDS]           against a popup-api that is already running:
#       POPUP_TARGET=http://127.0.0.1:PORT POPUP_ADMIN_URL=http://127.0.0.1:PORT POPUP_ADMIN_TOKEN=...
#       (`make test` runs this for 60 s against the API of its locust smoke)
#   scripts/api-fuzz.sh --stack [SECONDS]   start its own MariaDB, Redis (scripts/services.sh),
#       popup-api and popup-worker in .testdata/, fuzz them, stop them (`make fuzz`: 300 s)
#
# SECONDS (60) is the whole budget: 40% for the public listener, 60% for the admin one (more
# operations). Bounded in time (schemathesis --max-time, and `timeout` around each run) and in
# count (at most API_FUZZ_RATE requests a second, 200). Loopback targets only. API_FUZZ_SEED
# replays a run (schemathesis prints the seed of each). Reports: loadtest/reports/apifuzz-*/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

log() { printf '[api-fuzz] %s\n' "$*" >&2; }

stack=0
if [ "${1:-}" = "--stack" ]; then stack=1; shift; fi
secs=${1:-60}
[[ $secs =~ ^[0-9]+$ ]] && [ "$secs" -ge 10 ] || { log "SECONDS must be a whole number >= 10"; exit 2; }
rate=${API_FUZZ_RATE:-200}

loopback() { # URL: is its host a loopback address?
  local hostport=${1#*://} host
  hostport=${hostport%%/*}
  case "$hostport" in
    \[*\]*) host=${hostport#[}; host=${host%%]*} ;;
    *) host=${hostport%%:*} ;;
  esac
  case "$host" in
    localhost|::1) return 0 ;;
    127.*) [[ $host =~ ^127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] ;;
    *) return 1 ;;
  esac
}

wait_ready() { # URL SECONDS
  local i
  for i in $(seq 1 $(( $2 * 10 ))); do
    curl -fsS -o /dev/null "$1/readyz" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

pids=()
run_dir=""
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$run_dir" ]; then
    scripts/services.sh stop "$run_dir" || true
    rm -rf "$run_dir"
  fi
}
trap cleanup EXIT

if [ $stack -eq 1 ]; then
  scripts/services.sh install
  make -s build
  run_dir="$root/.testdata/apifuzz-$$"
  mkdir -p "$run_dir"
  export POPUP_PORTS_FILE="$run_dir/ports-given"
  read -r mysql_port redis_port api_port admin_port worker_port <<<"$(scripts/services.sh free-port 5 | tr '\n' ' ')"
  POPUP_MARIADB_FLUSH=2 scripts/services.sh start-mariadb "$run_dir" "$mysql_port"
  scripts/services.sh start-redis "$run_dir" "$redis_port"
  export POPUP_ADMIN_TOKEN="fuzz-$$-$RANDOM"
  # Erasures on: the fuzzed DELETE /admin/v1/users/{uid} runs real erasures (without a key it
  # would answer 501, which the server-error check counts as a failure).
  POPUP_PRIVACY_KEY="fuzz-privacy-key-$$-0123456789abcdef0123456789" \
  POPUP_MYSQL_DSN="popup:popup@tcp(127.0.0.1:${mysql_port})/popup" POPUP_REDIS_ADDR="127.0.0.1:${redis_port}" \
    POPUP_LOG_LEVEL=warn POPUP_HTTP_ADDR="127.0.0.1:${api_port}" POPUP_ADMIN_ADDR="127.0.0.1:${admin_port}" \
    POPUP_WORKER_ADDR="127.0.0.1:${worker_port}" scripts/services.sh start-app "$run_dir"
  export POPUP_TARGET="http://127.0.0.1:${api_port}" POPUP_ADMIN_URL="http://127.0.0.1:${admin_port}"
fi

: "${POPUP_TARGET:?set POPUP_TARGET to the running API, e.g. http://127.0.0.1:8080}"
: "${POPUP_ADMIN_URL:?set POPUP_ADMIN_URL to its admin listener, e.g. http://127.0.0.1:8081}"
: "${POPUP_ADMIN_TOKEN:?set POPUP_ADMIN_TOKEN}"
for url in "$POPUP_TARGET" "$POPUP_ADMIN_URL"; do
  loopback "$url" || { log "refusing $url: the fuzzer only targets loopback addresses"; exit 2; }
done
wait_ready "$POPUP_TARGET" 30 || { log "$POPUP_TARGET/readyz never answered 200"; exit 1; }

scripts/venv.sh
[ -x .venv/bin/st ] || { log ".venv has no schemathesis: check loadtest/requirements.txt"; exit 1; }

# A few popups, so that the decision, actions and preview have something to find.
auth="Authorization: Bearer $POPUP_ADMIN_TOKEN"
if ! curl -fsS -H "$auth" "$POPUP_ADMIN_URL/admin/v1/popups" | grep -q '"id"'; then
  for f in deploy/demo/*.json; do
    curl -fsS -o /dev/null -H "$auth" -H 'Content-Type: application/json' \
      --data-binary "@$f" "$POPUP_ADMIN_URL/admin/v1/popups" || { log "could not seed $f"; exit 1; }
  done
fi

reports="loadtest/reports/apifuzz-$(date -u +%Y%m%dT%H%M%SZ)-$$"
mkdir -p "$reports"
checks=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance
seed_args=()
[ -n "${API_FUZZ_SEED:-}" ] && seed_args=(--seed "$API_FUZZ_SEED")

fuzz() { # NAME URL SECONDS [st args...]: one bounded schemathesis run
  local name=$1 url=$2 t=$3; shift 3
  log "$name: $url for ${t}s (at most $rate requests/s)"
  local rc=0
  # `timeout` backs --max-time up: loading, the coverage phase and shrinking come on top of it.
  timeout -k 5 $((t + 90)) .venv/bin/st run api/openapi.yaml --url "$url" "$@" \
    --checks "$checks" --phases examples,coverage,fuzzing --max-time "$t" \
    --rate-limit "${rate}/s" --workers 1 --request-timeout 10 --max-failures 20 \
    --generation-database none --no-color "${seed_args[@]}" \
    --report junit --report-junit-path "$reports/$name.junit.xml" >"$reports/$name.log" 2>&1 || rc=$?
  # the findings (with their curl reproductions) and the summary
  sed -n '/^=* FAILURES =*$/,$p' "$reports/$name.log" | grep -v '^$' | cut -c1-400 | head -120 >&2
  grep -E '^ *[0-9]+ generated' "$reports/$name.log" >&2 || true
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then log "$name: killed after $((t + 90)) s"; fi
  return $rc
}

start=$(date +%s)
failed=()
fuzz public "$POPUP_TARGET" $((secs * 2 / 5)) --include-tag public || failed+=(public)
fuzz admin "$POPUP_ADMIN_URL" $((secs - secs * 2 / 5)) --include-tag admin \
  -H "Authorization: Bearer $POPUP_ADMIN_TOKEN" || failed+=(admin)
elapsed=$(( $(date +%s) - start ))
if [ ${#failed[@]} -gt 0 ]; then
  log "FAIL (${failed[*]}) after ${elapsed} s; logs and JUnit reports in $reports/"
  if [ -n "$run_dir" ]; then grep -h '"level":"ERROR"' "$run_dir/popup-api.log" | cut -c1-300 | sort | uniq -c | sort -rn | head -10 >&2 || true; fi
  exit 1
fi
log "PASS in ${elapsed} s; reports in $reports/"
