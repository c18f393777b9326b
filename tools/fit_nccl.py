#!/usr/bin/env python3
"""Fit placesim's NCCL costs (sim/core/nccl_costs.cpp) to nccl-tests on one 8 x H100 server.

Reads ../shared/validation/nccl-tests_nd-h100-v5_1x8.csv (all-reduce and all-gather times, us)
and fits, once, the eleven costs of placesim's NCCL model that one server exercises: the base
latency of each protocol and of NVLS, the per-hop NVLink latency of each protocol, the share of
the link each protocol reaches, the NVLink data efficiency and NVLS's share. The predictions are
the closed forms placesim computes for a collective alone on one server (sim/collectives/
closed_form.cpp: ring, NCCL's chain tree and NVLS, each priced by its busiest link), and each
size takes the fastest candidate, as `algorithm: auto` does. The objective is the largest
relative error over all 42 rows, each as a share of its tolerance (10% from 1 MiB up, 25% below; minimax), found by Nelder-Mead from several starts.

Usage: tools/fit_nccl.py [CSV]   (prints the costs and the error per row)
The network's costs are not in this file (one server); docs/collectives.md says where they
come from.
"""
import csv
import math
import os
import sys

import numpy as np

N = 8
LINK = 450e9            # NVLink4 per GPU, each direction (the dgx-h100 preset)
ALPHA = 0.6e-6          # the dgx-h100 preset's NVLink path latency, s (2 x 300 ns, added to every hop)
TREE_CHUNK = 512 * 1024
PROTOCOLS = ("LL", "LL128", "Simple")
NAMES = ["base_LL", "base_LL128", "base_Simple", "nvls_base", "hop_LL", "hop_LL128", "hop_Simple",
         "fraction_LL", "fraction_LL128", "nvlink_efficiency", "nvls_fraction"]


def unpack(x):
    us = 1e-6
    return dict(base=[x[0] * us, x[1] * us, x[2] * us], nvls_base=x[3] * us, hop=[x[4] * us, x[5] * us, x[6] * us],
                frac=[x[7], x[8], 1.0], eta=x[9], nvls=x[10])


def candidates(op, S, m):
    """(name, seconds) of every algorithm and protocol auto considers, as placesim's closed forms."""
    out = []
    for p in range(3):
        rate = m["frac"][p] * m["eta"] * LINK
        steps = 2 * (N - 1) if op == "all-reduce" else N - 1
        out.append((f"ring {PROTOCOLS[p]}", m["base"][p] + steps * (ALPHA + m["hop"][p] + S / N / rate)))
        if op == "all-reduce":
            c = max(1, math.ceil(S / TREE_CHUNK))
            out.append((f"tree {PROTOCOLS[p]}", m["base"][p] + (2 * (N - 1) + c - 1) * (ALPHA + m["hop"][p] + 2 * S / c / rate)))
    if op == "all-reduce":
        rate = m["nvls"] * m["eta"] * LINK
        out.append(("nvls", m["nvls_base"] + ALPHA + m["hop"][2] + S * (N + 1) / N / rate))
    return out


def predict(op, S, m):
    return min(candidates(op, S, m), key=lambda c: c[1])


def load(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            S = float(r["bytes"])
            rows.append(("all-reduce", S, float(r["all_reduce_time_us"]) * 1e-6))
            rows.append(("all-gather", S, float(r["all_gather_time_us"]) * 1e-6))
    return rows


def tolerance(S):
    """The error the issue allows: 10% from 1 MiB up, 25% below."""
    return 0.10 if S >= 1 << 20 else 0.25


def worst(x, rows):
    """The largest error as a share of its row's tolerance (minimax: no row is traded for another)."""
    if min(x) <= 0 or max(x[7:]) > 1:
        return 1e9
    m = unpack(x)
    return max(abs(predict(op, S, m)[1] / t - 1) / tolerance(S) for op, S, t in rows)


def nelder_mead(f, x0, steps, iters=6000):
    pts = [np.array(x0, float)] + [np.array(x0, float) + np.eye(len(x0))[i] * steps[i] for i in range(len(x0))]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = np.argsort(vals)
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        centroid = np.mean(pts[:-1], axis=0)
        xr = centroid + (centroid - pts[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = centroid + 2 * (centroid - pts[-1])
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = centroid + 0.5 * (pts[-1] - centroid)
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0] + 0.5 * (p - pts[0]) for p in pts]
                vals = [f(p) for p in pts]
    i = int(np.argmin(vals))
    return pts[i], vals[i]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "shared", "validation",
                                                               "nccl-tests_nd-h100-v5_1x8.csv")
    rows = load(path)
    starts = [[5.5, 7, 8, 25, 0.5, 1.5, 2.4, 0.25, 0.9, 0.79, 0.85],
              [6, 9, 10, 40, 0.6, 2.0, 3.0, 0.3, 0.8, 0.78, 0.8],
              [5, 6, 7, 55, 0.5, 1.2, 2.0, 0.2, 0.95, 0.8, 0.75]]
    best = None
    for x0 in starts:
        x, v = nelder_mead(lambda x: worst(x, rows), x0, [1, 1, 1, 5, 0.1, 0.3, 0.3, 0.05, 0.05, 0.02, 0.05])
        for scale in (0.3, 0.1, 0.03):
            x, v = nelder_mead(lambda x: worst(x, rows), x, [scale * s for s in [1, 1, 1, 5, 0.2, 0.5, 0.5, 0.1, 0.1, 0.05, 0.1]])
        if best is None or v < best[1]:
            best = (x, v)
    x, v = best
    for name, value in zip(NAMES, x):
        print(f"{name:>18} = {value:.4g}")
    print(f"largest error over tolerance: {v:.2f}")
    m = unpack(x)
    for op, S, t in rows:
        name, p = predict(op, S, m)
        print(f"{op:>10} {int(S):>11} {t * 1e6:>9.2f} us  model {p * 1e6:>9.2f} us  {p / t - 1:+6.1%}  {name}")


if __name__ == "__main__":
    main()
