#!/usr/bin/env bash
# test.sh: every test of the project (`make test`). Starts its own MariaDB and Redis in
# .testdata/ on free ports, runs the Go suite (unit + integration), the sysctl profile test and
# the other suites wired in below, and tears everything down again.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/services.sh install test
go mod download
# axe-core for the console's browser test, pinned by package-lock.json, into ./node_modules
npm ci --no-audit --no-fund --loglevel=error

run_dir="$root/.testdata/run-$$"
mkdir -p "$run_dir"
# free-port never hands out one port twice in this run (scripts/services.sh)
export POPUP_PORTS_FILE="$run_dir/ports-given"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  scripts/services.sh stop "$run_dir" || true
  rm -rf "$run_dir"
}
trap cleanup EXIT

read -r mysql_port redis_port <<<"$(scripts/services.sh free-port 2 | tr '\n' ' ')"
# Tests do not need fsync per commit; production settings are in deploy/.
POPUP_MARIADB_FLUSH=2 scripts/services.sh start-mariadb "$run_dir" "$mysql_port"
scripts/services.sh start-redis "$run_dir" "$redis_port"

export POPUP_TEST_MYSQL_DSN="popup:popup@tcp(127.0.0.1:${mysql_port})/"
export POPUP_TEST_REDIS_ADDR="127.0.0.1:${redis_port}"
export POPUP_TEST_RUN_DIR="$run_dir"

echo "== go vet"
go vet -tags jsoniter ./...
echo "== go test"
# -race by default (RACE=0 for benchmarks: the detector distorts timings)
race=-race
[ "${RACE:-1}" = 0 ] && race=
go test -tags jsoniter $race -count=1 -timeout 15m ${GOTEST_FLAGS:-} ./...

echo "== go test (Redis Cluster, 3 masters)"
# The Redis-facing packages again, against a local three-master Redis Cluster: several
# comma-separated seeds in POPUP_TEST_REDIS_ADDR make testenv (and the service) use a cluster.
read -r cl1 cl2 cl3 <<<"$(scripts/services.sh free-port 3 | tr '\n' ' ')"
scripts/services.sh start-redis-cluster "$run_dir" "$cl1" "$cl2" "$cl3"
POPUP_TEST_REDIS_ADDR="127.0.0.1:${cl1},127.0.0.1:${cl2},127.0.0.1:${cl3}" \
  go test -tags jsoniter $race -count=1 -timeout 5m ./internal/redisstore/ ./internal/drain/ ./internal/apiserver/ ./cmd/popup-worker/

echo "== fuzz smoke"
scripts/fuzz.sh "${FUZZ_SECONDS:-5}"

echo "== chaos, fast subset (its own MariaDB and Redis: the scenarios kill them)"
# Every scenario of `make chaos` with short faults (about a minute); docs/RELIABILITY.md.
scripts/chaos.sh fast


if [ -f scripts/locust-smoke.sh ]; then
  echo "== locust smoke (distributed: master + 2 workers against the real stack)"
  make -s build
  read -r api_port admin_port worker_port <<<"$(scripts/services.sh free-port 3 | tr '\n' ' ')"
  smoke_env=(POPUP_MYSQL_DSN="popup:popup@tcp(127.0.0.1:${mysql_port})/popup" POPUP_REDIS_ADDR="127.0.0.1:${redis_port}"
    POPUP_ADMIN_TOKEN=smoke POPUP_LOG_LEVEL=warn POPUP_HTTP_ADDR="127.0.0.1:${api_port}"
    POPUP_ADMIN_ADDR="127.0.0.1:${admin_port}" POPUP_WORKER_ADDR="127.0.0.1:${worker_port}" POPUP_LINK_SCHEMES=http,https,app)
  env "${smoke_env[@]}" bin/popup-worker migrate >/dev/null
  env "${smoke_env[@]}" bin/popup-worker >"$run_dir/worker.log" 2>&1 & pids+=($!)
  env "${smoke_env[@]}" bin/popup-api >"$run_dir/api.log" 2>&1 & pids+=($!)
  POPUP_TARGET="http://127.0.0.1:${api_port}" POPUP_ADMIN_URL="http://127.0.0.1:${admin_port}" POPUP_ADMIN_TOKEN=smoke \
    scripts/locust-smoke.sh || { echo "locust smoke failed; api log:"; tail -20 "$run_dir/api.log"; exit 1; }
  # what degraded answers there were, and why (at most one log line a second)
  grep -h "degraded" "$run_dir/api.log" | cut -c1-300 | head -5 || true

  echo "== API fuzz (schemathesis, driven by api/openapi.yaml; public and admin listeners)"
  # The same API and worker as the locust smoke. Any 5xx or answer that does not match the
  # document fails the run; make fuzz runs longer on a stack of its own (docs/RELIABILITY.md).
  POPUP_TARGET="http://127.0.0.1:${api_port}" POPUP_ADMIN_URL="http://127.0.0.1:${admin_port}" POPUP_ADMIN_TOKEN=smoke \
    scripts/api-fuzz.sh "${API_FUZZ_SECONDS:-60}" ||
    { echo "API fuzz failed; api errors:"; grep -h '"level":"ERROR"' "$run_dir/api.log" | cut -c1-300 | sort | uniq -c | sort -rn | head -10; exit 1; }
fi

if [ -f sysctl/test.sh ]; then
  echo "== sysctl profiles"
  bash sysctl/test.sh
fi
