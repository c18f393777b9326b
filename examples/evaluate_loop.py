#!/usr/bin/env python3
"""Evaluate placements in a loop: a local search written in Python over the quickstart's graph and
cluster, every candidate measured by the flow engine (contention included) in process.

  PYTHONPATH=build/python /usr/bin/python3 examples/evaluate_loop.py [--seconds 10]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "python"))
import numpy as np  # noqa: E402

import placesim  # noqa: E402

QUICKSTART = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "quickstart.yaml")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10, help="search time")
    parser.add_argument("--seed", type=int, default=1)
    a = parser.parse_args()
    s = placesim.load_scenario(QUICKSTART)
    graph, cluster = s.graph, s.cluster
    rng = np.random.default_rng(a.seed)

    # Start from m-etf's placement (one of the papers' strategies), then move one operator at a time
    # and keep the move when the flow engine says the iteration got faster and it still fits.
    start = placesim.place(graph, cluster, "m-etf").placement
    # A move takes an operator's whole colocation class along (its members must share a GPU).
    classes = graph.operator_arrays()["colocation_class"]
    best = placesim.evaluate(graph, cluster, start)
    placement, calls, t0 = start.copy(), 0, time.perf_counter()
    while time.perf_counter() - t0 < a.seconds:
        candidate = placement.copy()
        op = rng.integers(len(candidate))
        moved = classes == classes[op] if classes[op] >= 0 else np.arange(len(candidate)) == op
        candidate[moved] = rng.integers(cluster.num_gpus)
        e = placesim.evaluate(graph, cluster, candidate, engine="flow")
        calls += 1
        if not e.oom and e.latency < best.latency:
            placement, best = candidate, e
    elapsed = time.perf_counter() - t0
    first = placesim.evaluate(graph, cluster, start, engine="all")
    final = placesim.evaluate(graph, cluster, placement, engine="all")
    print(f"{calls} evaluations in {elapsed:.1f} s ({1e6 * elapsed / max(calls, 1):.0f} us each)")
    for name, e in (("m-etf", first), ("m-etf + local search", final)):
        print(f"{name:<22} flow {e.latencies['flow'] * 1e3:8.3f} ms   simgrid {e.latencies['simgrid'] * 1e3:8.3f} ms   "
              f"evaluator {e.latencies['evaluator'] * 1e3:8.3f} ms   peak memory {e.peak_memory / 2**30:.2f} GiB")
    print("busiest links:")
    print(final.links.head(3).to_string(index=False))
    return 0 if final.latencies["flow"] <= first.latencies["flow"] else 1


if __name__ == "__main__":
    sys.exit(main())
