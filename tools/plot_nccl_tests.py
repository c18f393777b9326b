#!/usr/bin/env python3
"""Draw `placesim reproduce nccl-tests`: time and bus bandwidth against size, nccl-tests' measured
points (hollow markers) beside placesim's NCCL model (lines), all-reduce and all-gather."""
import argparse
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Okabe-Ito, as tools/plot_results.py: one colour per collective.
COLOURS = {"all-reduce": "#0072B2", "all-gather": "#D55E00"}


def size_label(b):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale:
            return f"{b / scale:g} {unit}"
    return f"{b:g} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="nccl-tests.csv written by `placesim reproduce nccl-tests`")
    ap.add_argument("--out", required=True, help="folder for the PNG and SVG files")
    args = ap.parse_args()
    rows = list(csv.DictReader(open(args.csv)))
    fig, (t_ax, bw_ax) = plt.subplots(1, 2, figsize=(12, 4.6))
    for op in ("all-reduce", "all-gather"):
        sel = [r for r in rows if r["op"] == op]
        x = [float(r["bytes"]) for r in sel]
        colour = COLOURS[op]
        t_ax.plot(x, [float(r["simulated_us"]) for r in sel], "-", color=colour, label=f"{op}: placesim")
        t_ax.plot(x, [float(r["measured_us"]) for r in sel], "o", mfc="none", color=colour, label=f"{op}: nccl-tests")
        bw_ax.plot(x, [float(r["simulated_busbw_GBps"]) for r in sel], "-", color=colour, label=f"{op}: placesim")
        bw_ax.plot(x, [float(r["measured_busbw_GBps"]) for r in sel], "o", mfc="none", color=colour, label=f"{op}: nccl-tests")
    ticks = [1 << k for k in range(10, 31, 4)]
    for ax in (t_ax, bw_ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks)
        ax.set_xticklabels([size_label(t) for t in ticks])
        ax.set_xlabel("size (nccl-tests' bytes: the buffer; all-gather: the gathered output)")
        ax.grid(True, which="major", alpha=0.3)
    t_ax.set_yscale("log")
    t_ax.set_ylabel("time (us)")
    t_ax.set_title("Time")
    bw_ax.set_ylabel("bus bandwidth (GB/s)")
    bw_ax.set_title("Bus bandwidth")
    bw_ax.legend(loc="upper left", fontsize=8)
    fig.suptitle("NCCL 2.18 on one 8 x H100 server: nccl-tests (calibration data) and placesim's NCCL model (dgx-h100 preset)")
    fig.tight_layout()
    for ext in ("png", "svg"):
        path = os.path.join(args.out, f"nccl-tests.{ext}")
        fig.savefig(path, dpi=120)
        print(f"plot: wrote {path}")


if __name__ == "__main__":
    main()
