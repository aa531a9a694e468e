#!/usr/bin/env bash
# bench-upload.sh (`make bench-upload`): what a large audience replace costs the popup-api that
# takes it (issue 54, docs/PERFORMANCE.md "Audience uploads and memory"). On the private stack of
# benchstack.sh the audiences of the steady-state case (bench-include and bench-exclude,
# BENCH_UPLOAD_INITIAL members each, 1,000,000) target half the popups. Then open-loop GETs at
# BENCH_UPLOAD_RATE a second (500) in windows of BENCH_UPLOAD_WINDOW seconds (10): three idle,
# then windows while bench-exclude is replaced by BENCH_UPLOAD_N uids (20,000,000) through the
# same popup-api and until it holds the new set, then one more. popup-api's RSS is sampled every
# 200 ms; its peak is VmHWM, reset before the upload.
#   targets: peak RSS <= popup_audience_bytes after the upload + 128 MiB;
#            the worst upload window's p99 <= 1.5 x the idle windows' median p99
# The report goes to loadtest/reports/bench-upload-STAMP.md (BENCH_STRICT=1: exit 1 on a FAIL).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export BENCH_CONFIGS=${BENCH_CONFIGS:-20} BENCH_UIDS=${BENCH_UIDS:-10000} BENCH_REGIONS=${BENCH_REGIONS:-8}
configs=$BENCH_CONFIGS
n=${BENCH_UPLOAD_N:-20000000}
initial=${BENCH_UPLOAD_INITIAL:-1000000}
rate=${BENCH_UPLOAD_RATE:-500}
window=${BENCH_UPLOAD_WINDOW:-10}

log() { printf '[bench-upload] %s\n' "$*" >&2; }

source scripts/benchstack.sh

admin="http://127.0.0.1:${admin_port}"
read -r include exclude <<<"$(bin/benchtool audiences -admin "$admin" -token bench -uids "$BENCH_UIDS" -size "$initial")"
bin/benchtool target -admin "$admin" -token bench -include "$include" -exclude "$exclude" -state on

status_kb() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$api_pid/status"; }
metric() { metrics | awk -v m="$1" '$1 == m {printf "%d\n", $2}'; } # 2.1e+07 -> 21000000
( for _ in $(seq 1 9000); do status_kb VmRSS || break; sleep 0.2; done ) >"$run_dir/rss" 2>/dev/null &
sampler=$!; pids+=($sampler)

results="$run_dir/windows"
: >"$results"
ol() { # one window of open-loop GETs; prints "PHASE p50 p99 max degraded non2xx errors"
  bin/benchtool openloop -url "$api" -rate "$rate" -duration "${window}s" -uids "$BENCH_UIDS" -c 16 -json |
    jq -r --arg phase "$1" '[$phase, .p50_ms, .p99_ms, .max_ms, .degraded, .non_2xx, .errors] | @tsv' | tee -a "$results" >&2
}
for _ in 1 2 3; do ol idle; done

echo 5 >"/proc/$api_pid/clear_refs" # VmHWM from here on
rss_before=$(status_kb VmRSS)
bytes_before=$(metric popup_audience_bytes)
log "replacing bench-exclude (audience $exclude) with $n uids; RSS ${rss_before} kB, sets ${bytes_before} B"
bin/benchtool replace -admin "$admin" -token bench -id "$exclude" -n "$n" -prefix aud-ex2- >"$run_dir/replace.json" &
upload=$!
want=$((initial + n))
for _ in $(seq 1 120); do # at most 120 windows
  ol upload
  if ! kill -0 "$upload" 2>/dev/null && [ "$(metric popup_audience_members)" = "$want" ]; then break; fi
done
wait "$upload"
ol after
peak=$(status_kb VmHWM)
rss_after=$(status_kb VmRSS)
bytes_after=$(metric popup_audience_bytes)
kill "$sampler" 2>/dev/null || true

stamp=$(date -u +%Y%m%dT%H%M%SZ)
report="loadtest/reports/bench-upload-${stamp}.md"
{
  echo "# make bench-upload ${stamp}"
  echo
  echo "one popup-api, one MariaDB, one Redis; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "a replace of $n uids over an audience of $initial, GETs at $rate/s in ${window}-s windows"
  echo
  python3 - "$results" "$rss_before" "$peak" "$rss_after" "$bytes_before" "$bytes_after" "$run_dir/replace.json" "$run_dir/rss" <<'EOF'
import json, statistics, sys
windows, rss_before, peak, rss_after, b_before, b_after, replace, samples = sys.argv[1:]
rows = [l.rstrip("\n").split("\t") for l in open(windows) if l.strip()]
p99 = lambda phase: [float(r[2]) for r in rows if r[0] == phase]
idle, up = statistics.median(p99("idle")), max(p99("upload"))
kib = 1024
held = float(b_after) / kib / kib
peak_mib, before_mib, after_mib = int(peak) / kib, int(rss_before) / kib, int(rss_after) / kib
rep = json.load(open(replace))
rss = [int(x) for x in open(samples) if x.strip()]
print("| phase | p50 ms | p99 ms | max ms | degraded | non-2xx | errors |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
print()
print(f"upload: {rep['members']} members in {rep['seconds']:.1f} s")
print(f"sets held: {float(b_before)/kib/kib:.1f} MiB before, {held:.1f} MiB after")
print(f"popup-api RSS: {before_mib:.1f} MiB before, peak {peak_mib:.1f} MiB (VmHWM; sampled max {max(rss)/kib:.1f}), {after_mib:.1f} MiB after")
ok_rss = peak_mib <= held + 128
ok_p99 = up <= 1.5 * idle
print()
print("| target | measured | verdict |")
print("|---|---|---|")
print(f"| peak RSS <= sets held + 128 MiB ({held + 128:.1f}) | {peak_mib:.1f} MiB ({peak_mib - held:.1f} over the sets) | {'PASS' if ok_rss else 'FAIL'} |")
print(f"| upload p99 <= 1.5 x idle p99 ({1.5 * idle:.2f} ms) | {up:.2f} ms ({up / idle:.2f} x) | {'PASS' if ok_p99 else 'FAIL'} |")
EOF
} | tee "$report"
log "report: $report"
if [ "${BENCH_STRICT:-0}" = 1 ] && grep -q '| FAIL |' "$report"; then exit 1; fi
