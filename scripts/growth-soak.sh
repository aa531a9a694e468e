#!/usr/bin/env bash
# growth-soak.sh (`make growth-soak`): the action log grown to GROWTH_SIZES rows (1, 10 and 50
# million), and at each size the drain's rate and the drop of a day, the log's share and the twin
# table's (BenchmarkLogGrowth in internal/drain), on a MariaDB and Redis of its own in
# .testdata/growth-PID (removed at the end).
# Writes loadtest/reports/growth-STAMP.csv and plots it into docs/img/log-growth.png
# (docs/PERFORMANCE.md, "The action log as it grows").
#
#   GROWTH_SIZES    comma-separated log sizes in rows, ascending (1000000,10000000,50000000)
#   GROWTH_EVENTS   events drained at each size (50000)
#   GROWTH_POOL     MariaDB's InnoDB buffer pool (4G): the newest day's row-by-row index
#                   inserts are disk-bound once the pool cannot hold the indexes' hot pages
#
# 50 million rows take about 17 GB of disk.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build.env
sizes=${GROWTH_SIZES:-1000000,10000000,50000000}
events=${GROWTH_EVENTS:-50000}
dir="$(pwd)/.testdata/growth-$$"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
csv="$(pwd)/loadtest/reports/growth-${stamp}.csv"
mkdir -p "$dir" loadtest/reports
cleanup() {
  scripts/services.sh stop "$dir/my" || true
  scripts/services.sh stop "$dir/rd" || true
  rm -rf "$dir"
}
trap cleanup EXIT
read -r mysql_port redis_port <<<"$(scripts/services.sh free-port 2 | tr '\n' ' ')"
POPUP_MARIADB_BUFFER_POOL=${GROWTH_POOL:-4G} POPUP_MARIADB_FLUSH=2 scripts/services.sh start-mariadb "$dir/my" "$mysql_port"
scripts/services.sh start-redis "$dir/rd" "$redis_port"
echo "rows,events_per_s,drop_ms,day_rows,twin_ms,load1" >"$csv"
POPUP_TEST_MYSQL_DSN="popup:popup@tcp(127.0.0.1:${mysql_port})/" POPUP_TEST_REDIS_ADDR="127.0.0.1:${redis_port}" \
  POPUP_BENCH_LOG_SIZES="$sizes" POPUP_BENCH_GROWTH_CSV="$csv" \
  go test -tags "$GO_TAGS" -run '^$' -bench '^BenchmarkLogGrowth$' -benchtime "${events}x" -timeout 8h ./internal/drain/
scripts/venv.sh >/dev/null
.venv/bin/python -c 'import matplotlib' 2>/dev/null || .venv/bin/pip install -q -r loadtest/requirements-plot.txt
.venv/bin/python loadtest/plot_growth.py "$csv" docs/img/log-growth.png
echo "growth-soak: $csv, docs/img/log-growth.png"
