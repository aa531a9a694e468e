#!/usr/bin/env bash
# chaos.sh [full|fast]: the fault scenarios of docs/RELIABILITY.md (internal/chaos, built with
# -tags chaos) against the real popup-api and popup-worker binaries, with a MariaDB and
# redis-servers of their own in .testdata/chaos-PID/ on free ports, which the scenarios stop,
# freeze, slow down and kill. Never touches the servers of `make up` or of other test runs.
#
#   full  (make chaos)  the issue's durations: Redis faults 30 s, MySQL down 60 s, a 3-minute
#                       worker kill storm, ... about 8 minutes in all
#   fast  (make test)   the same scenarios with short faults (well under a minute and a half)
#
# Every scenario prints one "CHAOS <scenario> key=value ..." line of figures. A full run also
# appends them, under a header naming the date, commit and machine, to
# .testdata/chaos-results.txt (a run's raw log: an artifact, not committed; docs/RELIABILITY.md
# holds the current figures).
# CHAOS_RUN=regexp runs only the matching tests (go test -run), CHAOS_SKIP=regexp all but those
# (go test -skip); POPUP_CHAOS_KEEP=1 keeps the logs; POPUP_CHAOS_TRACE=1 records a runtime trace of
# popup-api during each Redis fault and the worker storm (api-trace.out beside its logs;
# docs/RELIABILITY.md). POPUP_CHAOS_STORM_STALL=150ms makes the worker storm pause Redis after every
# kill: a degradation the storm causes, which the scenario must fail on.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build.env

mode=${1:-full}
case "$mode" in
  full) timeout=25m; verbose=-v ;;
  fast) timeout=5m; verbose= ;;
  *) echo "usage: $0 [full|fast]" >&2; exit 2 ;;
esac

scripts/services.sh install
dir="$PWD/.testdata/chaos-$$"
results="$PWD/.testdata/chaos-results-$$.txt"
mkdir -p "$dir"
: >"$results"
cleanup() {
  # The tests stop their MariaDB themselves; this catches a test binary that died (timeout).
  if [ -f "$dir/mysql/mariadb.pid" ]; then scripts/services.sh stop "$dir/mysql" || true; fi
  rm -f "$results"
}
trap cleanup EXIT

start=$(date +%s)
status=0
POPUP_CHAOS=$mode POPUP_CHAOS_DIR="$dir" POPUP_CHAOS_RESULTS="$results" \
  go test -tags "chaos,$GO_TAGS" -count=1 -timeout "$timeout" $verbose -run "${CHAOS_RUN:-.}" ${CHAOS_SKIP:+-skip "$CHAOS_SKIP"} ./internal/chaos || status=$?
took=$(( $(date +%s) - start ))

echo "== chaos ($mode): $(grep -c '^CHAOS' "$results" || true) scenarios in ${took}s"
cat "$results"
if [ "$mode" = full ] && [ $status -eq 0 ] && [ -z "${CHAOS_RUN:-}${CHAOS_SKIP:-}" ]; then
  header="# $(date -u +%Y-%m-%dT%H:%M:%SZ) scripts/chaos.sh full, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo '+changes'), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), shared), $(uname -r), ${took}s"
  printf '\n%s\n' "$header" >>.testdata/chaos-results.txt
  cat "$results" >>.testdata/chaos-results.txt
  echo "appended to .testdata/chaos-results.txt"
fi
exit $status
