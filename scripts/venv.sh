#!/usr/bin/env bash
# venv.sh: the project's Python virtualenv (.venv) with the test toolchain of
# loadtest/requirements.txt (locust, schemathesis, scipy, openapi-python-client and their pinned dependencies). Nothing is installed globally:
# pip runs only inside .venv.
#
#   scripts/venv.sh            create .venv when missing, (re)install when the requirements changed
#   scripts/venv.sh --force    reinstall the requirements even when unchanged
#
# Idempotent and cheap when nothing changed (a hash of the requirements file is kept in
# .venv/.requirements.sha256). Concurrent calls wait for each other (flock). On a Debian/Ubuntu
# machine where `python3 -m venv` fails because ensurepip is missing, it installs the
# python3-venv package with apt-get (as root, or through sudo) and tries again.
#
#   PYTHON (python3)   interpreter the venv is made from
#   POPUP_VENV (.venv) where the venv lives
set -euo pipefail
cd "$(dirname "$0")/.."

py=${PYTHON:-python3}
venv=${POPUP_VENV:-.venv}
req=loadtest/requirements.txt
stamp="$venv/.requirements.sha256"
force=0
[ "${1:-}" = "--force" ] && force=1

log() { printf '[venv] %s\n' "$*" >&2; }

command -v "$py" >/dev/null 2>&1 || { log "$py not found: install python3 (apt-get install python3)"; exit 1; }
[ -f "$req" ] || { log "$req is missing"; exit 1; }

# One installer at a time (make up, make test and make loadtest may overlap).
exec 9<"$req"
flock 9

healthy() { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import sys, pip' >/dev/null 2>&1; }

install_venv_package() {
  command -v apt-get >/dev/null 2>&1 || return 1
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || return 1
    sudo="sudo"
  fi
  # python3-venv pulls the versioned python3.X-venv that matches Debian's python3.
  local ver pkgs=(python3-venv)
  ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  log "python3 -m venv needs ensurepip: installing python3-venv (python$ver-venv)"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  if apt-cache show "python$ver-venv" >/dev/null 2>&1; then pkgs+=("python$ver-venv"); fi
  $sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
}

create_venv() {
  local err; err=$(mktemp)
  rm -rf "$venv"
  if "$py" -m venv "$venv" >/dev/null 2>"$err"; then rm -f "$err"; return 0; fi
  # Debian's python3 without python3-venv leaves a venv without pip behind: start over.
  rm -rf "$venv"
  if ! install_venv_package; then
    cat "$err" >&2; rm -f "$err"
    log "cannot create $venv: install python3-venv (apt-get install python3-venv) and retry"
    return 1
  fi
  rm -f "$err"
  "$py" -m venv "$venv"
}

if ! healthy; then
  log "creating $venv with $("$py" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
  create_venv
  healthy || { log "$venv has no working pip"; exit 1; }
fi

want=$(sha256sum "$req" | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
if [ $force -eq 1 ] || [ "$want" != "$have" ] || [ ! -x "$venv/bin/locust" ] || [ ! -x "$venv/bin/st" ] || [ ! -x "$venv/bin/openapi-python-client" ]; then
  log "installing $req into $venv"
  rm -f "$stamp"
  # pip would compile every module it installs to bytecode, much of it for the packages' own
  # test suites (scipy's above all), which nothing here imports. compileall compiles the rest,
  # once: where PYTHONDONTWRITEBYTECODE is set, the tools' modules would otherwise be compiled
  # again at every start (docs/PERFORMANCE.md, "make test", has the figures).
  "$venv/bin/python" -m pip install --disable-pip-version-check -q --no-compile -r "$req"
  "$venv/bin/python" -m compileall -q -x '/tests?/' "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "$want" >"$stamp"
fi
