# benchstack.sh: sourced by bench.sh, bench-ab.sh and soak.sh. Builds the binaries, starts a private MariaDB,
# Redis, popup-worker, popup-api and the bare reference server in .testdata/ on free ports,
# seeds BENCH_CONFIGS popups (over BENCH_REGIONS region codes), warms BENCH_UIDS users and waits
# for the worker to drain the warm-up's events. Everything it started is stopped on exit.
# Sets: api ref api_pid worker_pid ref_pid admin_port mysql_port redis_port run_dir pids; queue_len and
# wait_drained, metrics, clk and cpu_ticks.
scripts/services.sh install
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
command -v curl >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >/dev/null; }
make -s build
go build -o bin/refserver ./loadtest/refserver
go build -o bin/benchtool ./loadtest/benchtool

run_dir="$root/.testdata/bench-$$"
mkdir -p "$run_dir" loadtest/reports
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  scripts/services.sh stop "$run_dir" || true
  rm -rf "$run_dir"
}
trap cleanup EXIT

read -r mysql_port redis_port api_port admin_port worker_port ref_port <<<"$(scripts/services.sh free-port 6 | tr '\n' ' ')"
scripts/services.sh start-mariadb "$run_dir" "$mysql_port"
scripts/services.sh start-redis "$run_dir" "$redis_port"

export POPUP_MYSQL_DSN="popup:popup@tcp(127.0.0.1:${mysql_port})/popup"
export POPUP_REDIS_ADDR="127.0.0.1:${redis_port}"
export POPUP_ADMIN_TOKEN=bench
export POPUP_HTTP_ADDR="127.0.0.1:${api_port}" POPUP_ADMIN_ADDR="127.0.0.1:${admin_port}" POPUP_WORKER_ADDR="127.0.0.1:${worker_port}"
export POPUP_LOG_LEVEL=warn
export POPUP_LINK_SCHEMES=http,https,app # benchtool's popups link to app://
scripts/services.sh start-app "$run_dir"
api_pid=$(cat "$run_dir/popup-api.pid") worker_pid=$(cat "$run_dir/popup-worker.pid")
if [ "${POPUP_KNOWN_USERS:-1}" != 0 ]; then
  # First visits cost no SQL once the worker has built the known-users filter (an empty state
  # table: its first rebuild finishes at once).
  for _ in $(seq 1 150); do
    curl -fsS "http://127.0.0.1:${worker_port}/metrics" 2>/dev/null | grep -q '^popup_known_users_complete{shard="0"} 1' && break
    sleep 0.2
  done
fi
bin/refserver -addr "127.0.0.1:${ref_port}" >"$run_dir/ref.log" 2>&1 & ref_pid=$!; pids+=($ref_pid)
for _ in $(seq 1 50); do curl -fsS -o /dev/null "http://127.0.0.1:${ref_port}/" 2>/dev/null && break; sleep 0.1; done
curl -fsS -o /dev/null "http://127.0.0.1:${ref_port}/" # the reference must answer 200 too

api="http://127.0.0.1:${api_port}"
ref="http://127.0.0.1:${ref_port}"
seed_flags=(-record)
[ "${BENCH_EXPERIMENTS:-0}" = 1 ] && seed_flags+=(-experiments) # a running experiment on every other popup and the record popup
[ "${BENCH_TRANSLATIONS:-0}" -gt 0 ] && seed_flags+=(-translations "$BENCH_TRANSLATIONS") # every popup in that many languages
bin/benchtool seed -admin "http://127.0.0.1:${admin_port}" -token bench -n "$configs" -regions "$BENCH_REGIONS" "${seed_flags[@]}"
if [ "${BENCH_WARM:-api}" = fill ]; then
  # the same end state written straight into Redis: seconds for a million users
  bin/benchtool fill -uids "$BENCH_UIDS" -want "$((configs + 1))" # + the record popup
else
  # With experiments a control user's no-popup answer may be an exposure with more to show after
  # it: six in a row (20% control each) leave about 0.03% of the users short of the steady state.
  quiet=1; [ "${BENCH_EXPERIMENTS:-0}" = 1 ] && quiet=6
  bin/benchtool warm -url "$api" -uids "$BENCH_UIDS" -tries "${BENCH_WARM_TRIES:-30}" -quiet "$quiet"
fi
queue_len() { # events waiting in every shard's queue
  redis-cli -p "$redis_port" --no-raw eval "local n=0 for _,k in ipairs(redis.call('keys','popup:{q*}:queue')) do n=n+redis.call('llen',k) end return n" 0 | tr -dc 0-9
}
wait_drained() { # until the worker has drained the queues (at most 60 s)
  local n
  for _ in $(seq 1 300); do
    n=$(queue_len); [ "${n:-0}" = 0 ] && return 0; sleep 0.2
  done
  log "the queues still hold ${n} events after 60 s"
}
# Let the worker drain the warm-up's impressions so B measures the steady state.
wait_drained


metrics() { curl -fsS -H 'Authorization: Bearer bench' "http://127.0.0.1:${admin_port}/metrics"; }
clk=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; } # user + system CPU of PID, in clock ticks
# query_of steady|rec: user 0's GET query on that path: "no popup", or the record popup (such a GET
# records one impression)
query_of() {
  local q; q=$(bin/benchtool query 0)
  if [ "$1" = rec ]; then sed 's/region=r[0-9]*/region=rec/' <<<"$q"; else echo "$q"; fi
}
# answer_size steady|rec: the bytes of the API's answer on that path, which a bare server answers
answer_size() { curl -fsS "${api}$(query_of "$1")" | wc -c; }
# start_bare SIZE: a bare server (loadtest/refserver) answering SIZE bytes on a free port, once it
# answers 200; sets bare_started_pid and bare_started_url
start_bare() {
  local port; port=$(scripts/services.sh free-port 1)
  bin/refserver -addr "127.0.0.1:${port}" -size "$1" >>"$run_dir/ref.log" 2>&1 & bare_started_pid=$!; pids+=($!)
  bare_started_url="http://127.0.0.1:${port}"
  for _ in $(seq 1 50); do curl -fsS -o /dev/null "$bare_started_url/" 2>/dev/null && break; sleep 0.1; done
  curl -fsS -o /dev/null "$bare_started_url/" # the reference must answer 200 too
}
