#!/usr/bin/env bash
# bench-revs.sh REV_A REV_B: two builds of the service side by side on one machine, one load,
# rounds alternating between them, so that a change between two commits is measured as a ratio
# of neighbouring runs (how issue 57's regression was hunted; bisect with it).
#
# Each revision is built in a temporary git worktree and gets its own MariaDB, Redis, popup-worker
# and popup-api (scripts/services.sh), both up for the whole run. Every round sends both the same
# seeded request sequence (wrk, one seed per round, the order A/B swapped every other round) and
# prints req/s and popup-api CPU-ms per 1,000 requests; the end prints each revision's median and
# B's median per-round ratio to A. CPU per request is the steadier figure on a shared machine.
#
#   BENCH_REVS_LOAD (mix): mix = issue 57's revisit mix: BENCH_MIX_CONFIGS (1000) popups from
#       `benchtool mix`, the daily cap 2, users Zipf over BENCH_MIX_USERS (200000), a 15 s warm-up
#       (loadtest/bench-revisit.lua); steady = 20 popups, no user matches any (one Redis GET, no
#       popup); first = 1,000 mix popups, every request a new user (the record path).
#   BENCH_REVS_ROUNDS (8)  BENCH_REVS_DURATION (6s)  BENCH_REVS_PROFILE (a path prefix: a 5 s CPU
#       profile of each revision in every round, PREFIX-A-R.pb.gz; merge with `go tool pprof -proto`)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
[ $# = 2 ] || { echo "usage: scripts/bench-revs.sh REV_A REV_B" >&2; exit 2; }
load=${BENCH_REVS_LOAD:-mix}
case "$load" in mix | steady | first) ;; *) echo "BENCH_REVS_LOAD: mix, steady or first, not $load" >&2; exit 2 ;; esac
rounds=${BENCH_REVS_ROUNDS:-8}
duration=${BENCH_REVS_DURATION:-6s}
export BENCH_MIX_USERS=${BENCH_MIX_USERS:-200000} BENCH_MIX_REGIONS=10 BENCH_MIX_PREFIX=m
log() { printf '[bench-revs] %s\n' "$*" >&2; }

scripts/services.sh install
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
go build -o bin/benchtool ./loadtest/benchtool
source scripts/build.env

run_dir="$root/.testdata/bench-revs-$$"
mkdir -p "$run_dir"
pids=()
cleanup() {
  local p l
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for l in A B; do scripts/services.sh stop "$run_dir/$l" >/dev/null 2>&1 || true; done
  for l in A B; do [ -d "$run_dir/$l/src" ] && git worktree remove --force "$run_dir/$l/src"; done
  rm -rf "$run_dir"
}
trap cleanup EXIT

# The request sequences: seeded by wrk's argument so that both revisions see the same users.
case "$load" in
  mix) script=loadtest/bench-revisit.lua ;;
  steady)
    script="$run_dir/steady.lua"
    cat >"$script" <<'EOF'
local counter = 1
function setup(thread) thread:set("tid", counter); counter = counter + 1 end
function init(args) math.randomseed(1000 * tonumber(args[1] or 1) + tid) end
function request()
  return wrk.format("GET", "/api/v1/popup?uid=st" .. math.random(1, 200000) .. "&platform=ios&app_version=9.2.0&region=zz")
end
EOF
    ;;
  first)
    script="$run_dir/first.lua"
    cat >"$script" <<'EOF'
local counter, n = 1, 0
function setup(thread) thread:set("tid", counter); counter = counter + 1 end
function init(args) seed = args[1] or "1" end
function request()
  n = n + 1
  return wrk.format("GET", "/api/v1/popup?uid=fv" .. seed .. "-" .. tid .. "-" .. n .. "&platform=ios&app_version=9.2.0&region=m0")
end
EOF
    ;;
esac

