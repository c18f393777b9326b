#!/usr/bin/env python3
"""Plots of a placesim run, written by `placesim report` (which calls this script).

Input: the records.json that `placesim report` writes (one normalised record per measured point:
graph, strategy, gpus, params, latency in seconds, search_time in seconds, oom, failed,
trace_file). Output, as PNG and SVG in --out:
  latency_by_model      per-iteration latency per strategy per model (and GPU count)
  latency_vs_bandwidth  latency against the swept link bandwidth (when a bandwidth was swept)
  search_time_vs_gpus   placement search time against the GPU count (when it varies)
  gantt                 the per-GPU timeline of one placement, read from its Chrome trace
A plot whose axis does not vary in the records is skipped and the script says so.
Needs Debian's python3-matplotlib (tools/install-deps.sh installs it).
"""
import argparse
import json
import math
import os
import sys
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")  # no display on servers and in CI
import matplotlib.pyplot as plt  # noqa: E402


def save(fig, out_dir, name, written):
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, f"{name}.{ext}")
        fig.savefig(path, dpi=120, bbox_inches="tight")
        written.append(path)
    plt.close(fig)


def ok(r):
    return not r.get("failed") and r.get("latency") is not None


def group_key(r, with_gpus):
    key = r.get("graph", "?")
    if with_gpus:
        key += f" / {r.get('gpus')} GPUs"
    return key


def other_params(r, exclude):
    return tuple(sorted((k, str(v)) for k, v in r.get("params", {}).items() if k not in exclude))


