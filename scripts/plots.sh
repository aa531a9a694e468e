#!/usr/bin/env bash
# plots.sh STAMP: the PNGs of docs/PERFORMANCE.md from a `make bench` run (matplotlib in .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -c 'import matplotlib' 2>/dev/null || .venv/bin/pip install -q -r loadtest/requirements-plot.txt
.venv/bin/python loadtest/plot.py "$1"
