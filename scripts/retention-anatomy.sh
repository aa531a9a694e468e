#!/usr/bin/env bash
# retention-anatomy.sh: where the time of dropping a large day of the action log goes
# (docs/PERFORMANCE.md "Retention"). BenchmarkDrainWhileDroppingADay (internal/drain) lays down a
# day of DAY_ROWS rows and drops it under a running drain, the old way (one DROP PARTITION) and
# popup-worker's (LogPartitions.Maintain: exchange with a twin table, drop the empty partition,
# drop the twin), on a MariaDB of its own in .testdata/anatomy-PID (removed at the end) that
# records statement stages (performance_schema), while strace times mariadbd's file removals,
# renames and syncs. Prints the benchmark's lines, each drop statement's stages, and the system
# calls; keeps the strace log as loadtest/reports/anatomy-STAMP.strace.
#
#   DAY_ROWS   rows of the day dropped (5000000)
#   EVENTS     events drained per mode (100000): the drain must outlast the drop
#   POOL       MariaDB's InnoDB buffer pool (256M, the test servers')
#   MODES      the benchmark's modes, a regular expression (drop-partition|maintain)
#
# strace stops mariadbd at every system call of the traced kinds and slows the drain: read the
# drain's figures of a run without it (the benchmark alone).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build.env
rows=${DAY_ROWS:-5000000}
events=${EVENTS:-100000}
modes=${MODES:-drop-partition|maintain}
dir="$(pwd)/.testdata/anatomy-$$"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
trace="$(pwd)/loadtest/reports/anatomy-${stamp}.strace"
mkdir -p "$dir" loadtest/reports
strace_pid=""
cleanup() {
  if [ -n "$strace_pid" ]; then kill "$strace_pid" 2>/dev/null || true; fi
  scripts/services.sh stop "$dir/my" || true
  scripts/services.sh stop "$dir/rd" || true
  rm -rf "$dir"
}
trap cleanup EXIT
read -r mysql_port redis_port <<<"$(scripts/services.sh free-port 2 | tr '\n' ' ')"
POPUP_MARIADB_BUFFER_POOL=${POOL:-256M} POPUP_MARIADB_OPTS="--performance-schema=ON
  --performance-schema-instrument=stage/%=ON --performance-schema-consumer-events-stages-history-long=ON
  --performance-schema-consumer-events-statements-history-long=ON
  --performance-schema-events-stages-history-long-size=200000
  --performance-schema-events-statements-history-long-size=50000" \
  scripts/services.sh start-mariadb "$dir/my" "$mysql_port"
scripts/services.sh start-redis "$dir/rd" "$redis_port"
strace -f -T -tt -y -e trace=unlink,unlinkat,rename,renameat,renameat2,ftruncate,fsync,fdatasync \
  -p "$(cat "$dir/my/mariadb.pid")" -o "$trace" &
strace_pid=$!
POPUP_TEST_MYSQL_DSN="popup:popup@tcp(127.0.0.1:${mysql_port})/" POPUP_TEST_REDIS_ADDR="127.0.0.1:${redis_port}" \
  POPUP_BENCH_DAY_ROWS="$rows" \
  go test -tags "$GO_TAGS" -run '^$' -bench "^BenchmarkDrainWhileDroppingADay\$/^(${modes})\$" -benchtime "${events}x" -timeout 2h ./internal/drain/
kill "$strace_pid"
wait "$strace_pid" 2>/dev/null || true
strace_pid=""
echo "== the drops' statements and their stages (ms)"
mariadb --no-defaults --socket="$dir/my/mariadb.sock" -uroot --table performance_schema <<'SQL'
SELECT s.EVENT_ID AS stmt, LEFT(s.SQL_TEXT, 70) AS statement, ROUND(s.TIMER_WAIT / 1e9, 1) AS ms,
       g.EVENT_NAME AS stage, ROUND(g.TIMER_WAIT / 1e9, 1) AS stage_ms
FROM events_statements_history_long s
JOIN events_stages_history_long g ON g.THREAD_ID = s.THREAD_ID AND g.NESTING_EVENT_ID = s.EVENT_ID
WHERE (s.SQL_TEXT LIKE 'ALTER TABLE popup_action_log %' AND s.SQL_TEXT NOT LIKE '%REORGANIZE%'
       AND s.SQL_TEXT NOT LIKE '%fill\_%') -- the fill's own exchange
   OR s.SQL_TEXT LIKE '%TABLE popup\_action\_log\_retired%'
HAVING stage_ms >= 0.5
ORDER BY s.THREAD_ID, s.EVENT_ID, g.EVENT_ID;
SQL
echo "== mariadbd's removals and renames of table files, and its syncs of 100 ms or more ($trace)"
grep -E 'unlink|rename|ftruncate' "$trace" | grep -E '\.(ibd|frm|par)' || true
grep -E 'f(data)?sync' "$trace" | awk -F'<' '{ t = $NF; sub(/>.*/, "", t); if (t + 0 >= 0.1) print }' || true
