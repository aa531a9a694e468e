#!/usr/bin/env bash
# bench-upload.sh (`make bench-upload`): what a large audience replace costs the popup-api that
# takes it (docs/PERFORMANCE.md "Uploads and memory"). On the private stack of benchstack.sh
# the audiences of the steady-state case (bench-include and bench-exclude, BENCH_UPLOAD_INITIAL
# members each, 1,000,000) target half the popups. Then open-loop GETs at BENCH_UPLOAD_RATE a
# second (500) in windows of BENCH_UPLOAD_WINDOW seconds (10): three idle, then windows while
# bench-exclude is replaced by BENCH_UPLOAD_N uids (20,000,000) through the same popup-api and
# until it holds the new set; BENCH_UPLOAD_REPEAT (3) such uploads, each after the list is put
# back to its first size and BENCH_UPLOAD_IDLE (2) more idle windows, so that idle and upload
# GETs interleave and a noisy minute of the shared machine falls on both; then BENCH_UPLOAD_AFTER
# (1) more. popup-api's RSS is sampled every 200 ms; its peak is VmHWM, reset before the uploads.
#   targets: peak RSS <= popup_audience_bytes after the upload + 128 MiB;
#            the p99 of the GETs sent from an upload's start until the instance holds its new
#            set <= 1.5 x the p99 of the idle windows' GETs (each pooled over its requests: the
#            GETs' p99 during an upload, as the issue words it; the worst window's p99 over the
#            idle windows' median, a 10-s slice's 50th-slowest GET, is reported beside it)
# Both are judged on the quiet windows only: those where the hypervisor took (steal) under 2 % of
# the CPU time, as /proc/stat counts it. Windows with more read p99s several times the rest, idle
# and upload alike; the pooled figure over every window is printed beside the verdict.
# Each window's row also gives the CPU (in cores) of popup-api, MariaDB and Redis, Redis's calls a
# second (the GETs the local answers did not answer go there), InnoDB's history list length at its
# end (undo the purge has yet to remove), when popup-api runs with GODEBUG=gctrace=1 its
# collections, and the steal.
# MariaDB, popup-worker and the uploading client run at SCHED_IDLE (BENCH_UPLOAD_ELSEWHERE=0: not):
# a deployment runs them on hosts of their own, so their CPU is not the instance's to share.
# The report gives the CPU seconds popup-api, MariaDB, Redis and the uploading client spent from
# an upload's start until the instance held the new set (mean of the uploads).
# BENCH_UPLOAD_PIN=1 puts what a GET touches (popup-api, Redis, the open-loop client) on CPU 0 and
# MariaDB, popup-worker and the uploading client on the other CPUs, in the idle windows as in the
# upload's: on two shared cores MariaDB's work for the upload (as much CPU as popup-api's own)
# otherwise delays the GETs, where a deployment runs it on a host of its own.
# BENCH_UPLOAD_PROFILE=DIR keeps, in DIR, popup-api's CPU profile (cpu.prof) and runtime trace
# (trace.out) of the upload's first BENCH_UPLOAD_PROFILE_SECONDS (8), its allocation profiles
# before and after (allocs-before.prof, allocs-after.prof: `go tool pprof -base`), its log and
# every GET's send time and latency (lat-idle, lat-upload: nanoseconds) with the uploads' spans;
# profiling costs the GETs, so a profiled run's p99 is not the figure. BENCH_UPLOAD_LOG=FILE keeps
# the log; BENCH_UPLOAD_KEEP=DIR keeps the GETs' latencies, the spans and the windows' rows
# without profiling. The report goes to loadtest/reports/bench-upload-STAMP.md (BENCH_STRICT=1:
# exit 1 on a FAIL).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export BENCH_CONFIGS=${BENCH_CONFIGS:-20} BENCH_UIDS=${BENCH_UIDS:-10000} BENCH_REGIONS=${BENCH_REGIONS:-8}
configs=$BENCH_CONFIGS
n=${BENCH_UPLOAD_N:-20000000}
initial=${BENCH_UPLOAD_INITIAL:-1000000}
rate=${BENCH_UPLOAD_RATE:-500}
window=${BENCH_UPLOAD_WINDOW:-10}
repeats=${BENCH_UPLOAD_REPEAT:-3}

