#!/usr/bin/env bash
# fuzz.sh [SECONDS]: run every `go test -fuzz` target for SECONDS each (default 5: the smoke that
# `make test` runs; `make fuzz` runs 60). A crasher is saved by Go under the package's
# testdata/fuzz/ and becomes a regression seed that plain `go test` replays: commit it.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
targets=(
  "./internal/event FuzzDecode"
  "./internal/httpapi FuzzScanQuery"
  "./internal/httpapi FuzzActionBody"
  "./internal/uidauth FuzzUIDSig"
)
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  echo "== fuzz $name ($pkg) for ${secs}s"
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "${secs}s" "$pkg"
done
