#!/usr/bin/env bash
# retention-anatomy.sh: where the time of dropping a large day of the action log goes
# (docs/PERFORMANCE.md "Retention"). BenchmarkDrainWhileDroppingADay (internal/drain) lays down a
# day of DAY_ROWS rows and drops it under a running drain, the old way (one DROP PARTITION) and
# popup-worker's (LogPartitions.Maintain: the partition turned into a twin table, the twin
# dropped), on a MariaDB of its own in .testdata/anatomy-PID (removed at the end) whose
# performance_schema records statement stages and file operations. Prints the benchmark's lines,
# each drop statement's stages and file operations, and the syncs of 20 ms or more that any
# thread waited for while a drop statement ran (the drain's commits among them).
#
#   DAY_ROWS   rows of the day dropped (5000000)
#   EVENTS     events drained per mode (100000): the drain must outlast the drop
#   POOL       MariaDB's InnoDB buffer pool (256M, the test servers')
#   MODES      the benchmark's modes, a regular expression (drop-partition|maintain)
#   STRACE     1: strace -f -T mariadbd's removals, renames and syncs too, into
#              loadtest/reports/anatomy-STAMP.strace (it stops mariadbd at every system call and
#              slows the drain: read the drain's figures of a run without it)
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
  --performance-schema-instrument=stage/%=ON --performance-schema-instrument=wait/io/file/%=ON
  --performance-schema-consumer-events-stages-history-long=ON
  --performance-schema-consumer-events-statements-history-long=ON
  --performance-schema-consumer-events-waits-history-long=ON
  --performance-schema-events-stages-history-long-size=200000
  --performance-schema-events-statements-history-long-size=50000
  --performance-schema-events-waits-history-long-size=1000000" \
  scripts/services.sh start-mariadb "$dir/my" "$mysql_port"
scripts/services.sh start-redis "$dir/rd" "$redis_port"
if [ "${STRACE:-0}" = 1 ]; then
  strace -f -T -tt -y -e trace=unlink,unlinkat,rename,renameat,renameat2,ftruncate,fsync,fdatasync \
    -p "$(cat "$dir/my/mariadb.pid")" -o "$trace" &
  strace_pid=$!
fi
POPUP_TEST_MYSQL_DSN="popup:popup@tcp(127.0.0.1:${mysql_port})/" POPUP_TEST_REDIS_ADDR="127.0.0.1:${redis_port}" \
  POPUP_BENCH_DAY_ROWS="$rows" \
  go test -tags "$GO_TAGS" -run '^$' -bench "^BenchmarkDrainWhileDroppingADay\$/^(${modes})\$" -benchtime "${events}x" -timeout 2h ./internal/drain/
if [ -n "$strace_pid" ]; then
  kill "$strace_pid"
  wait "$strace_pid" 2>/dev/null || true
  strace_pid=""
fi
echo "== the drops' statements (ms), their stages and file operations of 0.5 ms or more"
mariadb --no-defaults --socket="$dir/my/mariadb.sock" -uroot --table popup <<'SQL'
CREATE TEMPORARY TABLE drops AS
SELECT THREAD_ID, EVENT_ID, END_EVENT_ID, TIMER_START, TIMER_END, LEFT(SQL_TEXT, 80) AS statement
FROM performance_schema.events_statements_history_long
WHERE (SQL_TEXT LIKE 'ALTER TABLE popup\_action\_log %' AND SQL_TEXT NOT LIKE '%REORGANIZE%'
       AND SQL_TEXT NOT LIKE '%fill\_%') -- the fill's own exchange
   OR SQL_TEXT LIKE '%TABLE popup\_action\_log\_retired%';
SELECT d.statement, ROUND((d.TIMER_END - d.TIMER_START) / 1e9, 1) AS ms, x.kind, x.name, x.object, x.ms AS part_ms
FROM drops d
JOIN (SELECT THREAD_ID, EVENT_ID, 'stage' AS kind, EVENT_NAME AS name, '' AS object, ROUND(TIMER_WAIT / 1e9, 1) AS ms
      FROM performance_schema.events_stages_history_long
      UNION ALL
      SELECT THREAD_ID, EVENT_ID, OPERATION, EVENT_NAME, SUBSTRING_INDEX(OBJECT_NAME, '/', -2), ROUND(TIMER_WAIT / 1e9, 1)
      FROM performance_schema.events_waits_history_long WHERE EVENT_NAME LIKE 'wait/io/file/%') x
  ON x.THREAD_ID = d.THREAD_ID AND x.EVENT_ID > d.EVENT_ID AND x.EVENT_ID <= d.END_EVENT_ID
WHERE x.ms >= 0.5
ORDER BY d.TIMER_START, x.EVENT_ID;
SELECT '== syncs of 20 ms or more by other threads while a drop statement ran' AS '';
SELECT d.statement, w.THREAD_ID AS thread, SUBSTRING_INDEX(w.OBJECT_NAME, '/', -2) AS file, ROUND(w.TIMER_WAIT / 1e9, 1) AS sync_ms
FROM drops d
JOIN performance_schema.events_waits_history_long w ON w.THREAD_ID <> d.THREAD_ID AND w.OPERATION = 'sync'
  AND w.TIMER_START < d.TIMER_END AND w.TIMER_END > d.TIMER_START
WHERE w.TIMER_WAIT >= 20e9
ORDER BY d.TIMER_START, w.TIMER_START;
SQL
if [ "${STRACE:-0}" = 1 ]; then
  echo "== mariadbd's removals and renames of table files, and its syncs of 100 ms or more ($trace)"
  grep -E 'unlink|rename|ftruncate' "$trace" | grep -E '\.(ibd|frm|par)' || true
  grep -E 'f(data)?sync' "$trace" | awk -F'<' '{ t = $NF; sub(/>.*/, "", t); if (t + 0 >= 0.1) print }' || true
fi
