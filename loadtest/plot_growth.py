#!/usr/bin/env python3
"""Plot scripts/growth-soak.sh's CSV: the drain's rate and a day's drop (the log's share and the
twin table's) against the log's size.

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
    drop.plot(size, [float(r["drop_ms"]) for r in rows], "s-", color="tab:red", label="the log's share")
    # twin_ms: the twin table that holds the day, dropped outside the log's lock (older CSVs
    # have no such column: their drop_ms is the whole DROP PARTITION)
    twin = [(x, float(r["twin_ms"])) for x, r in zip(size, rows) if r.get("twin_ms")]
    if twin:
        drop.plot([x for x, _ in twin], [t for _, t in twin], "^--", color="tab:gray", label="the twin table")
        drop.legend(fontsize=8)
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
