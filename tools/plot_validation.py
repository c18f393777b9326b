#!/usr/bin/env python3
"""Draw `placesim reproduce validation`: placesim's predicted iteration time against Megatron-LM's
measured one (Korthikanti et al. 2022, Table 5; MegaScale's strong scaling; Megatron-Core on
H100), one marker per row, a colour per table and mode, with the line of equality and the +-10%
band."""
import argparse
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Okabe-Ito, as tools/plot_results.py: one colour and marker per mode.
STYLE = {"full recompute": ("#0072B2", "o"), "selective + sequence parallel": ("#D55E00", "s"),
         "MegaScale strong scaling": ("#009E73", "^"), "Megatron-Core H100 weak scaling": ("#CC79A7", "D")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="validation.csv written by `placesim reproduce validation`")
    ap.add_argument("--out", required=True, help="folder for the PNG and SVG files")
    args = ap.parse_args()
    rows = list(csv.DictReader(open(args.csv)))
    fig, ax = plt.subplots(figsize=(7.6, 6.6))
    lo = min(min(float(r["measured_s"]), float(r["predicted_s"])) for r in rows) / 1.3
    hi = max(max(float(r["measured_s"]), float(r["predicted_s"])) for r in rows) * 1.3
    ax.plot([lo, hi], [lo, hi], "-", color="0.3", lw=1, label="predicted = measured")
    ax.fill_between([lo, hi], [lo * 0.9, hi * 0.9], [lo * 1.1, hi * 1.1], color="0.85", label="within 10%")
    unknown = sorted({r["mode"] for r in rows} - set(STYLE))
    if unknown:
        raise SystemExit(f"plot_validation.py: no style for the mode(s) {', '.join(unknown)}")
    for mode, (colour, marker) in STYLE.items():
        sel = [r for r in rows if r["mode"] == mode]
        if not sel:
            continue
        ax.plot([float(r["measured_s"]) for r in sel], [float(r["predicted_s"]) for r in sel], marker, color=colour,
                mfc="none", ms=9, mew=1.8, ls="none", label=mode)
        for r in sel:
            label = r["model"] if mode in ("full recompute", "selective + sequence parallel") else f"{r['model']}, {r['gpus']} GPUs"
            ax.annotate(f"{label} ({float(r['error']) * 100:+.1f}%)", (float(r["measured_s"]), float(r["predicted_s"])),
                        textcoords="offset points", xytext=(8, -4 if mode == "full recompute" else 6), fontsize=8,
                        color=colour)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured iteration time, Megatron-LM (s)")
    ax.set_ylabel("placesim's predicted iteration time (s)")
    ax.set_title("Iteration times, predicted against measured (three tables)", fontsize=11)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    fig.tight_layout()
    for ext in ("png", "svg"):
        path = os.path.join(args.out, f"validation.{ext}")
        fig.savefig(path, dpi=130)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
