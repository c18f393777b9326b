#!/usr/bin/env python3
"""Plots of a placesim run, written by `placesim report` (which calls this script).

Input: the records.json that `placesim report` writes, in the scenario's order (one normalised
record per point: graph, cluster, strategy, gpus, params and params_text (the swept values, in SI
units and as written), latency and latency_source (simgrid or evaluator), search_time, oom,
failed, trace_file). Output, as PNG and SVG in --out:
  latency_by_model      per-iteration latency per strategy per model (and GPU count); the median
                        over the rest of the sweep and over repetitions, and the plot says so
  latency_vs_bandwidth  latency against the swept bandwidth, one panel per model (and other swept
                        values): log axis, ticks at the swept values, in the unit they were written
  search_time_vs_gpus   placement search time against the GPU count, one panel per model
  gantt                 the timeline of one point (the fastest, or --gantt-strategy's fastest),
                        read from its Chrome trace: GPU tracks, then link tracks; idle GPUs left out
Every plot names the models and the cluster, says whose latency it shows (SimGrid's or the
evaluator's), draws each strategy in one colour and marker (the same in every plot), and keeps the
legend outside the data. A plot whose axis does not vary in the records is skipped and the script
says so. Status lines go to stderr. --describe FILE writes what each figure holds (titles, labels,
scales, ticks, the series' colours and markers, whether the legend lies outside the axes) as JSON,
for tests. Needs Debian's python3-matplotlib (tools/install-deps.sh installs it).
"""
import argparse
import json
import os
import re
import sys
import textwrap
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")  # no display on servers and in CI
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

# The registered strategies (`placesim strategies`), in a fixed order: each has its own colour and
# marker in every plot of every report. Other labels (a scenario's own, such as "ours") take the
# next free styles, in the scenario's order.
KNOWN_STRATEGIES = ["single-device", "round-robin", "random", "mcmc", "metis", "heft", "expert", "m-topo", "m-etf",
                    "m-sct", "quickp", "order-place", "celeritas", "placeto-greedy", "placeto", "baechi"]
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354",
           "#756bb1", "#636363"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "*", "h"]
IGNORED_PARAMS = {"graph", "strategy", "cluster.gpus", "seed", "repetition"}
# Swept bandwidth keys (the last part of the path) in words.
BANDWIDTH_WORDS = {
    "nvlink_bandwidth": "NVLink bandwidth per GPU",
    "ethernet_bandwidth": "NIC bandwidth per server",
    "nic_bandwidth": "NIC bandwidth",
    "link_bandwidth": "NIC bandwidth",
    "bandwidth": "link bandwidth",
    "core_bandwidth": "core link bandwidth",
    "aggregation_bandwidth": "aggregation link bandwidth",
    "uplink_bandwidth": "leaf-spine uplink bandwidth",
}
# Bandwidth units as written in a scenario -> (shown as, bytes per second in one of them).
BANDWIDTH_UNITS = [
    (("tbps", "tb/s", "tbit/s"), "Tb/s", 1e12 / 8), (("gbps", "gb/s", "gbit/s"), "Gb/s", 1e9 / 8),
    (("mbps", "mb/s", "mbit/s"), "Mb/s", 1e6 / 8), (("kbps", "kb/s", "kbit/s"), "kb/s", 1e3 / 8),
    (("tib/s",), "TiB/s", 2.0 ** 40), (("gib/s",), "GiB/s", 2.0 ** 30), (("mib/s",), "MiB/s", 2.0 ** 20),
    (("tbps", "tb/s", "tbyte/s"), "TB/s", 1e12), (("gbps", "gb/s", "gbyte/s"), "GB/s", 1e9),
    (("mbps", "mb/s", "mbyte/s"), "MB/s", 1e6),
]


def status(text):
    print(f"plot: {text}", file=sys.stderr)


def ok(r):
    return not r.get("failed") and r.get("latency") is not None


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def plural(n, one, many):
    return f"{n} {one if n == 1 else many}"


def unique(values):
    return list(OrderedDict.fromkeys(values))


