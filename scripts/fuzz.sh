#!/usr/bin/env bash
# fuzz.sh [BUDGET]: run every `go test -fuzz` target of the module for BUDGET each: N seconds
# (`make fuzz` runs 60) or Nx executions (`make test`'s fuzz smoke); 5 seconds when not given.
# The targets are discovered, never listed by hand: the test files each package compiles under
# the build tags (go list, which compiles nothing; `go test -list` would build a plain test
# binary of each package), searched for `func FuzzXxx(`. FUZZ_PARALLEL=N limits the fuzzing workers. A crasher is saved by
# Go under the package's testdata/fuzz/ and becomes a regression seed that plain `go test` (so
# `make test`) replays: commit it.
#
# Why the smoke counts executions: a budget in seconds makes Go's fuzz coordinator stop its
# workers by a context deadline, and Go before 1.27 can report that deadline as the target's
# failure ("context deadline exceeded", no crasher) when a worker is slow to stop, which a loaded
# machine makes likely (go.dev/issue/75804). A budget in executions sets no deadline, so the
# smoke's verdict cannot depend on the machine's load; only its duration does. Long runs in
# seconds (`make fuzz`) can still meet that upstream race: rerun before suspecting the target.
#
# Cost: -fuzz compiles the package and everything its tests import a second time, with coverage
# instrumentation (one target per go test run; the runs after the first find that build in the
# Go cache). A fuzzed package's tests therefore import the standard library and the package's
# own small dependencies only (docs/RELIABILITY.md, "Hostile input", has the figures): heavy_deps below are
# refused, naming the package; move the code under test into a small package instead
# (internal/reqparse).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build.env
budget=${1:-5}
[[ $budget =~ ^[1-9][0-9]*x?$ ]] || { echo "fuzz.sh: the budget is N (seconds) or Nx (executions), not '$budget'" >&2; exit 2; }
fuzztime=$budget
[[ $budget == *x ]] || fuzztime=${budget}s
heavy_deps='^(github\.com/stretchr/testify|github\.com/gin-gonic/gin|net/http)(/|$)'
# Packages whose tracked test files mention a fuzz target (git ls-files: nothing untracked, no
# node_modules or .venv).
pkgs=$(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | xargs -n1 dirname | sort -u | sed 's|^|./|')
[ -n "$pkgs" ] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 1; }
n=0
for pkg in $pkgs; do
  # the test files this package compiles under GO_TAGS, and the fuzz targets they define
  files=$(go list -tags "$GO_TAGS" -f '{{$d := .Dir}}{{range .TestGoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .XTestGoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}' "$pkg")
  names=$(sed -n 's/^func \(Fuzz[A-Z0-9_][A-Za-z0-9_]*\)(.*\*testing\.F).*/\1/p' $files | sort -u)
  [ -n "$names" ] || continue
  heavy=$(go list -tags "$GO_TAGS" -test -deps -f '{{.ImportPath}}' "$pkg" | grep -E "$heavy_deps" | head -3 || true)
  if [ -n "$heavy" ]; then
    echo "fuzz.sh: $pkg's tests import $(echo $heavy | tr ' ' ','): go test -fuzz would compile that whole tree again with coverage instrumentation. Keep fuzzed packages' tests on the standard library (see the top of this script)." >&2
    exit 1
  fi
  for name in $names; do
    echo "== fuzz $name ($pkg) for $fuzztime"
    go test -tags "$GO_TAGS" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" ${FUZZ_PARALLEL:+-parallel "$FUZZ_PARALLEL"} "$pkg"
    n=$((n + 1))
  done
done
[ "$n" -gt 0 ] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 1; }
echo "== fuzz: $n targets, $fuzztime each"
