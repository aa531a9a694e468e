#!/usr/bin/env bash
# services.sh: start and stop the project's own MariaDB and Redis in project-local data
# directories on their own ports, tracked by PID files. Never touches the machine's default
# services (they may run on 3306/6379 beside ours).
#
#   scripts/services.sh install [test]          install what the scripts need when missing: mariadb-server,
#                                               mariadb-client, redis-server, redis-tools, python3 and
#                                               python3-venv (the .venv of locust and schemathesis), iproute2 (ss, ip netns), curl; with
#                                               `test` also chromium and npm (the browser tests),
#                                               maven and a JRE (the generated clients; `make test` only),
#                                               prometheus (its promtool, for deploy/'s alerting rules)
#   scripts/services.sh start-mariadb DIR PORT  initialise DIR on first use, start, wait until ready
#                                               (POPUP_MARIADB_BUFFER_POOL, POPUP_MARIADB_FLUSH, and
#                                               POPUP_MARIADB_OPTS: more server options, space-separated)
#   scripts/services.sh start-redis DIR PORT    start redis-server with AOF in DIR
#   scripts/services.sh start-redis-cluster DIR PORT1 PORT2 PORT3
#                                               start three cluster-enabled redis-servers with AOF in
#                                               DIR, make them a three-master cluster, wait until ok
#   scripts/services.sh start-app DIR           with the caller's POPUP_* environment: migrate, start
#                                               bin/popup-worker and bin/popup-api (logs DIR/NAME.log,
#                                               PID files DIR/NAME.pid), wait until popup-api is ready
#   scripts/services.sh stop DIR                stop whatever this script started in DIR (by PID),
#                                               popup-api and popup-worker before their storage
#   scripts/services.sh free-port [N]           print N (1) distinct free TCP ports on 127.0.0.1, below
#                                               the kernel's ephemeral range (see cmd_free_port)
set -euo pipefail

log() { printf '[services] %s\n' "$*" >&2; }

find_bin() { # first of the names found on PATH or in sbin dirs
  local n
  for n in "$@"; do
    if command -v "$n" >/dev/null 2>&1; then command -v "$n"; return 0; fi
    for d in /usr/sbin /usr/local/sbin /sbin; do
      [ -x "$d/$n" ] && { echo "$d/$n"; return 0; }
    done
  done
  return 1
}

