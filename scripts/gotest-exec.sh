#!/usr/bin/env bash
# gotest-exec.sh BINARY ARGS...: the go stage's `go test -exec` (scripts/test.sh). It runs a
# package's test binary as go test would; where the package has tests marked testenv.Long, as two
# processes side by side from the start: one runs those tests, the other the rest (with
# POPUP_TEST_LONG_ELSEWHERE=1, which skips them). testenv.Long says why. The package fails if
# either process fails; its output is the rest's, then the long tests'.
# Both processes are the one binary that go test built: nothing is compiled twice.
set -uo pipefail
bin=$1
shift
# a run that picks its own tests (make bench-worker's -run '^$', a -run in GOTEST_FLAGS) runs as
# it asked
for a in "$@"; do
  case $a in -test.run=* | -test.run | -test.bench=* | -test.fuzz=* | -test.list=*) exec "$bin" "$@" ;; esac
done
# go test runs the binary in the package's directory: the names of its tests marked Long
names=$("$(dirname "$0")/marked-tests.sh" Long ./*_test.go)
[ -n "$names" ] || exec "$bin" "$@"

out=$(mktemp)
began=$SECONDS
"$bin" "$@" "-test.run=^(${names})\$" >"$out" 2>&1 &
long=$!
trap 'kill -TERM "$long" ${rest:-} 2>/dev/null; rm -f "$out"; exit 143' TERM INT
POPUP_TEST_LONG_ELSEWHERE=1 "$bin" "$@" &
rest=$!
# the exit status and the seconds of each process, whichever ends first
declare -A rc secs
for _ in 1 2; do
  wait -n -p done "$long" "$rest"
  rc[$done]=$?
  secs[$done]=$((SECONDS - began))
done
cat "$out"
rm -f "$out"
# for the go stage to print: go test shows a passing package's output only with -v
if [ -n "${POPUP_TEST_RUN_DIR:-}" ]; then
  echo "gotest-exec: $(basename "$PWD"): the rest ${secs[$rest]} s, the long tests ${secs[$long]} s (${names//|/, })" >>"$POPUP_TEST_RUN_DIR/gotest-exec.times"
fi
[ "${rc[$rest]}" = 0 ] || exit "${rc[$rest]}"
exit "${rc[$long]}"
