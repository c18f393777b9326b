#!/usr/bin/env python3
"""Fit the kernel model's two free efficiencies (GEMM: the fraction of the dense peak a full wave
of tiles sustains; memory: the fraction of HBM bandwidth memory-bound kernels reach) once, to
Megatron-LM's A100 iteration times (../shared/validation/korthikanti2022_table5.csv).

Every row's predicted time is, to within the kernel gaps and the GEMMs that are memory-bound,
T = A / gemm + B / memory + C (the GEMMs, the memory-bound kernels, and what neither moves:
communication, the pipeline's waits). The script runs `placesim reproduce validation` at three
points, solves A, B and C per row, and picks the pair that minimises the larger of
(mean absolute error / 5%) and (worst error / 10%) over both modes: the issue's two targets
weighted alike. It then runs the reproduction at the pair to check it. Usage:

    /usr/bin/python3 tools/fit_kernels.py [--placesim build/placesim]
"""
import argparse
import csv
import os
import subprocess
import tempfile

POINTS = [(0.85, 0.60), (0.75, 0.60), (0.85, 0.45)]


def run(placesim, gemm, memory, work):
    gpu = os.path.join(work, f"a100-{gemm}-{memory}.yaml")
    with open(gpu, "w") as f:
        f.write(f"preset: a100\ngemm_efficiency: {gemm}\nmemory_efficiency: {memory}\n")
    out = os.path.join(work, f"out-{gemm}-{memory}")
    subprocess.run([placesim, "reproduce", "validation", "--no-plots", "--gpu", gpu, "-o", out], check=True,
                   stdout=subprocess.DEVNULL)
    rows = list(csv.DictReader(open(os.path.join(out, "validation.csv"))))
    return {(r["model"], r["mode"]): (float(r["measured_s"]), float(r["predicted_s"])) for r in rows}


def score(errors):
    by_mode = {}
    for (model, mode), e in errors.items():
        by_mode.setdefault(mode, []).append(abs(e))
    return max(max(sum(v) / len(v) / 0.05, max(v) / 0.10) for v in by_mode.values()), by_mode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--placesim", default="build/placesim")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        (g0, m0), (g1, _), (_, m1) = POINTS
        t00, t10, t01 = (run(args.placesim, g, m, work) for g, m in POINTS)
        model = {}
        for key, (measured, a00) in t00.items():
            a10, a01 = t10[key][1], t01[key][1]
            A = (a00 - a10) / (1 / g0 - 1 / g1)
            B = (a00 - a01) / (1 / m0 - 1 / m1)
            model[key] = (measured, A, B, a00 - A / g0 - B / m0)
        best = None
        for gi in range(500, 1001):
            g = gi / 1000
            for mi in range(300, 1001, 5):
                m = mi / 1000
                errors = {k: (A / g + B / m + C) / measured - 1 for k, (measured, A, B, C) in model.items()}
                s, _ = score(errors)
                if best is None or s < best[0]:
                    best = (s, g, m)
        s, g, m = best
        print(f"fitted: gemm_efficiency {g:.3f}, memory_efficiency {m:.3f} (score {s:.3f}; 1 meets both targets)")
        check = run(args.placesim, g, m, work)
        errors = {k: p / meas - 1 for k, (meas, p) in check.items()}
        for (model_name, mode), e in sorted(errors.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            print(f"  {mode:<30} {model_name:<14} {100 * e:+6.1f}%")
        _, by_mode = score(errors)
        for mode, v in by_mode.items():
            print(f"  {mode}: mean {100 * sum(v) / len(v):.1f}%, worst {100 * max(v):.1f}%")


if __name__ == "__main__":
    main()