# --- what every plot shares -------------------------------------------------------------------


def strategy_styles(records):
    """label -> (colour, marker), the same in every plot of the report."""
    labels = unique(r["strategy"] for r in records)
    taken = {KNOWN_STRATEGIES.index(s) for s in labels if s in KNOWN_STRATEGIES}
    free = (k for k in range(10 * len(PALETTE)) if k not in taken)
    styles = OrderedDict()
    for label in labels:
        k = KNOWN_STRATEGIES.index(label) if label in KNOWN_STRATEGIES else next(free)
        styles[label] = (PALETTE[k % len(PALETTE)], MARKERS[k % len(MARKERS)])
    return styles


def latency_words(records):
    """Whose latency the records' `latency` is: "SimGrid", "evaluator", or both."""
    sources = {r.get("latency_source") for r in records if ok(r)}
    if sources == {"simgrid"}:
        return "SimGrid"
    if sources == {"evaluator"}:
        return "evaluator"
    if sources == {"simgrid", "evaluator"}:
        return "SimGrid where it ran, else evaluator"
    return "as recorded"


def time_unit(seconds, log=False):
    """One unit for an axis of durations: from its median value, or on a log axis (which spans
    decades) from its largest."""
    v = [abs(s) for s in seconds if s]
    t = (max(v) if log else median(v)) if v else 1
    if t >= 1:
        return "s", 1.0
    if t >= 1e-3:
        return "ms", 1e-3
    if t >= 1e-6:
        return "us", 1e-6
    return "ns", 1e-9


def common_text(texts):
    """One description for several: the words they share, with "..." where they differ."""
    texts = unique(t for t in texts if t)
    if not texts:
        return ""
    if len(texts) == 1:
        return texts[0]
    words = [t.split(" ") for t in texts]
    if len({len(w) for w in words}) != 1:
        return texts[0] + " (and others)"
    out = []
    for column in zip(*words):
        same = len(set(column)) == 1
        if same:
            out.append(column[0])
        elif not out or out[-1] != "...":
            out.append("...")
    return " ".join(out)


def title_of(what, records):
    """"<what>: <models> on <cluster>", wrapped."""
    models = ", ".join(unique(r.get("graph", "?") for r in records))
    cluster = common_text(r.get("cluster", "") for r in records)
    text = f"{what}: {models}" + (f" on {cluster}" if cluster else "")
    return "\n".join(textwrap.wrap(text, 80))


def legend_outside(fig, axes, handles=None, labels=None):
    """The legend to the right of every axes, outside the data."""
    if handles is None:
        handles, labels = axes[0].get_legend_handles_labels()
    if not handles:
        return
    right = max(ax.get_position().x1 for ax in axes)
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(right + 0.01, max(ax.get_position().y1 for ax in axes)),
               fontsize=8, frameon=False, title="strategy", title_fontsize=8)


def panels(n, width=4.2, height=3.4):
    cols = 1 if n == 1 else 2 if n in (2, 4) else 3
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols + 1.8, height * rows + 0.9), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def layout_under_title(fig, title):
    """tight_layout below a suptitle of as many lines as `title` has, whatever the figure's height."""
    lines = title.count("\n") + 1
    top = 1 - (0.1 + 0.18 * lines) / fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, 0, 1, top))
    fig.suptitle(title, fontsize=10, y=top + 0.02 / fig.get_size_inches()[1], va="bottom")


def save(fig, out_dir, name, written, described):
    fig.canvas.draw()
    described[name] = describe(fig)
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, f"{name}.{ext}")
        fig.savefig(path, dpi=120, bbox_inches="tight")
        written.append(path)
    plt.close(fig)


