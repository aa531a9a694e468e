# stages.sh: sourced by scripts/test.sh. Runs named stages, in the foreground or in the
# background (for stages that share no state), each with its output in a log of its own, and
# prints a table of their durations at the end.
#
#   stage NAME CMD...       run CMD now; its output goes to the terminal
#   stage_bg NAME CMD...    run CMD in the background, output to $stage_dir/NAME.log
#
# CMD runs in a subshell of its own, as an asynchronous command that is waited for: there `set -e`
# stops a shell function at its first failing command (inside `CMD || ...` bash would ignore
# `set -e` for the whole function, and a failing first step would pass unnoticed). Being a
# subshell, CMD cannot export to the caller: it writes what the caller needs to a file.
#   stage_wait NAME...      wait for background stages; on failure print the log and exit 1
#   stage_report            the duration table (also printed on failure, by the EXIT trap)
#
# Needs stage_dir (a directory) set by the caller.

declare -A stage_pid=() stage_secs=() stage_status=()
stage_order=()
stage_t0=$(date +%s)

_stage_mark() { printf '\n== %s %s (+%ss)\n' "$1" "$2" "$(( $(date +%s) - stage_t0 ))"; }

stage() {
  local name=$1; shift
  stage_order+=("$name")
  _stage_mark "$name" started
  local t0; t0=$(date +%s)
  local rc=0
  ( "$@" ) &
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
    ( "$@" ) >"$stage_dir/$name.log" 2>&1 &
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

stage_report() {
  local name
  echo
  echo "== stages (seconds; background stages overlap the others)"
  for name in "${stage_order[@]}"; do
    printf '   %-10s %6s  %s\n' "$name" "${stage_secs[$name]:-?}" "${stage_status[$name]:-not finished}"
  done
  printf '   %-10s %6s\n' total "$(( $(date +%s) - stage_t0 ))"
}
