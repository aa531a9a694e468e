#!/usr/bin/env bash
# fuzz.sh [SECONDS]: run every `go test -fuzz` target of the module for SECONDS each (default 5;
# `make fuzz` runs 60, `make test` 3 as its fuzz-smoke stage). The targets are discovered, never
# listed by hand: the test files each package compiles under the build tags (go list, which
# compiles nothing; `go test -list` built a plain test binary of each package, about 44
# CPU-seconds from a cold cache), searched for `func FuzzXxx(`. FUZZ_PARALLEL=N limits the
# fuzzing workers. A crasher is saved by Go under the package's testdata/fuzz/ and becomes a
# regression seed that plain `go test` (so `make test`) replays: commit it.
#
# Cost: -fuzz compiles the package and everything its tests import a second time, with coverage
# instrumentation (one target per go test run; the runs after the first find that build in the
# Go cache). A fuzzed package's tests therefore import the standard library and the package's
# own small dependencies only: Gin's tree cost about 160 CPU-seconds from a cold cache and
# testify's (net/http included) about 60, where `fuzz.sh 3` of all five targets now costs about
# 85 from an empty Go cache and 21 warm (2 cores, FUZZ_PARALLEL=1). heavy_deps below are refused,
# naming the package; move the code under test into a small package instead (internal/reqparse).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build.env
secs=${1:-5}
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
    echo "== fuzz $name ($pkg) for ${secs}s"
    go test -tags "$GO_TAGS" -run '^$' -fuzz "^${name}\$" -fuzztime "${secs}s" ${FUZZ_PARALLEL:+-parallel "$FUZZ_PARALLEL"} "$pkg"
    n=$((n + 1))
  done
done
[ "$n" -gt 0 ] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 1; }
echo "== fuzz: $n targets, ${secs}s each"
