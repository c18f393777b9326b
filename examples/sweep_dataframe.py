#!/usr/bin/env python3
"""A sweep to a pandas DataFrame and a plot: the quickstart's graph on its spine-leaf at three NIC
bandwidths, four strategies, every point measured by the flow engine; latency against bandwidth
per strategy, drawn with matplotlib.

  PYTHONPATH=build/python /usr/bin/python3 examples/sweep_dataframe.py [-o OUT]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "build", "python"))
import placesim  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="out/sweep-dataframe")
    a = parser.parse_args()
    scenario = {
        "name": "sweep-dataframe",
        "graph": {"model": "bert-base", "layers": 4, "style": "fused", "gpu": "rtx3070"},
        "cluster": {"type": "spine-leaf", "leaves": 2, "servers_per_leaf": 2, "spines": 1, "gpus_per_server": 2,
                    "nvlink_bandwidth": "150GB/s", "nic_bandwidth": "25Gbps", "oversubscription": 4,
                    "gpu_memory": "16GiB"},
        "strategies": ["single-device", "m-etf", "heft", {"name": "mcmc", "options": {"steps": 500, "seed": 1}}],
        "simulation": {"engine": "flow", "trace": False},
        "sweep": {"cluster.nic_bandwidth": ["10Gbps", "25Gbps", "100Gbps"]},
    }
    df = placesim.run_scenario(scenario, a.output, jobs=2, fresh=True)
    df["nic_gbps"] = df["sweep"].map(lambda s: float(s["cluster.nic_bandwidth"].removesuffix("Gbps")))
    table = df.pivot(index="nic_gbps", columns="label", values="flow_latency") * 1e3
    print("flow latency (ms) by NIC bandwidth (Gb/s) and strategy:")
    print(table.round(3).to_string())

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for label in table.columns:
        ax.plot(table.index, table[label], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("NIC bandwidth (Gb/s)")
    ax.set_ylabel("iteration latency under contention (ms)")
    ax.set_title("4-layer BERT on 8 GPUs, spine-leaf 4:1")
    ax.legend()
    fig.tight_layout()
    png = os.path.join(a.output, "latency-by-bandwidth.png")
    fig.savefig(png, dpi=100)
    print(f"plot: {png}")
    return 0 if (df["status"] == "ok").all() else 1


if __name__ == "__main__":
    sys.exit(main())