log() { printf '[bench-upload] %s\n' "$*" >&2; }

source scripts/benchstack.sh

admin="http://127.0.0.1:${admin_port}"
read -r include exclude <<<"$(bin/benchtool audiences -admin "$admin" -token bench -uids "$BENCH_UIDS" -size "$initial")"
bin/benchtool target -admin "$admin" -token bench -include "$include" -exclude "$exclude" -state on

status_kb() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$api_pid/status"; }
metric() { metrics | awk -v m="$1" '$1 == m {printf "%d\n", $2}'; } # 2.1e+07 -> 21000000
( for _ in $(seq 1 9000); do status_kb VmRSS || break; sleep 0.2; done ) >"$run_dir/rss" 2>/dev/null &
sampler=$!; pids+=($sampler)
mysql_pid=$(cat "$run_dir/mariadb.pid") redis_pid=$(cat "$run_dir/redis.pid")
getter=() uploader=()
if [ "${BENCH_UPLOAD_ELSEWHERE:-1}" = 1 ]; then
  # MariaDB, popup-worker and the uploading client run on hosts of their own in a deployment:
  # here they take only CPU that nothing else wants (SCHED_IDLE), so that their share of the two
  # cores is not counted against the instance, in the idle windows as in the upload's.
  for p in "$mysql_pid" "$worker_pid"; do chrt --idle -a -p 0 "$p" >/dev/null; done
  uploader=(chrt --idle 0)
fi
if [ "${BENCH_UPLOAD_PIN:-0}" = 1 ]; then
  # What a GET touches (popup-api, Redis, the open-loop client) on CPU 0; the upload's other
  # parties (MariaDB, the uploading client) and popup-worker on the others, as the separate
  # hosts of a deployment would be. All threads, from the idle windows on.
  last=$(($(nproc) - 1))
  for p in "$api_pid" "$redis_pid"; do taskset -a -p -c 0 "$p" >/dev/null; done
  for p in "$mysql_pid" "$worker_pid"; do taskset -a -p -c "1-$last" "$p" >/dev/null; done
  getter=(taskset -c 0) uploader=("${uploader[@]}" taskset -c "1-$last")
fi
cpu_mark() { # PHASE: the wall clock and popup-api's, MariaDB's and Redis's CPU ticks at its end
  echo "$1 $(date +%s.%N) $(cpu_ticks "$api_pid") $(cpu_ticks "$mysql_pid") $(cpu_ticks "$redis_pid")" >>"$run_dir/cpu"
}

