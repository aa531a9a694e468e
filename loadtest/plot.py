#!/usr/bin/env python3
"""Draw the PNG plots of docs/PERFORMANCE.md from a `make bench` run's CSV files.

usage: python3 loadtest/plot.py STAMP   (STAMP as in loadtest/reports/sweep-STAMP.csv)

Writes docs/img/throughput-vs-connections.png and docs/img/latency-distribution.png.
Needs matplotlib (scripts/plots.sh installs it into .venv).
"""
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

root = Path(__file__).resolve().parent.parent
reports = root / "loadtest" / "reports"
out = root / "docs" / "img"


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main(stamp):
    out.mkdir(parents=True, exist_ok=True)
    sweep = rows(reports / f"sweep-{stamp}.csv")
    conns = [int(r["conns"]) for r in sweep]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(conns, [float(r["bare_rps"]) for r in sweep], "o-", label="bare net/http (A)")
    ax.plot(conns, [float(r["api_rps"]) for r in sweep], "s-", label="GET /api/v1/popup (B)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(conns, [str(c) for c in conns])
    ax.set_xlabel("wrk connections (-t2, keep-alive, loopback)")
    ax.set_ylabel("requests / s")
    ax.set_title(f"Throughput vs connections, make bench {stamp}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "throughput-vs-connections.png", dpi=110)

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, label in (("api", "GET /api/v1/popup"), ("bare", "bare net/http")):
        hist = rows(reports / f"latency-{name}-{stamp}.csv")
        # x: percentile on a "nines" scale so the tail is visible
        xs = [float(r["percentile"]) for r in hist if float(r["percentile"]) < 100]
        ys = [float(r["latency_ms"]) for r in hist if float(r["percentile"]) < 100]
        ax.plot([1 / (1 - x / 100) for x in xs], ys, label=label)
    ax.set_xscale("log")
    ticks = [1, 2, 10, 100, 1000]
    ax.set_xticks(ticks, ["0%", "50%", "90%", "99%", "99.9%"])
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency, ms (from intended send time)")
    ax.set_title("Latency at a fixed rate of half the API's maximum (open loop)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "latency-distribution.png", dpi=110)
    print(f"wrote {out}/throughput-vs-connections.png and latency-distribution.png")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
