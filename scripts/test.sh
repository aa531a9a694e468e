#!/usr/bin/env bash
# test.sh: every test of the project (`make test`). Starts its own MariaDB and Redis in
# .testdata/ on free ports, runs the Go suite (unit + integration), the sysctl profile test and
# the other suites wired in below, and tears everything down again.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/services.sh install
go mod download

run_dir="$root/.testdata/run-$$"
mkdir -p "$run_dir"
cleanup() {
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
go vet ./...
echo "== go test"
# -race by default (RACE=0 for benchmarks: the detector distorts timings)
race=-race
[ "${RACE:-1}" = 0 ] && race=
go test $race -count=1 -timeout 15m ${GOTEST_FLAGS:-} ./...

echo "== fuzz smoke"
scripts/fuzz.sh "${FUZZ_SECONDS:-5}"

if [ -f sysctl/test.sh ]; then
  echo "== sysctl profiles"
  bash sysctl/test.sh
fi