results="$run_dir/windows"
: >"$results"
sock="$run_dir/mariadb.sock"
history_len() { # InnoDB's history list length: undo that purge has yet to remove
  mariadb --no-defaults --socket="$sock" -uroot -N -e "SELECT count FROM information_schema.INNODB_METRICS WHERE name = 'trx_rseg_history_len'" 2>/dev/null || echo -
}
redis_calls() { # the commands Redis has processed so far
  redis-cli -p "$redis_port" INFO stats | awk -F: '$1 == "total_commands_processed" {printf "%d\n", $2}'
}
steal_ticks() { awk '$1 == "cpu" {print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; } # steal, all
gc_cycles() { # popup-api's collections so far, when it runs with GODEBUG=gctrace=1 (else -)
  case "${GODEBUG:-}" in *gctrace=1*) grep -c '^gc ' "$run_dir/popup-api.log" || true ;; *) echo - ;; esac
}
ol() { # one window of open-loop GETs; prints "PHASE p50 p99 max degraded non2xx errors" and the
  # window's CPU, in cores, of popup-api, MariaDB and Redis, Redis's calls a second, the history
  # list length at its end, popup-api's collections in it, the steal (% of all CPU time) and the
  # window's start and end (ns)
  local t0 a0 m0 r0 c0 g0 s0 t1 a1 m1 r1 c1 g1 s1
  s0=$(steal_ticks) t0=$(date +%s.%N) a0=$(cpu_ticks "$api_pid") m0=$(cpu_ticks "$mysql_pid") r0=$(cpu_ticks "$redis_pid") c0=$(redis_calls) g0=$(gc_cycles)
  "${getter[@]}" bin/benchtool openloop -url "$api" -rate "$rate" -duration "${window}s" -uids "$BENCH_UIDS" -c 16 -json -raw "$run_dir/lat-$1" >"$run_dir/ol.json"
  s1=$(steal_ticks) t1=$(date +%s.%N) a1=$(cpu_ticks "$api_pid") m1=$(cpu_ticks "$mysql_pid") r1=$(cpu_ticks "$redis_pid") c1=$(redis_calls) g1=$(gc_cycles)
  local cpu; cpu=$(awk -v c="$clk" -v d="$(echo "$t1 - $t0" | bc)" -v a=$((a1 - a0)) -v m=$((m1 - m0)) -v r=$((r1 - r0)) -v n=$((c1 - c0)) \
    'BEGIN {printf "%.2f\t%.2f\t%.2f\t%.0f", a/c/d, m/c/d, r/c/d, n/d}')
  local steal; steal=$(echo "$s0 $s1" | awk '{printf "%.1f", ($4 > $2) ? 100 * ($3 - $1) / ($4 - $2) : 0}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(jq -r --arg phase "$1" '[$phase, .p50_ms, .p99_ms, .max_ms, .degraded, .non_2xx, .errors] | @tsv' "$run_dir/ol.json")" \
    "$cpu" "$(history_len)" "$([ "$g0" = - ] && echo - || echo $((g1 - g0)))" "$steal" "${t0/./}" "${t1/./}" | tee -a "$results" >&2
}
cpu_mark start
for _ in 1 2 3; do ol idle; done
cpu_mark idle

profile=${BENCH_UPLOAD_PROFILE:-}
echo 5 >"/proc/$api_pid/clear_refs" # VmHWM from here on
rss_before=$(status_kb VmRSS)
bytes_before=$(metric popup_audience_bytes)
: >"$run_dir/spans"
for k in $(seq 1 "$repeats"); do
  if [ "$k" -gt 1 ]; then
    # Back to the initial size, then idle windows again: the idle and the upload GETs interleave,
    # so that a noisy minute of the machine falls on both.
    bin/benchtool replace -admin "$admin" -token bench -id "$exclude" -n "$initial" -prefix "aud-ex$k-" >/dev/null
    for _ in $(seq 1 300); do [ "$(metric popup_audience_members)" = $((2 * initial)) ] && break; sleep 0.2; done
    sleep 3 # past memlimit.ReleaseDelay: the dropped set's collection is not an idle window's
    for _ in $(seq 1 "${BENCH_UPLOAD_IDLE:-2}"); do ol idle; done
  fi
  log "upload $k of $repeats: replacing bench-exclude (audience $exclude) with $n uids; RSS $(status_kb VmRSS) kB, sets $(metric popup_audience_bytes) B"
  want=$((initial + n))
  up0=$(date +%s%N)
  cpu_mark "upload$k-start"
  "${uploader[@]}" bin/benchtool replace -admin "$admin" -token bench -id "$exclude" -n "$n" -prefix "aud-up$k-" >"$run_dir/replace.json" &
  upload=$!
  rm -f "$run_dir/upload-held"
  ( # the instant the instance holds the new set: the end of the GETs the upload is judged by
    for _ in $(seq 1 12000); do kill -0 "$upload" 2>/dev/null || break; sleep 0.1; done
    for _ in $(seq 1 1200); do [ "$(metric popup_audience_members)" = "$want" ] && break; sleep 0.1; done
    date +%s%N >"$run_dir/upload-held"
  ) &
  pids+=($!)
  if [ -n "$profile" ] && [ "$k" = 1 ]; then
    mkdir -p "$profile"
    curl -fsS -H 'Authorization: Bearer bench' -o "$profile/allocs-before.prof" "${admin}/debug/pprof/allocs"
    secs=${BENCH_UPLOAD_PROFILE_SECONDS:-8}
    curl -fsS -H 'Authorization: Bearer bench' -o "$profile/cpu.prof" "${admin}/debug/pprof/profile?seconds=${secs}" &
    pids+=($!)
    curl -fsS -H 'Authorization: Bearer bench' -o "$profile/trace.out" "${admin}/debug/pprof/trace?seconds=${secs}" &
    pids+=($!)
  fi
  for _ in $(seq 1 120); do # at most 120 windows
    ol upload
    if ! kill -0 "$upload" 2>/dev/null && [ "$(metric popup_audience_members)" = "$want" ]; then break; fi
  done
  wait "$upload"
  for _ in $(seq 1 100); do [ -s "$run_dir/upload-held" ] && break; sleep 0.1; done
  echo "$up0 $(cat "$run_dir/upload-held") $(jq -r '.seconds' "$run_dir/replace.json") $(jq -r '.cpu_seconds' "$run_dir/replace.json")" >>"$run_dir/spans"
  cpu_mark "upload$k-end"
done
for _ in $(seq 1 "${BENCH_UPLOAD_AFTER:-1}"); do ol after; done
if [ -n "$profile" ]; then
  cp "$run_dir/popup-api.log" "$profile/popup-api.log"
  cp "$run_dir/lat-idle" "$run_dir/lat-upload" "$run_dir/spans" "$profile/"
  curl -fsS -H 'Authorization: Bearer bench' -o "$profile/allocs-after.prof" "${admin}/debug/pprof/allocs"
fi
if [ -n "${BENCH_UPLOAD_LOG:-}" ]; then cp "$run_dir/popup-api.log" "$BENCH_UPLOAD_LOG"; fi
if [ -n "${BENCH_UPLOAD_KEEP:-}" ]; then
  mkdir -p "$BENCH_UPLOAD_KEEP" && cp "$run_dir/lat-idle" "$run_dir/lat-upload" "$run_dir/spans" "$results" "$BENCH_UPLOAD_KEEP/"
fi
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
  echo "a replace of $n uids over an audience of $initial, GETs at $rate/s in ${window}-s windows, POPUP_AUDIENCE_UPLOAD_RATE ${POPUP_AUDIENCE_UPLOAD_RATE:-unset (the default)}"
  echo
  python3 - "$results" "$rss_before" "$peak" "$rss_after" "$bytes_before" "$bytes_after" "$run_dir/spans" "$run_dir/rss" "$run_dir/cpu" "$clk" \
    "$run_dir/lat-idle" "$run_dir/lat-upload" <<'EOF'
import statistics, sys
windows, rss_before, peak, rss_after, b_before, b_after, spans, samples, cpu, clk, raw_idle, raw_up = sys.argv[1:]
rows = [l.rstrip("\n").split("\t") for l in open(windows) if l.strip()]
# A window is quiet when the hypervisor took under STEAL_MAX % of the CPU time in it: the steal of
# the noisier windows (up to 38 % seen) raised their p99 several times over, idle and upload alike.
STEAL_MAX = 2.0
quiet = lambda r: float(r[13]) < STEAL_MAX
p99 = lambda phase: [float(r[2]) for r in rows if r[0] == phase and quiet(r)]
worst = max(p99("upload"), default=float("nan")) / statistics.median(p99("idle") or [float("nan")])
# Every GET of the quiet windows pooled: those of the idle windows against those sent from an
# upload's start until the instance held its new set.
spans = [[float(x) for x in l.split()] for l in open(spans) if l.strip()]
read = lambda f: [[int(x) for x in l.split()] for l in open(f) if l.strip()]
pooled_p99 = lambda xs: sorted(xs)[min(len(xs) - 1, int(0.99 * len(xs)))]
quiet_spans = {ph: [(int(r[14]), int(r[15])) for r in rows if r[0] == ph and quiet(r)] for ph in ("idle", "upload")}
in_quiet = lambda due, phase: any(a <= due <= b for a, b in quiet_spans[phase])
idle_gets, up_gets = read(raw_idle), read(raw_up)
all_idle = [ns / 1e6 for _, ns in idle_gets]
lat_idle = [ns / 1e6 for due, ns in idle_gets if in_quiet(due, "idle")]
per_up_all = [[(due, ns / 1e6) for due, ns in up_gets if s0 <= due <= s1] for s0, s1, *_ in spans]
per_up = [[x for due, x in xs if in_quiet(due, "upload")] for xs in per_up_all]
lat_up = [x for xs in per_up for x in xs]
all_up = [x for xs in per_up_all for _, x in xs]
nan = float("nan")
idle, up = (pooled_p99(lat_idle), pooled_p99(lat_up)) if lat_idle and lat_up else (nan, nan)
kib = 1024
held = float(b_after) / kib / kib
peak_mib, before_mib, after_mib = int(peak) / kib, int(rss_before) / kib, int(rss_after) / kib
rss = [int(x) for x in open(samples) if x.strip()]
print("| phase | p50 ms | p99 ms | max ms | degraded | non-2xx | errors | popup-api cores | MariaDB cores | Redis cores | Redis calls/s | InnoDB history | GCs | steal % |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r[:14]) + " |")
print()
for i, (s0, s1, secs, _) in enumerate(spans):
    print(f"upload {i + 1}: answered in {secs:.1f} s, held {(s1 - s0) / 1e9:.1f} s after its start; its GETs' p99 {pooled_p99([x for _, x in per_up_all[i]]):.2f} ms")
print(f"sets held: {float(b_before)/kib/kib:.1f} MiB before, {held:.1f} MiB after")
print(f"popup-api RSS: {before_mib:.1f} MiB before, peak {peak_mib:.1f} MiB (VmHWM; sampled max {max(rss)/kib:.1f}), {after_mib:.1f} MiB after")
marks = {l.split()[0]: [float(x) for x in l.split()[1:]] for l in open(cpu) if l.strip()}
(t0, *c0), (t1, *c1) = marks["start"], marks["idle"]
ups = [(marks[f"upload{k}-start"], marks[f"upload{k}-end"]) for k in range(1, len(spans) + 1)]
up_t = sum(e[0] - s[0] for s, e in ups)
print()
print(f"CPU, in cores (seconds of CPU a second) idle ({t1 - t0:.0f} s) and in the uploads ({up_t / len(ups):.0f} s each, until the set is held), and an upload's own CPU seconds (upload minus the idle rate; mean of {len(ups)}):")
print()
print("| process | idle | upload | upload's own s |")
print("|---|---|---|---|")
for i, name in enumerate(["popup-api", "MariaDB", "Redis"]):
    idle_rate = (c1[i] - c0[i]) / float(clk) / (t1 - t0)
    up_s = sum(e[i + 1] - s[i + 1] for s, e in ups) / float(clk)
    print(f"| {name} | {idle_rate:.2f} | {up_s / up_t:.2f} | {(up_s - idle_rate * up_t) / len(ups):.1f} |")
print(f"| uploading client | - | - | {statistics.mean(x[3] for x in spans):.1f} |")
ok_rss = peak_mib <= held + 128
ok_p99 = up <= 1.5 * idle
print()
print("| target | measured | verdict |")
print("|---|---|---|")
print(f"| peak RSS <= sets held + 128 MiB ({held + 128:.1f}) | {peak_mib:.1f} MiB ({peak_mib - held:.1f} over the sets) | {'PASS' if ok_rss else 'FAIL'} |")
quiet_n = lambda phase: f"{len(quiet_spans[phase])} of {sum(1 for r in rows if r[0] == phase)}"
print(f"| p99 of the uploads' GETs <= 1.5 x the idle GETs', quiet windows (steal < {STEAL_MAX:g} %: {quiet_n('upload')} upload, {quiet_n('idle')} idle) ({1.5 * idle:.2f} ms; {len(lat_up)} and {len(lat_idle)} GETs) | {up:.2f} ms ({up / idle:.2f} x; worst window {worst:.2f} x the idle windows' median) | {'PASS' if ok_p99 else ('FAIL' if lat_up and lat_idle else 'UNMEASURED')} |")
print()
print(f"Every window, quiet or not: the uploads' GETs' p99 {pooled_p99(all_up):.2f} ms, the idle GETs' {pooled_p99(all_idle):.2f} ms ({pooled_p99(all_up) / pooled_p99(all_idle):.2f} x).")
EOF
} | tee "$report"
log "report: $report"
if [ "${BENCH_STRICT:-0}" = 1 ] && grep -q '| FAIL |' "$report"; then exit 1; fi