def describe(fig):
    """What the figure shows, read back from matplotlib's objects (for --describe)."""
    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.get_visible()]
    boxes = [ax.get_window_extent(renderer) for ax in axes]
    legends = list(fig.legends) + [ax.get_legend() for ax in axes if ax.get_legend()]

    def overlaps(a, b):
        return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1

    out = {
        "suptitle": fig._suptitle.get_text() if fig._suptitle else "",
        "legends": [{"labels": [t.get_text() for t in lg.get_texts()],
                     "outside_axes": not any(overlaps(lg.get_window_extent(renderer), b) for b in boxes)}
                    for lg in legends],
        "axes": [],
    }
    for ax in axes:
        lines = [{"label": ln.get_label(), "color": to_hex(ln.get_color()), "marker": ln.get_marker(),
                  "x": [float(x) for x in ln.get_xdata()]}
                 for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        bars = [{"label": c.get_label(), "color": to_hex(c.patches[0].get_facecolor()) if c.patches else None,
                 "heights": [float(p.get_height()) for p in c.patches]}
                for c in ax.containers if not c.get_label().startswith("_")]
        out["axes"].append({
            "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
            "xscale": ax.get_xscale(), "yscale": ax.get_yscale(),
            "xticks": [float(t) for t in ax.get_xticks()],
            "xticklabels": [t.get_text() for t in ax.get_xticklabels()],
            "minor_xticks": [float(t) for t in ax.xaxis.get_minorticklocs()],
            "yticklabels": [t.get_text() for t in ax.get_yticklabels()],
            "lines": lines, "bars": bars,
        })
    return out


# --- the plots --------------------------------------------------------------------------------


def named_axes(records):
    """Swept paths whose values are names, not numbers (a labelled cluster, say), besides the graph:
    bars are grouped by them rather than taking medians across different clusters."""
    paths = []
    for r in records:
        for path, value in r.get("params", {}).items():
            if path in IGNORED_PARAMS or path == "graph" or path in paths or isinstance(value, (int, float)):
                continue
            if len(unique(json.dumps(q.get("params", {}).get(path)) for q in records)) > 1:
                paths.append(path)
    # A strategy's swept options (strategies[x].options) name no case of their own when the other
    # paths already tell the groups apart (one sweep block per model, say): leave them out.
    def groups(ps):
        return len(unique(json.dumps([r.get("graph")] + [r.get("params", {}).get(p) for p in ps]) for r in records))
    slim = [p for p in paths if not p.startswith("strategies")]
    if slim != paths and groups(slim) == groups(paths):
        paths = slim
    return paths


def group_key(r, with_gpus, named=()):
    key = r.get("graph", "?")
    if with_gpus:
        key += f" / {plural(r.get('gpus'), 'GPU', 'GPUs')}"
    for path in named:
        value = r.get("params_text", {}).get(path, r.get("params", {}).get(path))
        if value is not None:  # a path of another sweep block than this point's
            key += f" / {value}"
    return key


def aggregated(records, key_of):
    """What the records of one key differ in besides the strategy: swept paths with their number of
    values, and whether there are repetitions or seeds."""
    by_key = defaultdict(list)
    for r in records:
        by_key[key_of(r)].append(r)
    varying = OrderedDict()
    repeated = False
    for rs in by_key.values():
        for path in unique(p for r in rs for p in r.get("params", {})):
            if path in IGNORED_PARAMS:
                continue
            values = unique(json.dumps(r.get("params", {}).get(path)) for r in rs)
            if len(values) > 1:
                varying[path] = max(varying.get(path, 0), len(values))
        points = defaultdict(int)
        for r in rs:
            points[(r["strategy"], json.dumps(r.get("params", {}), sort_keys=True))] += 1
        repeated = repeated or any(n > 1 for n in points.values())
    return varying, repeated


def plot_latency_by_model(records, styles, out_dir, written, described):
    gpu_counts = unique(r.get("gpus") for r in records)
    named = named_axes(records)
    with_gpus = len(gpu_counts) > 1 and not named  # a named cluster says its GPU count itself
    groups = unique(group_key(r, with_gpus, named) for r in records)
    strategies = unique(r["strategy"] for r in records)
    values = defaultdict(list)
    oom = set()
    for r in records:
        g, s = group_key(r, with_gpus, named), r["strategy"]
        if ok(r):
            values[(g, s)].append(r["latency"])
        if r.get("oom"):
            oom.add((g, s))
    if not values:
        status("latency_by_model: no successful point, skipped")
        return
    varying, repeated = aggregated([r for r in records if ok(r)],
                                   lambda r: (group_key(r, with_gpus, named), r["strategy"]))
    medians = {k: median(v) for k, v in values.items()}
    unit, scale = time_unit(medians.values())
    fig, ax = plt.subplots(figsize=(max(6.0, 0.28 * len(groups) * len(strategies) + 1.5), 4.2))
    width = 0.8 / max(1, len(strategies))
    for si, s in enumerate(strategies):
        xs, ys, marks = [], [], []
        for gi, g in enumerate(groups):
            if (g, s) in medians:
                xs.append(gi + si * width)
                ys.append(medians[(g, s)] / scale)
                marks.append((g, s) in oom)
        ax.bar(xs, ys, width, label=s, color=styles[s][0])
        for x, y, is_oom in zip(xs, ys, marks):
            if is_oom:
                ax.text(x, y, "OOM", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_xticks([gi + 0.4 - width / 2 for gi in range(len(groups))])
    ax.set_xticklabels(groups, rotation=20 if len(groups) > 3 else 0, ha="right" if len(groups) > 3 else "center")
    words = latency_words(records)
    prefix = "median " if varying or repeated else ""
    ax.set_ylabel(f"{prefix}per-iteration latency, {words} ({unit})")
    if max(medians.values()) / max(1e-300, min(medians.values())) > 20:
        ax.set_yscale("log")
    over = [f"{path} ({plural(n, 'value', 'values')})" for path, n in varying.items()]
    if repeated:
        over.append("repetitions")
    title = title_of(f"{'Median latency' if over else 'Latency'} per strategy", records)
    if over:
        title += "\nMedians over the sweep of " + " and ".join(over)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    legend_outside(fig, [ax])
    save(fig, out_dir, "latency_by_model", written, described)


def plot_cost_models(records, styles, out_dir, written, described):
    """When strategies run in pairs labelled <name>-list and <name>-flow (searching the
    contention-free list schedule and the flow model), one panel per case: each pair's latency
    (SimGrid's where it ran) relative to the best placement of the case that fits in memory,
    list beside flow."""
    labels = unique(r["strategy"] for r in records)
    pairs = [l[:-5] for l in labels if l.endswith("-list") and l[:-5] + "-flow" in labels]
    if not pairs:
        return
    named = named_axes(records)
    cases = unique(group_key(r, False, named) for r in records)
    latency = {(group_key(r, False, named), r["strategy"]): r["latency"] for r in records if ok(r)}
    # The best of a case is its best placement that fits in memory (an OOM single-device is no answer).
    fitting = {(group_key(r, False, named), r["strategy"]) for r in records if ok(r) and not r.get("oom")}
    fig, axes = panels(len(cases), width=4.6, height=3.0)
    for ax, case in zip(axes, cases):
        best = min((v for (c, s), v in latency.items() if c == case and (c, s) in fitting), default=None)
        if not best:
            ax.set_visible(False)
            continue
        for k, kind in enumerate(("list", "flow")):
            xs = [i + (k - 0.5) * 0.38 for i, p in enumerate(pairs) if (case, f"{p}-{kind}") in latency]
            ys = [latency[(case, f"{p}-{kind}")] / best for p in pairs if (case, f"{p}-{kind}") in latency]
            ax.bar(xs, ys, 0.38, label=f"cost_model: {kind}", color=("#9e9e9e", "#1f77b4")[k])
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_xticks(range(len(pairs)))
        ax.set_xticklabels(pairs, rotation=30, ha="right", fontsize=8)
        ax.set_title(case, fontsize=9)
        if max(ys or [1]) > 5:
            ax.set_yscale("log")
        ax.set_ylabel(f"latency / best of the case ({latency_words(records)})", fontsize=8)
    title = "Searching the contention-free list schedule or the flow model: latency relative to the best placement of each case that fits in memory (1 = best)"
    layout_under_title(fig, "\n".join(textwrap.wrap(title, 90)))
    handles, legend_labels = axes[0].get_legend_handles_labels()
    right = max(ax.get_position().x1 for ax in axes if ax.get_visible())
    fig.legend(handles, legend_labels, loc="upper left", bbox_to_anchor=(right + 0.01, 0.95), fontsize=8, frameon=False)
    save(fig, out_dir, "cost_models", written, described)


def numeric_params(records, name_part):
    keys = []
    for r in records:
        for k, v in r.get("params", {}).items():
            if name_part in k.lower() and isinstance(v, (int, float)) and k not in keys:
                keys.append(k)
    return keys


def bandwidth_unit(texts, values):
    """The unit the swept values were written in (Gbps -> "Gb/s"), and bytes per second in one."""
    suffixes = set()
    for t in texts:
        m = re.fullmatch(r"\s*[-+0-9.eE]+\s*([A-Za-z/]+)\s*", str(t))
        suffixes.add(m.group(1) if m else "")
    if len(suffixes) == 1:
        suffix = suffixes.pop()
        bits = len(suffix) > 1 and suffix[1] == "b" or suffix.lower().endswith("bit/s")
        for spellings, shown, factor in BANDWIDTH_UNITS:
            if suffix.lower() in spellings and (shown[1] == "b") == bits:
                return shown, factor
    top = max(values)
    return ("GB/s", 1e9) if top >= 1e9 else ("MB/s", 1e6)


def bandwidth_words(path):
    last = path.split(".")[-1]
    return BANDWIDTH_WORDS.get(last, last.replace("_", " "))


def tick_text(x):
    return f"{x:g}"


def plot_latency_vs_bandwidth(records, styles, out_dir, written, described):
    keys = numeric_params(records, "bandwidth")
    if not keys:
        status("latency_vs_bandwidth: no bandwidth was swept, skipped")
        return
    key = keys[0]
    good = [r for r in records if ok(r) and key in r.get("params", {})]
    if not good:
        status("latency_vs_bandwidth: no successful point, skipped")
        return
    shown, factor = bandwidth_unit([r.get("params_text", {}).get(key, "") for r in good], [r["params"][key] for r in good])

    def panel_of(r):
        rest = [f"{k}={r.get('params_text', {}).get(k, v)}" for k, v in r.get("params", {}).items()
                if k not in IGNORED_PARAMS and k != key]
        return ", ".join([r.get("graph", "?")] + ([plural(r.get("gpus"), "GPU", "GPUs")]
                                                   if len({x.get("gpus") for x in good}) > 1 else []) + rest)

    names = unique(panel_of(r) for r in good)
    _, repeated = aggregated(good, lambda r: (panel_of(r), r["params"][key]))
    unit, scale = time_unit(r["latency"] for r in good)
    fig, axes = panels(len(names))
    swept = sorted({r["params"][key] for r in good})
    for ax, name in zip(axes, names):
        lines = defaultdict(lambda: defaultdict(list))
        for r in good:
            if panel_of(r) == name:
                lines[r["strategy"]][r["params"][key]].append(r["latency"])
        for s in [s for s in styles if s in lines]:
            xs = sorted(lines[s])
            ax.plot([x / factor for x in xs], [median(lines[s][x]) / scale for x in xs], label=s, color=styles[s][0],
                    marker=styles[s][1])
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator([x / factor for x in swept]))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([tick_text(x / factor) for x in swept])
        ax.set_xlabel(f"{bandwidth_words(key)} ({shown})")
        ys = [y for ln in ax.get_lines() for y in ln.get_ydata()]
        if ys and max(ys) / max(1e-300, min(ys)) > 20:
            ax.set_yscale("log")
        ax.set_ylabel(f"{'median ' if repeated else ''}per-iteration latency, {latency_words(good)} ({unit})")
        ax.set_title(name, fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
    layout_under_title(fig, title_of("Latency against " + bandwidth_words(key), good))
    handles, labels = OrderedDict(), []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    labels = [s for s in styles if s in handles]
    legend_outside(fig, axes, [handles[s] for s in labels], labels)
    save(fig, out_dir, "latency_vs_bandwidth", written, described)


def plot_search_time_vs_gpus(records, styles, out_dir, written, described):
    good = [r for r in records if ok(r) and r.get("search_time") is not None]
    gpus = sorted({r.get("gpus") for r in good})
    if len(gpus) < 2:
        status("search_time_vs_gpus: one GPU count only, skipped")
        return
    names = unique(r.get("graph", "?") for r in good)
    varying, repeated = aggregated(good, lambda r: (r.get("graph"), r["gpus"], r["strategy"]))
    unit, scale = time_unit([r["search_time"] for r in good], log=True)
    fig, axes = panels(len(names))
    for ax, name in zip(axes, names):
        lines = defaultdict(lambda: defaultdict(list))
        for r in good:
            if r.get("graph", "?") == name:
                lines[r["strategy"]][r["gpus"]].append(r["search_time"])
        for s in [s for s in styles if s in lines]:
            xs = sorted(lines[s])
            ax.plot(xs, [max(median(lines[s][x]), 1e-9) / scale for x in xs], label=s, color=styles[s][0],
                    marker=styles[s][1])
        ax.xaxis.set_major_locator(FixedLocator(gpus))  # whole GPU counts: the ones in the sweep
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([str(g) for g in gpus])
        ax.set_xlabel("GPUs")
        ax.set_ylabel(f"{'median ' if varying or repeated else ''}placement search time ({unit})")
        ax.set_yscale("log")
        ax.set_title(name, fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
    title = title_of("Search time against GPU count", good)
    over = [f"{path} ({plural(n, 'value', 'values')})" for path, n in varying.items()] + (["repetitions"] if repeated else [])
    if over:
        title += "\nMedians over the sweep of " + " and ".join(over)
    layout_under_title(fig, title)
    handles = OrderedDict()
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    labels = [s for s in styles if s in handles]
    legend_outside(fig, axes, [handles[s] for s in labels], labels)
    save(fig, out_dir, "search_time_vs_gpus", written, described)


MAX_LINK_TRACKS = 16


def merged(intervals):
    out = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def plot_gantt(records, styles, out_dir, written, described, wanted):
    candidates = [r for r in records if ok(r) and r.get("trace_file") and os.path.exists(r["trace_file"])]
    if wanted:
        candidates = [r for r in candidates if r["strategy"] == wanted]
    if not candidates:
        status("gantt: no trace file to draw" + (f" for strategy {wanted}" if wanted else "") + ", skipped")
        return
    r = min(candidates, key=lambda x: x["latency"])
    with open(r["trace_file"]) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    process = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            process[e["args"].get("name")] = e["pid"]
    gpu_pid, link_pid = process.get("GPUs"), process.get("links")
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e.get("pid"), e["tid"])] = e["args"]["name"]
    gpu_bars = defaultdict(list)
    link_open, link_spans = {}, defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("pid") == gpu_pid and e.get("dur", 0) > 0:
            gpu_bars[e["tid"]].append((e["ts"], e["dur"]))
        elif e.get("pid") == link_pid and e.get("ph") == "b":
            link_open[(e["tid"], e.get("id"))] = e["ts"]
        elif e.get("pid") == link_pid and e.get("ph") == "e" and (e["tid"], e.get("id")) in link_open:
            start = link_open.pop((e["tid"], e.get("id")))
            if e["ts"] > start:
                link_spans[e["tid"]].append((start, e["ts"]))
    all_gpus = sorted(t for (p, t) in names if p == gpu_pid) or sorted(gpu_bars)
    busy_gpus = [t for t in all_gpus if gpu_bars.get(t)]  # GPUs that do nothing are left out
    idle = len(all_gpus) - len(busy_gpus)
    links = {t: merged(spans) for t, spans in link_spans.items()}
    busy_time = {t: sum(b - a for a, b in spans) for t, spans in links.items()}
    shown_links = sorted(sorted(links, key=lambda t: -busy_time[t])[:MAX_LINK_TRACKS])
    hidden_links = len(links) - len(shown_links)
    unit, scale = time_unit([r["latency"]])
    scale_us = scale * 1e6  # trace timestamps are in microseconds
    rows = [("gpu", t) for t in busy_gpus] + [("link", t) for t in shown_links]
    # A bar at least 0.2% of the iteration wide, so that a GPU or link busy for a moment shows.
    least = 0.002 * r["latency"] * 1e6 / scale_us
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.32 * len(rows)))
    colour = styles[r["strategy"]][0]
    for row, (kind, tid) in enumerate(rows):
        if kind == "gpu":
            bars = [(ts / scale_us, max(dur / scale_us, least)) for ts, dur in gpu_bars[tid]]
            ax.broken_barh(bars, (row - 0.4, 0.8), facecolors=colour, edgecolor="none")
        else:
            bars = [(a / scale_us, max((b - a) / scale_us, least)) for a, b in links[tid]]
            ax.broken_barh(bars, (row - 0.3, 0.6), facecolors="#7f7f7f", edgecolor="none")
    if busy_gpus and shown_links:
        ax.axhline(len(busy_gpus) - 0.5, color="black", linewidth=0.6)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([names.get((gpu_pid if k == "gpu" else link_pid, t), str(t)) for k, t in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(f"time in the iteration ({unit})")
    left_out = []
    if idle:
        left_out.append(f"{plural(idle, 'idle GPU', 'idle GPUs')}")
    if hidden_links:
        left_out.append(f"{plural(hidden_links, 'less busy link', 'less busy links')}")
    ax.set_ylabel("GPUs (compute), then links (transfers)" if shown_links else "GPUs (compute)", fontsize=8)
    point = [r.get("graph", "?"), plural(r.get("gpus"), "GPU", "GPUs")]
    point += [f"{k}={r.get('params_text', {}).get(k, v)}" for k, v in r.get("params", {}).items()
              if k not in {"graph", "strategy", "cluster.gpus"}]
    source = {"simgrid": "SimGrid", "evaluator": "evaluator"}.get(r.get("latency_source"), "")
    title = (f"{r['strategy']} at the point {', '.join(point)}: "
             f"{source + ' ' if source else ''}latency {r['latency'] / scale:.4g} {unit}")
    if left_out:
        title += " (not shown: " + ", ".join(left_out) + ")"
    ax.set_title(title_of("Timeline", [r]) + "\n" + "\n".join(textwrap.wrap(title, 90)), fontsize=9)
    save(fig, out_dir, "gantt", written, described)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("records", help="records.json written by `placesim report`")
    ap.add_argument("--out", required=True, help="folder for the PNG and SVG files")
    ap.add_argument("--gantt-strategy", default="", help="draw this strategy's timeline (default: the fastest)")
    ap.add_argument("--describe", default="", help="also write what each figure shows to this JSON file")
    args = ap.parse_args()
    with open(args.records) as f:
        records = json.load(f)
    if not isinstance(records, list):
        sys.exit(f"{args.records}: expected a JSON array of records")
    records.sort(key=lambda r: r.get("index", 0))  # the scenario's order (a stable sort)
    os.makedirs(args.out, exist_ok=True)
    styles = strategy_styles(records)
    written, described = [], OrderedDict()
    plot_latency_by_model(records, styles, args.out, written, described)
    plot_cost_models(records, styles, args.out, written, described)
    plot_latency_vs_bandwidth(records, styles, args.out, written, described)
    plot_search_time_vs_gpus(records, styles, args.out, written, described)
    plot_gantt(records, styles, args.out, written, described, args.gantt_strategy)
    for w in written:
        status(f"wrote {w}")
    if args.describe:
        with open(args.describe, "w") as f:
            json.dump({"styles": {s: {"color": c, "marker": m} for s, (c, m) in styles.items()}, "figures": described},
                      f, indent=1)


if __name__ == "__main__":
    main()