def plot_latency_by_model(records, out_dir, written, notes):
    gpu_counts = {r.get("gpus") for r in records}
    groups = OrderedDict()
    strategies = OrderedDict()
    for r in records:
        groups.setdefault(group_key(r, len(gpu_counts) > 1), None)
        strategies.setdefault(r["strategy"], None)
    # Several records per (group, strategy) (other swept values, repetitions): show the median.
    values = defaultdict(list)
    oom = set()
    for r in records:
        g, s = group_key(r, len(gpu_counts) > 1), r["strategy"]
        if ok(r):
            values[(g, s)].append(r["latency"])
        if r.get("oom"):
            oom.add((g, s))
    if not values:
        notes.append("latency_by_model: no successful point, skipped")
        return
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(groups) * max(1, len(strategies)) / 3), 4))
    width = 0.8 / max(1, len(strategies))
    for si, s in enumerate(strategies):
        xs, ys, marks = [], [], []
        for gi, g in enumerate(groups):
            v = sorted(values.get((g, s), []))
            if v:
                xs.append(gi + si * width)
                ys.append(v[len(v) // 2] * 1e3)
                marks.append((g, s) in oom)
        ax.bar(xs, ys, width, label=s)
        for x, y, is_oom in zip(xs, ys, marks):
            if is_oom:
                ax.text(x, y, "OOM", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_xticks([gi + 0.4 - width / 2 for gi in range(len(groups))])
    ax.set_xticklabels(list(groups), rotation=20, ha="right")
    ax.set_ylabel("per-iteration latency (ms)")
    if max(max(v) for v in values.values()) / max(1e-12, min(min(v) for v in values.values())) > 20:
        ax.set_yscale("log")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Latency per strategy")
    save(fig, out_dir, "latency_by_model", written)


def numeric_param(records, name_part):
    keys = set()
    for r in records:
        for k, v in r.get("params", {}).items():
            if name_part in k.lower() and isinstance(v, (int, float)):
                keys.add(k)
    return sorted(keys)


def plot_latency_vs_bandwidth(records, out_dir, written, notes):
    keys = numeric_param(records, "bandwidth")
    if not keys:
        notes.append("latency_vs_bandwidth: no bandwidth was swept, skipped")
        return
    key = keys[0]
    lines = defaultdict(list)
    for r in records:
        if ok(r) and key in r.get("params", {}):
            label = r["strategy"]
            rest = other_params(r, {key, "graph", "strategy", "repetition", "seed"})
            if rest:
                label += " " + ",".join(f"{k}={v}" for k, v in rest)
            if len({x.get("graph") for x in records}) > 1:
                label = f"{r.get('graph')}: {label}"
            lines[label].append((r["params"][key], r["latency"]))
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, pts in sorted(lines.items()):
        pts.sort()
        ax.plot([p[0] / 1e9 for p in pts], [p[1] * 1e3 for p in pts], marker="o", label=label)
    ax.set_xlabel(f"{key} (GB/s)")
    ax.set_ylabel("per-iteration latency (ms)")
    ax.legend(fontsize=7)
    ax.set_title("Latency against link bandwidth")
    save(fig, out_dir, "latency_vs_bandwidth", written)


def plot_search_time_vs_gpus(records, out_dir, written, notes):
    gpus = {r.get("gpus") for r in records if ok(r)}
    if len(gpus) < 2:
        notes.append("search_time_vs_gpus: one GPU count only, skipped")
        return
    lines = defaultdict(lambda: defaultdict(list))
    for r in records:
        if ok(r) and r.get("search_time") is not None:
            label = r["strategy"]
            if len({x.get("graph") for x in records}) > 1:
                label = f"{r.get('graph')}: {label}"
            lines[label][r["gpus"]].append(r["search_time"])
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, per_gpu in sorted(lines.items()):
        xs = sorted(per_gpu)
        ys = [sorted(per_gpu[x])[len(per_gpu[x]) // 2] for x in xs]
        ax.plot(xs, [max(y, 1e-6) for y in ys], marker="o", label=label)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("placement search time (s)")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax.set_title("Search time against GPU count")
    save(fig, out_dir, "search_time_vs_gpus", written)


def plot_gantt(records, out_dir, written, notes, wanted):
    candidates = [r for r in records if ok(r) and r.get("trace_file") and os.path.exists(r["trace_file"])]
    if wanted:
        candidates = [r for r in candidates if r["strategy"] == wanted]
    if not candidates:
        notes.append("gantt: no trace file to draw" + (f" for strategy {wanted}" if wanted else "") + ", skipped")
        return
    r = min(candidates, key=lambda x: x["latency"])
    with open(r["trace_file"]) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {}
    gpu_pid = None
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"].get("name") == "GPUs":
            gpu_pid = e["pid"]
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") == gpu_pid:
            names[e["tid"]] = e["args"]["name"]
    bars = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("pid") == gpu_pid and e.get("dur", 0) > 0:
            bars[e["tid"]].append((e["ts"] / 1e3, e["dur"] / 1e3))  # us -> ms
    tids = sorted(names) if names else sorted(bars)
    fig, ax = plt.subplots(figsize=(8, 0.5 + 0.45 * len(tids)))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, tid in enumerate(tids):
        ax.broken_barh(bars.get(tid, []), (row - 0.4, 0.8), facecolors=colors[row % len(colors)],
                       edgecolor="none")
    ax.set_yticks(range(len(tids)))
    ax.set_yticklabels([names.get(t, str(t)) for t in tids])
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    ax.set_title(f"{r['strategy']} on {r.get('graph')} ({r['latency'] * 1e3:.3g} ms)")
    save(fig, out_dir, "gantt", written)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("records", help="records.json written by `placesim report`")
    ap.add_argument("--out", required=True, help="folder for the PNG and SVG files")
    ap.add_argument("--gantt-strategy", default="", help="draw this strategy's timeline (default: the fastest)")
    args = ap.parse_args()
    with open(args.records) as f:
        records = json.load(f)
    if not isinstance(records, list):
        sys.exit(f"{args.records}: expected a JSON array of records")
    os.makedirs(args.out, exist_ok=True)
    written, notes = [], []
    plot_latency_by_model(records, args.out, written, notes)
    plot_latency_vs_bandwidth(records, args.out, written, notes)
    plot_search_time_vs_gpus(records, args.out, written, notes)
    plot_gantt(records, args.out, written, notes, args.gantt_strategy)
    for n in notes:
        print(f"plot: {n}")
    for w in written:
        print(f"plot: wrote {w}")


if __name__ == "__main__":
    main()
