#!/usr/bin/env python3
"""Plot scripts/growth-soak.sh's CSV: the drain's rate and a day's drop against the log's size.

usage: python3 loadtest/plot_growth.py loadtest/reports/growth-STAMP.csv docs/img/log-growth.png
Needs matplotlib (scripts/growth-soak.sh installs it into .venv).
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst):
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    size = [int(r["rows"]) / 1e6 for r in rows]
    fig, (rate, drop) = plt.subplots(1, 2, figsize=(9, 3.6))
    rate.plot(size, [float(r["events_per_s"]) for r in rows], "o-")
    rate.set_xscale("log")
    rate.set_xlabel("action log, million rows")
    rate.set_ylabel("events / s drained")
    rate.set_ylim(bottom=0)
    rate.set_title("Drain rate")
    rate.grid(alpha=0.3)
    drop.plot(size, [float(r["drop_ms"]) for r in rows], "s-", color="tab:red")
    for x, r in zip(size, rows):
        drop.annotate(f"{int(r['day_rows']) / 1e6:.2f}M rows", (x, float(r["drop_ms"])),
                      textcoords="offset points", xytext=(4, 6), fontsize=8)
    drop.set_xscale("log")
    drop.set_xlabel("action log, million rows")
    drop.set_ylabel("ms to drop the oldest day")
    drop.set_ylim(bottom=0)
    drop.set_title("Retention: one day dropped")
    drop.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
