#!/usr/bin/env bash
# soak.sh (`make soak`): a fixed-rate open-loop load on GET /api/v1/popup for SOAK_DURATION
# (600s) at SOAK_RATE (4000/s), sampling popup-api's RSS and goroutine count every
# SOAK_SAMPLE (10s) into loadtest/reports/soak-STAMP.csv, then comparing the first and the last
# minute: both must stay flat (RSS within SOAK_RSS_GROWTH_PCT, 20%, and goroutines within 2x).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
configs=${BENCH_CONFIGS:-20}
export BENCH_UIDS=${BENCH_UIDS:-100000} BENCH_REGIONS=${BENCH_REGIONS:-8}
duration=${SOAK_DURATION:-600}
rate=${SOAK_RATE:-4000}
sample=${SOAK_SAMPLE:-10}
log() { printf '[soak] %s\n' "$*" >&2; }

source scripts/benchstack.sh

stamp=$(date -u +%Y%m%dT%H%M%SZ)
csv="loadtest/reports/soak-${stamp}.csv"
echo "elapsed_s,rss_kib,goroutines,heap_inuse_bytes" >"$csv"
bin/benchtool openloop -url "$api" -rate "$rate" -duration "${duration}s" -uids "$BENCH_UIDS" >"$run_dir/openloop.txt" &
load_pid=$!; pids+=($load_pid)
began=$(date +%s)
while kill -0 "$load_pid" 2>/dev/null; do
  now=$(date +%s)
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$api_pid/status")
  m=$(metrics)
  gor=$(awk '/^go_goroutines / {print $2}' <<<"$m")
  heap=$(awk '/^go_memstats_heap_inuse_bytes / {printf "%d", $2}' <<<"$m")
  echo "$((now - began)),$rss,$gor,$heap" >>"$csv"
  sleep "$sample"
done
wait "$load_pid" || true
log "$(cat "$run_dir/openloop.txt")"
python3 - "$csv" "${SOAK_RSS_GROWTH_PCT:-20}" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))]
limit = float(sys.argv[2])
n = max(1, min(6, len(rows) // 4))
def avg(rs, k): return sum(float(r[k]) for r in rs) / len(rs)
first, last = rows[:n], rows[-n:]
rss0, rss1 = avg(first, "rss_kib"), avg(last, "rss_kib")
g0, g1 = avg(first, "goroutines"), avg(last, "goroutines")
growth = (rss1 - rss0) / rss0 * 100
print(f"soak: {len(rows)} samples; RSS {rss0/1024:.1f} -> {rss1/1024:.1f} MiB ({growth:+.1f}%), "
      f"goroutines {g0:.0f} -> {g1:.0f}, max RSS {max(float(r['rss_kib']) for r in rows)/1024:.1f} MiB")
ok = growth <= limit and g1 <= 2 * max(g0, 50)
print("soak: " + ("flat" if ok else "NOT flat"))
sys.exit(0 if ok else 1)
PY
log "samples: $csv"
