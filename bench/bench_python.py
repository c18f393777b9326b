#!/usr/bin/env python3
"""The per-call overhead of placesim.evaluate (the Python module) against the engine's own time.

On the quickstart's graph (4-layer BERT, fused) and cluster (8 GPUs, spine-leaf 4:1), one
placement (m-etf's) is measured with the flow engine, in rounds that alternate, side by side:

  C++      measure_placement called in a C++ loop (what `placesim simulate` and the scenario runner
           compute per placement: the evaluator's order, the flow engine, bounds and memory), timed
           per call in C++, with no Python in between;
  Python   placesim.evaluate(graph, cluster, placement, engine="flow").latency, timed per call;
  cost     placesim.CostModel(graph, cluster, "flow").latency(placement), the search's latency.

The overhead is the Python call's median less the C++ call's median, as a fraction of the
latter and of the engine's own run (EngineRun::wall_s, the flow engine alone) (the issue's bound:
under 10%).

  PYTHONPATH=build/python /usr/bin/python3 bench/bench_python.py [--calls 250] [--rounds 20] [--check]
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "build", "python"))

import numpy as np  # noqa: E402

import placesim  # noqa: E402
from placesim import _placesim  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=250, help="calls per round and side")
    parser.add_argument("--rounds", type=int, default=20, help="rounds, each side by side")
    parser.add_argument("--engine", default="flow")
    parser.add_argument("--check", action="store_true", help="exit 1 when the overhead is 10%% or more")
    a = parser.parse_args()

    s = placesim.load_scenario(os.path.join(HERE, "..", "scenarios", "quickstart.yaml"))
    graph, cluster = s.graph, s.cluster
    placement = placesim.place(graph, cluster, "m-etf").placement.astype(np.int32)
    cost = placesim.CostModel(graph, cluster, "flow" if a.engine == "flow" else "list")
    evaluate = placesim.evaluate
    cpp, py, cm, engine_wall = [], [], [], []
    for _ in range(a.rounds):
        cpp += _placesim._time_measure(graph, cluster, placement, a.engine, a.calls)
        for _ in range(a.calls):
            t0 = time.perf_counter()
            e = evaluate(graph, cluster, placement, engine=a.engine)
            latency = e.latency
            py.append(time.perf_counter() - t0)
            engine_wall.append(e.wall_times[a.engine])
        for _ in range(a.calls):
            t0 = time.perf_counter()
            cost.latency(placement)
            cm.append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in {"cpp": cpp, "py": py, "cm": cm, "wall": engine_wall}.items()}
    overhead = med["py"] - med["cpp"]
    print(f"graph      {graph.num_operators} operators, {graph.num_tensors} tensors; {cluster.description}")
    print(f"placement  m-etf; engine {a.engine}; latency {latency * 1e3:.4f} ms; "
          f"{a.rounds} rounds x {a.calls} calls per side")
    print(f"{'median per call':<40}{'us':>10}")
    print(f"{'C++ measure_placement (no Python)':<40}{med['cpp'] * 1e6:>10.2f}")
    print(f"{'  of which the ' + a.engine + ' engine run':<40}{med['wall'] * 1e6:>10.2f}")
    print(f"{'Python placesim.evaluate(...).latency':<40}{med['py'] * 1e6:>10.2f}")
    print(f"{'Python CostModel.latency':<40}{med['cm'] * 1e6:>10.2f}")
    print(f"overhead   {overhead * 1e6:.2f} us per call = {100 * overhead / med['cpp']:.2f}% of the C++ call, "
          f"{100 * overhead / med['wall']:.2f}% of the {a.engine} engine's run alone")
    if a.check and overhead >= 0.1 * min(med["cpp"], med["wall"]):
        print("overhead is 10% or more of the engine's time", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