declare -A api adm apid
start() { # LABEL REV: build REV, start its stack, import the load's popups
  local l=$1 dir="$run_dir/$1" mp rp ap dp wp
  mkdir -p "$dir"
  git worktree add --detach "$dir/src" "$2" >/dev/null 2>&1
  (cd "$dir/src" && go build -tags "$GO_TAGS" -o bin/popup-api ./cmd/popup-api && go build -tags "$GO_TAGS" -o bin/popup-worker ./cmd/popup-worker)
  read -r mp rp ap dp wp <<<"$(scripts/services.sh free-port 5 | tr '\n' ' ')"
  scripts/services.sh start-mariadb "$dir" "$mp" 2>/dev/null
  scripts/services.sh start-redis "$dir" "$rp" 2>/dev/null
  (
    export POPUP_MYSQL_DSN="popup:popup@tcp(127.0.0.1:$mp)/popup" POPUP_REDIS_ADDR="127.0.0.1:$rp" POPUP_ADMIN_TOKEN=bench \
      POPUP_HTTP_ADDR="127.0.0.1:$ap" POPUP_ADMIN_ADDR="127.0.0.1:$dp" POPUP_WORKER_ADDR="127.0.0.1:$wp" POPUP_LOG_LEVEL=warn \
      POPUP_LINK_SCHEMES=http,https,app POPUP_USER_DAILY_CAP=2
    cd "$dir/src" && "$root/scripts/services.sh" start-app "$dir" 2>/dev/null
  )
  pids+=("$(cat "$dir/popup-api.pid")" "$(cat "$dir/popup-worker.pid")")
  api[$l]="http://127.0.0.1:$ap" adm[$l]="http://127.0.0.1:$dp" apid[$l]=$(cat "$dir/popup-api.pid")
  if [ "$load" = steady ]; then
    bin/benchtool mix -admin "${adm[$l]}" -token bench -n 20 -regions 10 -prefix m >/dev/null
  else
    bin/benchtool mix -admin "${adm[$l]}" -token bench -n "${BENCH_MIX_CONFIGS:-1000}" -regions 10 -prefix m >/dev/null
  fi
  local i
  for i in $(seq 1 100); do # served once a probe user of the first region is shown a popup
    curl -fsS "${api[$l]}/api/v1/popup?uid=probe&platform=ios&app_version=9.2.0&region=m0" | grep -q '"popup":{' && break
    [ "$i" = 100 ] && { log "$2 does not serve the imported popups after 20 s; stopping"; exit 1; }
    sleep 0.2
  done
  log "$l = $2 ($(git rev-parse --short "$2")): ${api[$l]}"
}
start A "$1"
start B "$2"
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
[ "$load" = mix ] && for l in A B; do wrk -t2 -c64 -d15s -s "$script" "${api[$l]}" -- 1 >/dev/null; done
for r in $(seq 1 "$rounds"); do
  order="A B"; [ $((r % 2)) = 0 ] && order="B A"
  for l in $order; do
    prof=
    if [ -n "${BENCH_REVS_PROFILE:-}" ]; then
      curl -fsS -H 'Authorization: Bearer bench' -o "$BENCH_REVS_PROFILE-$l-$r.pb.gz" "${adm[$l]}/debug/pprof/profile?seconds=5" &
      prof=$!
    fi
    t0=$(ticks "${apid[$l]}")
    out=$(wrk -t2 -c64 -d"$duration" -s "$script" "${api[$l]}" -- $((r + 1)))
    t1=$(ticks "${apid[$l]}")
    [ -n "$prof" ] && { wait "$prof" || true; }
    awk -v l="$l" -v r="$r" -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" '
      /Requests\/sec/ { rps = $2 } / requests in / { n = $1 } /Non-2xx|Socket errors/ { bad = bad " " $0 }
      END { printf "round %d %s req/s %.0f cpu_ms_per_1k %.2f%s\n", r, l, rps, t * 1000 / hz * 1000 / n, bad }' <<<"$out"
  done
done | tee "$run_dir/rounds"
awk '
  { rps[$3, $2] = $5; cpu[$3, $2] = $7; if ($2 > n) n = $2 }
  function median(a, k,   i, j, t) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
  END {
    for (i = 1; i <= n; i++) { ra[i] = rps["A", i]; rb[i] = rps["B", i]; ca[i] = cpu["A", i]; cb[i] = cpu["B", i]
      qr[i] = rps["B", i] / rps["A", i]; qc[i] = cpu["B", i] / cpu["A", i] }
    printf "median req/s A %.0f B %.0f; CPU-ms/1k A %.2f B %.2f; B/A per round: req/s %.3f, CPU per request %.3f\n",
      median(ra, n), median(rb, n), median(ca, n), median(cb, n), median(qr, n), median(qc, n)
  }' "$run_dir/rounds"
