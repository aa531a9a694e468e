# stages.sh: sourced by scripts/test.sh. Runs named stages, in the foreground or in the
# background (for stages that share no state), each with its output in a log of its own, and
# prints a table of their durations and CPU times at the end (CPU: user+sys of the stage's
# processes that it waited for; servers it started and left running are not in it).
#
#   stage NAME CMD...       run CMD now; its output goes to the terminal
#   stage_bg NAME CMD...    run CMD in the background, output to $stage_dir/NAME.log
#
# CMD runs in a subshell of its own, as an asynchronous command that is waited for: there `set -e`
# stops a shell function at its first failing command (inside `CMD || ...` bash would ignore
# `set -e` for the whole function, and a failing first step would pass unnoticed). Being a
# subshell, CMD cannot export to the caller: it writes what the caller needs to a file.
#   stage_wait NAME...      wait for background stages; on failure print the log and exit 1
#   stage_await NAME...     inside a background stage: wait for other background stages to end,
#                           and fail (return 1) if one of them failed
#   stage_await_mark NAME MARK  the same for a step of NAME that leaves $stage_dir/NAME.MARK
#   stage_report            the duration table (also printed on failure, by the EXIT trap)
#
# Needs stage_dir (a directory) set by the caller.

declare -A stage_pid=() stage_secs=() stage_status=()
stage_order=()
stage_t0=$(date +%s)

_stage_mark() { printf '\n== %s %s (+%ss)\n' "$1" "$2" "$(( $(date +%s) - stage_t0 ))"; }

# _stage_cpu prints the CPU seconds (user+sys) of the calling shell's waited-for children.
# (`times` must run in that shell itself: in a pipeline or $(...) it would report a subshell's.)
_stage_cpu() {
  local f; f=$(mktemp)
  times >"$f"
  awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] } printf "%d\n", n }' "$f"
  rm -f "$f"
}

# _stage_run NAME CMD...: CMD in a subshell of its own (see above), its CPU time recorded.
_stage_run() {
  local name=$1 rc=0; shift
  ( "$@" ) &
  wait $! || rc=$?
  _stage_cpu >"$stage_dir/$name.cpu"
  return $rc
}

stage() {
  local name=$1; shift
  stage_order+=("$name")
  _stage_mark "$name" started
  local t0; t0=$(date +%s)
  local rc=0
  ( _stage_run "$name" "$@" ) &
  wait $! || rc=$?
  stage_secs[$name]=$(( $(date +%s) - t0 ))
  stage_status[$name]=$([ $rc -eq 0 ] && echo ok || echo FAILED)
  if [ $rc -ne 0 ]; then echo "== $name FAILED (exit $rc)"; exit 1; fi
}

stage_bg() {
  local name=$1; shift
  stage_order+=("$name")
  _stage_mark "$name" "started in the background (log: $stage_dir/$name.log)"
  rm -f "$stage_dir/$name.rc"
  (
    t0=$(date +%s)
    rc=0
    ( _stage_run "$name" "$@" ) >"$stage_dir/$name.log" 2>&1 &
    wait $! || rc=$?
    echo $(( $(date +%s) - t0 )) >"$stage_dir/$name.secs"
    echo $rc >"$stage_dir/$name.rc"
    exit $rc
  ) &
  stage_pid[$name]=$!
}

stage_wait() {
  local name rc failed=0
  for name in "$@"; do
    # the stage's own record of its end (bash may have reaped and forgotten a long-finished job)
    while [ ! -s "$stage_dir/$name.rc" ] && kill -0 "${stage_pid[$name]}" 2>/dev/null; do sleep 0.2; done
    wait "${stage_pid[$name]}" 2>/dev/null || true
    rc=$(cat "$stage_dir/$name.rc" 2>/dev/null || echo 1)
    stage_secs[$name]=$(cat "$stage_dir/$name.secs" 2>/dev/null || echo "?")
    if [ $rc -eq 0 ]; then
      stage_status[$name]=ok
      _stage_mark "$name" "done in ${stage_secs[$name]}s"
    else
      stage_status[$name]=FAILED
      _stage_mark "$name" "FAILED (exit $rc); its log:"
      tail -60 "$stage_dir/$name.log"
      failed=1
    fi
  done
  [ $failed -eq 0 ] || exit 1
}

stage_await() {
  local name
  for name in "$@"; do
    while [ ! -s "$stage_dir/$name.rc" ]; do sleep 0.5; done
    [ "$(cat "$stage_dir/$name.rc")" = 0 ] || { echo "stage $name failed"; return 1; }
  done
}

# stage_await_mark NAME MARK: inside a background stage, wait until stage NAME has left
# $stage_dir/NAME.MARK (a step of it is done); fail if NAME ended without it.
stage_await_mark() {
  while [ ! -e "$stage_dir/$1.$2" ]; do
    if [ -s "$stage_dir/$1.rc" ] && [ ! -e "$stage_dir/$1.$2" ]; then echo "stage $1 failed before $2"; return 1; fi
    sleep 0.5
  done
}

stage_report() {
  local name
  echo
  echo "== stages (wall and CPU seconds; background stages overlap the others)"
  printf '   %-10s %6s %6s\n' stage wall cpu
  for name in "${stage_order[@]}"; do
    printf '   %-10s %6s %6s  %s\n' "$name" "${stage_secs[$name]:-?}" "$(cat "$stage_dir/$name.cpu" 2>/dev/null || echo '?')" \
      "${stage_status[$name]:-not finished}"
  done
  local cpu; cpu=$(mktemp)
  _stage_cpu >"$cpu"
  printf '   %-10s %6s %6s\n' total "$(( $(date +%s) - stage_t0 ))" "$(cat "$cpu")"
  rm -f "$cpu"
}