cmd_install() { # [test]: also what only `make test` needs
  local pkgs=()
  { find_bin mariadbd mysqld && find_bin mariadb-install-db mysql_install_db; } >/dev/null || pkgs+=(mariadb-server)
  find_bin mariadb mysql >/dev/null || pkgs+=(mariadb-client)
  find_bin redis-server >/dev/null || pkgs+=(redis-server)
  find_bin redis-cli >/dev/null || pkgs+=(redis-tools)
  find_bin python3 >/dev/null || pkgs+=(python3)
  # Debian's python3 leaves ensurepip out; without python3-venv `python3 -m venv` makes no pip.
  if ! find_bin python3 >/dev/null || ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then pkgs+=(python3-venv); fi
  find_bin ss >/dev/null && find_bin ip >/dev/null || pkgs+=(iproute2)
  find_bin curl >/dev/null || pkgs+=(curl)
  if [ "${1:-}" = test ]; then
    # the operator console's browser test: headless Chromium, and npm for its pinned axe-core
    find_bin chromium chromium-browser >/dev/null || pkgs+=(chromium)
    find_bin npm >/dev/null || pkgs+=(npm)
    # the generated clients' test (scripts/clients.sh): mvn fetches OpenAPI Generator, java runs it
    find_bin mvn >/dev/null || pkgs+=(maven)
    find_bin java >/dev/null || pkgs+=(default-jre-headless)
    # promtool, which checks and unit-tests deploy/prometheus's alerting rules (the deploy stage);
    # the package's Prometheus server is not used (policy-rc.d or no init may keep it stopped)
    find_bin promtool >/dev/null || pkgs+=(prometheus)
  fi
  if [ ${#pkgs[@]} -eq 0 ]; then return 0; fi
  log "installing: ${pkgs[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  # policy-rc.d may refuse to start the distribution's services; we never use them anyway.
  $sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
}

# cmd_free_port [N]: N distinct ports, one a line, none in use now (ss).
#
# They come from below the kernel's ephemeral range (net.ipv4.ip_local_port_range) when there is
# room: a port from that range can be taken by any outgoing connection between this check and the
# server's bind, and the test servers restart on their ports while load runs. connect() never
# picks a port below the range, so only a listener could take one. The same rule as
# internal/chaos (freePort). With POPUP_PORTS_FILE set, the ports handed out are appended to it
# (under a lock: the stages of scripts/test.sh ask concurrently) and never handed out again in
# the same run: a port given but not yet bound would otherwise look free.
cmd_free_port() {
  local n=${1:-1}
  if [ -n "${POPUP_PORTS_FILE:-}" ]; then
    touch "$POPUP_PORTS_FILE"
    exec 9<"$POPUP_PORTS_FILE"
    flock 9
  fi
  local lo=0 hi first span p i
  read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=0
  if [ "$lo" -gt 2048 ]; then first=$(( lo > 17408 ? lo - 16384 : 1024 )); span=$(( lo - first ))
  else first=20000; span=10000; fi # no room below the range: a fixed band, checked as well
  declare -A taken=()
  for p in $(ss -Htan 2>/dev/null | awk '{print $4}' | sed 's/.*://'); do taken[$p]=1; done
  if [ -n "${POPUP_PORTS_FILE:-}" ]; then
    for p in $(cat "$POPUP_PORTS_FILE"); do taken[$p]=1; done
  fi
  local out=()
  for (( i = 0; i < 64 * n && ${#out[@]} < n; i++ )); do
    p=$(( first + (RANDOM * 32768 + RANDOM) % span ))
    [ -z "${taken[$p]:-}" ] || continue
    taken[$p]=1
    out+=("$p")
  done
  if [ ${#out[@]} -lt "$n" ]; then log "free-port: found ${#out[@]} of $n free ports"; return 1; fi
  if [ -n "${POPUP_PORTS_FILE:-}" ]; then printf '%s\n' "${out[@]}" >>"$POPUP_PORTS_FILE"; fi
  printf '%s\n' "${out[@]}"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

cmd_start_mariadb() {
  local dir port
  dir=$(realpath -m "$1"); port=$2
  local data="$dir/mariadb" sock="$dir/mariadb.sock" pidf="$dir/mariadb.pid" tmp="$dir/mariadb-tmp"
  mkdir -p "$data" "$tmp"
  if alive "$pidf"; then log "mariadb already running (pid $(cat "$pidf"))"; return 0; fi
  if port_open "$port"; then log "port $port is taken by another process"; return 1; fi
  local user; user=$(id -un)
  local mysqld install client
  mysqld=$(find_bin mariadbd mysqld); install=$(find_bin mariadb-install-db mysql_install_db)
  client=$(find_bin mariadb mysql)
  local fresh=0
  if [ ! -d "$data/mysql" ]; then
    log "initialising $data"
    "$install" --no-defaults --datadir="$data" --user="$user" --auth-root-authentication-method=socket \
      --skip-test-db >"$dir/mariadb-install.log" 2>&1 || { cat "$dir/mariadb-install.log" >&2; return 1; }
    fresh=1
  fi
  # setsid: the server outlives the make target that started it; its PID is our handle.
  # --tmpdir of its own: a starting server deletes every "#sql*" file in its tmpdir (the temporary
  # tables a crashed run left), so servers sharing /tmp delete each other's live ones ("Error on
  # delete of '/tmp/#sql-temptable-…'"), and make test starts and kills several beside each other.
  setsid "$mysqld" --no-defaults --datadir="$data" --tmpdir="$tmp" --port="$port" --bind-address=127.0.0.1 \
    --socket="$sock" --pid-file="$pidf.server" --user="$user" --skip-name-resolve \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
    --innodb-buffer-pool-size="${POPUP_MARIADB_BUFFER_POOL:-256M}" \
    --innodb-flush-log-at-trx-commit="${POPUP_MARIADB_FLUSH:-1}" \
    --max-connections=500 --log-error="$dir/mariadb.err" ${POPUP_MARIADB_OPTS:-} </dev/null >/dev/null 2>&1 &
  echo $! >"$pidf"
  local i
  for i in $(seq 1 300); do
    if "$client" --no-defaults --socket="$sock" -uroot -e 'SELECT 1' >/dev/null 2>&1; then break; fi
    if ! alive "$pidf"; then log "mariadb exited; see $dir/mariadb.err"; tail -20 "$dir/mariadb.err" >&2; return 1; fi
    sleep 0.1
  done
  "$client" --no-defaults --socket="$sock" -uroot -e 'SELECT 1' >/dev/null
  if [ $fresh -eq 1 ]; then
    "$client" --no-defaults --socket="$sock" -uroot <<'SQL'
CREATE DATABASE IF NOT EXISTS popup CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE USER IF NOT EXISTS 'popup'@'%' IDENTIFIED BY 'popup';
GRANT ALL PRIVILEGES ON *.* TO 'popup'@'%' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
  fi
  log "mariadb up on 127.0.0.1:$port (pid $(cat "$pidf"), data $data)"
}

cmd_start_redis() {
  local dir port
  dir=$(realpath -m "$1"); port=$2
  local data="$dir/redis" pidf="$dir/redis.pid"
  mkdir -p "$data"
  if alive "$pidf"; then log "redis already running (pid $(cat "$pidf"))"; return 0; fi
  if port_open "$port"; then log "port $port is taken by another process"; return 1; fi
  local server cli
  server=$(find_bin redis-server); cli=$(find_bin redis-cli)
  # AOF everysec: the queue survives a restart losing at most ~1 s (docs/RELIABILITY.md).
  setsid "$server" --port "$port" --bind 127.0.0.1 --dir "$data" --daemonize no \
    --appendonly yes --appendfsync "${POPUP_REDIS_FSYNC:-everysec}" --save '' \
    --logfile "$dir/redis.log" </dev/null >/dev/null 2>&1 &
  echo $! >"$pidf"
  local i
  for i in $(seq 1 100); do
    if "$cli" -p "$port" ping 2>/dev/null | grep -q PONG; then
      log "redis up on 127.0.0.1:$port (pid $(cat "$pidf"))"; return 0
    fi
    alive "$pidf" || break
    sleep 0.05
  done
  log "redis did not start; see $dir/redis.log"; tail -20 "$dir/redis.log" >&2 || true
  return 1
}

cmd_start_redis_cluster() {
  [ $# -eq 4 ] || { log "usage: start-redis-cluster DIR PORT1 PORT2 PORT3"; return 2; }
  local dir; dir=$(realpath -m "$1"); shift
  local ports=("$@") server cli port i n
  server=$(find_bin redis-server); cli=$(find_bin redis-cli)
  # Each node's bus port is chosen here too: the default (port + 10000) may be past 65535 for
  # the ephemeral ports that free-port hands out.
  local bus=()
  for port in $(cmd_free_port 6); do
    case " ${ports[*]} " in *" $port "*) continue ;; esac
    if [ ${#bus[@]} -lt 3 ]; then bus+=("$port"); fi
  done
  for i in 0 1 2; do
    port=${ports[$i]}
    local data="$dir/redis-$port" pidf="$dir/redis-$port.pid"
    mkdir -p "$data"
    if alive "$pidf"; then log "redis $port already running (pid $(cat "$pidf"))"; continue; fi
    if port_open "$port"; then log "port $port is taken by another process"; return 1; fi
    setsid "$server" --port "$port" --bind 127.0.0.1 --dir "$data" --daemonize no \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-port "${bus[$i]}" \
      --cluster-node-timeout 5000 \
      --appendonly yes --appendfsync "${POPUP_REDIS_FSYNC:-everysec}" --save '' \
      --logfile "$dir/redis-$port.log" </dev/null >/dev/null 2>&1 &
    echo $! >"$pidf"
  done
  for port in "${ports[@]}"; do
    for i in $(seq 1 100); do
      "$cli" -p "$port" ping 2>/dev/null | grep -q PONG && break
      alive "$dir/redis-$port.pid" || break
      sleep 0.05
    done
    "$cli" -p "$port" ping 2>/dev/null | grep -q PONG ||
      { log "redis $port did not start; see $dir/redis-$port.log"; tail -20 "$dir/redis-$port.log" >&2 || true; return 1; }
  done
  n=$("$cli" -p "${ports[0]}" cluster info | tr -d '\r' | sed -n 's/^cluster_known_nodes://p')
  if [ "$n" != 3 ]; then
    "$cli" --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >"$dir/redis-cluster-create.log" 2>&1 ||
      { log "redis-cli --cluster create failed"; cat "$dir/redis-cluster-create.log" >&2; return 1; }
  fi
  # Every node must see every slot served before a client may rely on any of them.
  for i in $(seq 1 200); do
    n=0
    for port in "${ports[@]}"; do
      "$cli" -p "$port" cluster info 2>/dev/null | grep "^cluster_state:ok" >/dev/null && n=$((n + 1))
    done
    if [ $n -eq 3 ]; then log "redis cluster up on 127.0.0.1 ports ${ports[*]} (3 masters)"; return 0; fi
    sleep 0.1
  done
  log "redis cluster not ok after 20 s"; "$cli" -p "${ports[0]}" cluster info >&2 || true
  return 1
}

# cmd_start_app DIR: the one start-up sequence of the service (make up, the test smoke, the API
# fuzzer, the benchmarks): migrate, then the worker and the API in the background, tracked by PID
# files like the servers above, and wait for the API's readiness.
cmd_start_app() {
  local dir; dir=$(realpath -m "$1")
  mkdir -p "$dir"
  : "${POPUP_MYSQL_DSN:?start-app needs POPUP_MYSQL_DSN}" "${POPUP_REDIS_ADDR:?start-app needs POPUP_REDIS_ADDR}"
  local name
  for name in popup-worker popup-api; do
    [ -x "bin/$name" ] || { log "bin/$name is missing: make build"; return 1; }
  done
  bin/popup-worker migrate >>"$dir/popup-worker.log" 2>&1 || { log "migrate failed:"; tail -5 "$dir/popup-worker.log" >&2; return 1; }
  for name in popup-worker popup-api; do
    if alive "$dir/$name.pid"; then log "$name already running (pid $(cat "$dir/$name.pid"))"; continue; fi
    # setsid: it outlives the make target that started it; its PID file is our handle.
    setsid "bin/$name" </dev/null >>"$dir/$name.log" 2>&1 &
    echo $! >"$dir/$name.pid"
  done
  local addr=${POPUP_HTTP_ADDR:-:8080} i
  addr="${addr/#:/127.0.0.1:}"
  for i in $(seq 1 300); do
    if curl -fsS -o /dev/null "http://$addr/readyz" 2>/dev/null; then
      log "popup-api ready on $addr (pid $(cat "$dir/popup-api.pid")), popup-worker pid $(cat "$dir/popup-worker.pid"), logs in $dir"
      return 0
    fi
    for name in popup-worker popup-api; do
      alive "$dir/$name.pid" || { log "$name exited:"; tail -20 "$dir/$name.log" >&2; return 1; }
    done
    sleep 0.1
  done
  log "popup-api not ready on $addr after 30 s:"; tail -20 "$dir/popup-api.log" >&2
  return 1
}

stop_pidfile() {
  local pidf=$1 name=$2 pid i
  [ -f "$pidf" ] || return 0
  pid=$(cat "$pidf")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then log "$name (pid $pid) did not stop in 30 s; killing"; kill -KILL "$pid" 2>/dev/null || true; fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$pidf"
}

cmd_stop() {
  local dir; dir=$(realpath -m "$1")
  local f
  # the service first: a worker stopped after its MariaDB or Redis would log errors meanwhile
  for f in "$dir"/popup-api.pid "$dir"/popup-worker.pid "$dir"/*.pid; do
    [ -e "$f" ] || continue
    stop_pidfile "$f" "$(basename "$f" .pid)"
  done
}

case "${1:-}" in
  install) shift; cmd_install "$@" ;;
  start-mariadb) shift; cmd_start_mariadb "$@" ;;
  start-redis) shift; cmd_start_redis "$@" ;;
  start-redis-cluster) shift; cmd_start_redis_cluster "$@" ;;
  start-app) shift; cmd_start_app "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  free-port) shift; cmd_free_port "$@" ;;
  *) echo "usage: $0 install|start-mariadb DIR PORT|start-redis DIR PORT|start-redis-cluster DIR PORT1 PORT2 PORT3|start-app DIR|stop DIR|free-port" >&2; exit 2 ;;
esac
