#!/usr/bin/env bash
# marked-tests.sh MARK FILE...: the names of the test functions in FILE... that call
# testenv.MARK(t), as one -run alternation (Name1|Name2), or nothing. Used by scripts/test.sh's
# timed stage (Timed) and scripts/gotest-exec.sh (Long).
set -euo pipefail
mark=$1
shift
awk -v mark="testenv.${mark}(t)" '/^func Test/ { split($2, a, "("); name = a[1] } index($0, mark) { print name }' "$@" |
  sort -u | paste -sd'|'
