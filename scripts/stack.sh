#!/usr/bin/env bash
# stack.sh: the local stack of `make up` / `make down`. Everything lives in .local/: MariaDB and
# Redis data, logs, PID files. Ports avoid the standard 3306/6379 so that a machine's own
# MySQL/Redis can keep running beside ours.
#
#   POPUP_LOCAL_MYSQL_PORT (13306)  POPUP_LOCAL_REDIS_PORT (16379)
#   POPUP_HTTP_ADDR (:8080)  POPUP_ADMIN_ADDR (127.0.0.1:8081)  POPUP_WORKER_ADDR (127.0.0.1:8082)
#   POPUP_ADMIN_TOKEN (generated once into .local/admin-token)
#   POPUP_PRIVACY_KEY (generated once into .local/privacy-key: user erasures are on)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir="$root/.local"
mysql_port=${POPUP_LOCAL_MYSQL_PORT:-13306}
redis_port=${POPUP_LOCAL_REDIS_PORT:-16379}

log() { printf '[stack] %s\n' "$*" >&2; }

stack_env() {
  mkdir -p "$dir"
  if [ ! -s "$dir/admin-token" ]; then
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/admin-token"
  fi
  if [ ! -s "$dir/privacy-key" ]; then
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/privacy-key")
  fi
  export POPUP_MYSQL_DSN="popup:popup@tcp(127.0.0.1:${mysql_port})/popup?parseTime=true"
  export POPUP_REDIS_ADDR="127.0.0.1:${redis_port}"
  export POPUP_ADMIN_TOKEN="${POPUP_ADMIN_TOKEN:-$(cat "$dir/admin-token")}"
  export POPUP_PRIVACY_KEY="${POPUP_PRIVACY_KEY:-$(cat "$dir/privacy-key")}"
  export POPUP_HTTP_ADDR="${POPUP_HTTP_ADDR:-:8080}"
  export POPUP_ADMIN_ADDR="${POPUP_ADMIN_ADDR:-127.0.0.1:8081}"
  export POPUP_WORKER_ADDR="${POPUP_WORKER_ADDR:-127.0.0.1:8082}"
  export POPUP_LINK_SCHEMES="${POPUP_LINK_SCHEMES:-http,https,app}" # the demo and load-test popups link to app://
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

seed() {
  local admin="http://${POPUP_ADMIN_ADDR/#:/127.0.0.1:}"
  local auth="Authorization: Bearer $POPUP_ADMIN_TOKEN"
  if curl -fsS -H "$auth" "$admin/admin/v1/popups?include_archived=true" | grep -q '"id"'; then
    log "popups exist; not seeding"
    return 0
  fi
  local f
  for f in deploy/demo/*.json; do
    curl -fsS -o /dev/null -H "$auth" -H 'Content-Type: application/json' --data-binary "@$f" "$admin/admin/v1/popups"
    log "seeded $(basename "$f")"
  done
}

cmd_up() {
  scripts/services.sh install
  command -v curl >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >/dev/null; }
  go mod download
  if [ -f loadtest/requirements.txt ]; then scripts/venv.sh; fi
  make -s build
  stack_env
  scripts/services.sh start-mariadb "$dir" "$mysql_port"
  scripts/services.sh start-redis "$dir" "$redis_port"
  scripts/services.sh start-app "$dir"
  local public="http://127.0.0.1:${POPUP_HTTP_ADDR##*:}"
  seed
  cat >&2 <<MSG
[stack] up:
  public API  $public/api/v1/popup?uid=demo-1&platform=ios&app_version=8.10.0
  admin API   http://${POPUP_ADMIN_ADDR}  (token in .local/admin-token)
  worker      http://${POPUP_WORKER_ADDR}/metrics
  MariaDB     127.0.0.1:${mysql_port} (popup/popup)   Redis 127.0.0.1:${redis_port}
  stop with   make down
MSG
}

cmd_down() {
  scripts/services.sh stop "$dir"
}

cmd_status() {
  local f
  for f in "$dir"/*.pid; do
    [ -e "$f" ] || continue
    if alive "$f"; then echo "$(basename "$f" .pid): running (pid $(cat "$f"))"; else echo "$(basename "$f" .pid): dead"; fi
  done
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) stack_env; env | grep '^POPUP_' | sort ;;
  *) echo "usage: $0 up|down|status|env" >&2; exit 2 ;;
esac
