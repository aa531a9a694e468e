#!/usr/bin/env bash
# fuzz.sh [SECONDS]: run every `go test -fuzz` target of the module for SECONDS each (default 5;
# `make fuzz` runs 60). The targets are discovered (go test -list), never listed by hand.
# FUZZ_PARALLEL=N limits the fuzzing workers. A crasher is saved by Go under the package's
# testdata/fuzz/ and becomes a regression seed that plain `go test` (so `make test`) replays:
# commit it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build.env
secs=${1:-5}
# Packages that define a fuzz target, then each package's targets by name.
pkgs=$(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | xargs -n1 dirname | sort -u | sed 's|^|./|')
[ -n "$pkgs" ] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 1; }
n=0
for pkg in $pkgs; do
  for name in $(go test -tags "$GO_TAGS" -list '^Fuzz' "$pkg" | grep '^Fuzz'); do
    echo "== fuzz $name ($pkg) for ${secs}s"
    go test -tags "$GO_TAGS" -run '^$' -fuzz "^${name}\$" -fuzztime "${secs}s" ${FUZZ_PARALLEL:+-parallel "$FUZZ_PARALLEL"} "$pkg"
    n=$((n + 1))
  done
done
echo "== fuzz: $n targets, ${secs}s each"
