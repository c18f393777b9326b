#!/usr/bin/env python3
"""Plots of a placesim run, written by `placesim report` (which calls this script).

Input: the records.json that `placesim report` writes, in the scenario's order (one normalised
record per point: graph, cluster, strategy, gpus, params and params_text (the swept values, in SI
units and as written), latency and latency_source (simgrid or evaluator), search_time, status (ok,
oom, infeasible, failed), gpus_used, answer_note, trace_file, and published: the papers' numbers
the scenario's `report.published` gives for the point). Output, as PNG and SVG in --out:
  latency_by_model      per-iteration latency per strategy per model (and GPU count); the median
                        over the rest of the sweep and over repetitions, and the plot says so
  cost_models           strategies run in <name>-list / <name>-flow pairs: each pair's latency over
                        the best of its case, one panel per case
  latency_vs_bandwidth  latency against the swept bandwidth, one panel per model (and other swept
                        values): log axis, ticks at the swept values, in the unit they were written
  search_time_vs_gpus   placement search time against the GPU count, one panel per model
  search_time_by_model  search time per strategy per model, where the GPU count is not swept
  slowdown              a scenario of jobs on one cluster: each job's slowdown (shared / alone) per
                        allocation policy, one panel per other swept value; linear axis from 0, a
                        line at 1 (no slowdown). Such a scenario draws this plot and the next only
  iteration_by_allocation  the same bars, each job's shared iteration over its best alone one
                        under any policy: what the allocation costs the job alone counts too
  gantt                 the timeline of one point, read from its Chrome trace: GPU tracks, then
                        link tracks; idle GPUs left out. Which point: see gantt_point
Every plot names the models and the cluster (a title is filled in, or the part that cannot be is
left out), says whose latency it shows (SimGrid's or the evaluator's) and draws each strategy in one
colour and one marker, from the colour-blind-safe Okabe-Ito palette, in the order the strategies
come in the scenario: the same in every plot. A placement over GPU memory is drawn hatched and
labelled OOM; a point without a placement (infeasible: nothing fits; failed) is labelled so where
its bar or marker would be; a value that is another strategy's answer (a portfolio's winner, a
memory fallback: the record's answer_note) says whose. Where the scenario gives a paper's
numbers, they are drawn beside placesim's as hollow markers (a number) or "published: OOM", named
in the legend by their source. The legend lies outside the data. A plot whose axis does not vary in
the records is skipped and the script says so. Status lines go to stderr. --describe FILE writes
what each figure holds (titles, labels, scales, ticks, texts, the series' colours, markers and
hatches, the points' labels, the published markers, whether the legend lies outside the axes; the
strategies in the scenario's order) as JSON, for tests. Needs Debian's python3-matplotlib
(tools/install-deps.sh installs it).
"""
import argparse
import gzip
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
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402
from matplotlib.text import Annotation  # noqa: E402
from matplotlib.transforms import blended_transform_factory, offset_copy  # noqa: E402

# Okabe and Ito's colour-blind-safe palette (yellow last: it is faint on white), and as many
# markers; a strategy's style is its position in the scenario: colour k mod 8, marker k mod 12, so
# the first 24 strategies all differ in colour or marker, and the first 8 in colour alone.
PALETTE = ["#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#000000", "#f0e442"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p"]
OOM_HATCH = "///"
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
VALUE_WORDS = {"latency": "per-iteration latency", "search_time": "placement search time"}


def status(text):
    print(f"plot: {text}", file=sys.stderr)


def point_status(r):
    """ok, oom, infeasible or failed (records of older reports: from failed and oom)."""
    if r.get("status"):
        return r["status"]
    return "failed" if r.get("failed") else "oom" if r.get("oom") else "ok"


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
    """label -> (colour, marker), from the label's position in the scenario (the records are in the
    scenario's order): the same in every plot of the report."""
    styles = OrderedDict()
    for k, label in enumerate(unique(r["strategy"] for r in records)):
        styles[label] = (PALETTE[k % len(PALETTE)], MARKERS[k % len(MARKERS)])
    return styles


def latency_words(records):
    """Whose latency the records' `latency` is: "SimGrid", "evaluator", or both."""
    sources = {r.get("latency_source") for r in records if ok(r)}
    if sources == {"simgrid"}:
        return "SimGrid"
    if sources == {"evaluator"}:
        return "evaluator"
    if sources == {"flow"}:
        return "flow engine"
    if sources == {"estimate"}:
        return "NEST's estimate"
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


NUMBER_WORD = re.compile(r"^(\D*?)(\d+(?:\.\d+)?)(\D*)$")


def number_text(x):
    return f"{x:g}"


def column_text(column):
    """One word standing for the differing words of a column, or None: numbers with the same text
    around them as a list (2/4/6 GPUs) or a range (2 to 64), a word and its plural as the plural,
    up to three other words as a/b/c."""
    words = unique(column)
    parts = [NUMBER_WORD.match(w) for w in words]
    if all(parts) and len({(m.group(1), m.group(3)) for m in parts}) == 1:
        numbers = sorted({float(m.group(2)) for m in parts})
        inner = "/".join(number_text(x) for x in numbers) if len(numbers) <= 4 else \
            f"{number_text(numbers[0])} to {number_text(numbers[-1])}"
        return parts[0].group(1) + inner + parts[0].group(3)
    stems = {w[:-1] if w.endswith("s") else w for w in words}
    if len(stems) == 1 and len(words) == 2:
        return max(words, key=len)
    if len(words) <= 3:
        return "/".join(words)
    return None


def common_text(texts):
    """One description for several, filled in: the words they share, and where they differ what
    column_text makes of the differing words; None when that cannot be done (the texts have
    different shapes): the caller leaves the part out. Never "..."."""
    texts = unique(t for t in texts if t)
    if not texts:
        return ""
    if len(texts) == 1:
        return texts[0]
    words = [t.split(" ") for t in texts]
    if len({len(w) for w in words}) != 1:
        return None
    out = []
    for column in zip(*words):
        word = column[0] if len(set(column)) == 1 else column_text(column)
        if word is None:
            return None
        out.append(word)
    return " ".join(out)


def title_of(what, records):
    """"<what>: <models> on <cluster>", wrapped; with several clusters that no one description
    covers, "on N clusters"."""
    models = ", ".join(unique(r.get("graph", "?") for r in records))
    clusters = unique(r.get("cluster", "") for r in records if r.get("cluster"))
    cluster = common_text(clusters)
    if cluster is None:
        cluster = plural(len(clusters), "cluster", "clusters")
    text = f"{what}: {models}" + (f" on {cluster}" if cluster else "")
    return "\n".join(textwrap.wrap(text, 80))


def legend_outside(fig, axes, handles, labels, title="strategy"):
    """The legend to the right of every axes, outside the data."""
    if not handles:
        return
    right = max(ax.get_position().x1 for ax in axes if ax.get_visible())
    top = max(ax.get_position().y1 for ax in axes if ax.get_visible())
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(right + 0.01, top), fontsize=8, frameon=False,
               title=title, title_fontsize=8)


def strategy_handles(styles, shown, with_lines=False):
    """Legend entries of the strategies drawn, in the scenario's order: colour and marker."""
    labels = [s for s in styles if s in shown]
    handles = [Line2D([], [], color=styles[s][0], marker=styles[s][1], markersize=7, markeredgecolor="black",
                      markeredgewidth=0.5, linestyle="-" if with_lines else "none") for s in labels]
    return handles, labels


def extra_handles(marks):
    """Legend entries for what the figure marks besides the strategies: hatched OOM bars and the
    papers' numbers (one entry per source)."""
    handles, labels = [], []
    if marks.get("oom_bar"):
        handles.append(Patch(facecolor="white", edgecolor="black", hatch=OOM_HATCH))
        labels.append("hatched: OOM (does not fit\nin GPU memory)")
    for source in marks.get("published", []):
        handles.append(Line2D([], [], marker="o", markerfacecolor="white", markeredgecolor="black", linestyle="none",
                              markersize=7))
        labels.append("\n".join(textwrap.wrap("hollow: published, " + source, 34)))
    return handles, labels


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


def save(fig, out_dir, name, written, described, formats):
    fig.canvas.draw()
    described[name] = describe(fig)
    for ext in formats:
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
        "legends": [{"title": lg.get_title().get_text(), "labels": [t.get_text() for t in lg.get_texts()],
                     "outside_axes": not any(overlaps(lg.get_window_extent(renderer), b) for b in boxes)}
                    for lg in legends],
        "axes": [],
    }
    for ax in axes:
        lines = [{"label": ln.get_label(), "color": to_hex(ln.get_color()), "marker": ln.get_marker(),
                  "x": [float(x) for x in ln.get_xdata()]}
                 for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        bars = [{"label": c.get_label(), "color": to_hex(c.patches[0].get_facecolor()) if c.patches else None,
                 "heights": [float(p.get_height()) for p in c.patches],
                 "x": [round(float(p.get_x() + p.get_width() / 2), 6) for p in c.patches],
                 "hatches": [p.get_hatch() or "" for p in c.patches]}
                for c in ax.containers if not c.get_label().startswith("_")]
        out["axes"].append({
            "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
            "xscale": ax.get_xscale(), "yscale": ax.get_yscale(), "xlim": [float(v) for v in ax.get_xlim()],
            "xticks": [float(t) for t in ax.get_xticks()],
            "xticklabels": [t.get_text() for t in ax.get_xticklabels()],
            "minor_xticks": [float(t) for t in ax.xaxis.get_minorticklocs()],
            "yticklabels": [t.get_text() for t in ax.get_yticklabels()],
            "lines": lines, "bars": bars,
            "texts": [{"text": t.get_text(), "x": round(float(t.xy[0] if isinstance(t, Annotation) else t.get_position()[0]), 6)}
                      for t in ax.texts],
            # What the plot marked: each point's status label, and the papers' numbers it drew.
            "marks": getattr(ax, "placesim_marks", []),
            "published": getattr(ax, "placesim_published", []),
        })
    return out


def note_mark(ax, **mark):
    mark["x"] = round(mark["x"], 6)
    if not hasattr(ax, "placesim_marks"):
        ax.placesim_marks = []
    ax.placesim_marks.append(mark)


def note_published(ax, **mark):
    mark["x"] = round(mark["x"], 6)
    if not hasattr(ax, "placesim_published"):
        ax.placesim_published = []
    ax.placesim_published.append(mark)


def label_missing(ax, x, strategies, kinds, colours):
    """Points without a value (infeasible: nothing fits; failed) at x: a cross in each one's colour
    at the bottom of the axes, side by side, under their kinds upright, where the bar or marker
    would be."""
    transform = blended_transform_factory(ax.transData, ax.transAxes)
    for j, (s, kind, colour) in enumerate(zip(strategies, kinds, colours)):
        shifted = offset_copy(transform, fig=ax.figure, x=(j - (len(strategies) - 1) / 2) * 6, units="points")
        ax.plot([x], [0.0], marker="x", color=colour, markersize=6, transform=shifted, clip_on=False, label="_" + kind)
        note_mark(ax, strategy=s, x=float(x), kind=kind, text=kind)
    ax.text(x, 0.04, ", ".join(unique(kinds)), transform=transform, rotation=90, ha="center", va="bottom", fontsize=7,
            color="black")


def cell_status_text(rs):
    """What a cell of records holds besides values: "OOM", "OOM 2/3", "1/3 infeasible", ...; the
    kinds of the points without a value when no point has one."""
    kinds = [point_status(r) for r in rs]
    n = len(kinds)
    ran = [k for k in kinds if k in ("ok", "oom")]
    words = []
    oom = kinds.count("oom")
    if oom:
        words.append("OOM" if oom == len(ran) and len(ran) == n else f"OOM {oom}/{n}")
    for kind in ("infeasible", "failed", "timed out"):
        k = kinds.count(kind)
        if k and ran:
            words.append(f"{k}/{n} {kind}")
    # Whose answer the value is when not the strategy's own (a portfolio's winner, a memory fallback).
    notes = unique(r.get("answer_note") for r in rs if point_status(r) in ("ok", "oom") and r.get("answer_note"))
    noted = sum(1 for r in rs if point_status(r) in ("ok", "oom") and r.get("answer_note"))
    if len(notes) == 1 and noted == len(ran):
        words.append(notes[0])
    elif notes:
        words.append(f"{noted}/{len(ran)} another's answer")
    # No point ran: the kind they share (infeasible, failed, or any other status a record gives).
    missing = None if ran else (kinds[0] if len(set(kinds)) == 1 else "failed")
    return ", ".join(words), bool(ran) and oom == len(ran), missing


def mark_kind(text):
    """What a label above a value says, for --describe: oom, partial (some points did not run) or
    note (the value is another strategy's answer)."""
    if "OOM" in text:
        return "oom"
    if "infeasible" in text or "failed" in text or "timed out" in text:
        return "partial"
    return "note"


def published_of(rs, value):
    """The papers' numbers of `value` among the records, once each: [(source, number, text)]."""
    out = OrderedDict()
    for r in rs:
        for p in r.get("published", []):
            if p.get("value") != value:
                continue
            source = ", ".join(x for x in (p.get("source"), p.get("table")) if x)
            if p.get("note"):
                source += f" ({p['note']})"
            out.setdefault((source, p.get("text")), (source, p.get("number"), p.get("text")))
    return list(out.values())


def draw_published(ax, x, strategy, style, pubs, scale, marks, on_bar):
    """The papers' numbers at x: a hollow marker of the strategy's shape (black-edged over bars,
    edged in its colour on lines), or "published: OOM" from the top of the axes."""
    for source, number, text in pubs:
        if source not in marks.setdefault("published", []):
            marks["published"].append(source)
        if number is None:
            transform = blended_transform_factory(ax.transData, ax.transAxes)
            ax.text(x, 0.97, "published: OOM", transform=transform, rotation=90, ha="center", va="top", fontsize=6.5,
                    color="dimgray", style="italic", bbox=dict(facecolor="white", alpha=0.8, edgecolor="none", pad=1))
            note_published(ax, strategy=strategy, x=float(x), y=None, text=text, source=source)
            continue
        ax.plot([x], [number / scale], linestyle="none", marker=style[1], markersize=8, markerfacecolor="white",
                markeredgecolor="black" if on_bar else style[0], markeredgewidth=1.4, zorder=5, label="_published")
        note_published(ax, strategy=strategy, x=float(x), y=float(number / scale), text=text, source=source)


def value_of(r, value):
    return r.get("latency") if value == "latency" else r.get(value)


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


MAX_BAR_FIGURE_WIDTH = 40.0  # inches: beyond, the bars get thinner


def plot_bars(records, styles, out_dir, written, described, formats, value, name):
    """Bars of `value` (latency or search_time) per strategy, grouped by model (GPU count, named
    clusters): the median over the rest of the sweep and over repetitions. OOM hatched and
    labelled; infeasible and failed points labelled where their bar would be; the papers' numbers
    as hollow markers."""
    gpu_counts = unique(r.get("gpus") for r in records)
    named = named_axes(records)
    with_gpus = len(gpu_counts) > 1 and not named  # a named cluster says its GPU count itself
    groups = unique(group_key(r, with_gpus, named) for r in records)
    strategies = unique(r["strategy"] for r in records)
    cells = defaultdict(list)
    for r in records:
        cells[(group_key(r, with_gpus, named), r["strategy"])].append(r)
    values = {k: [value_of(r, value) for r in rs if point_status(r) in ("ok", "oom") and value_of(r, value) is not None]
              for k, rs in cells.items()}
    values = {k: v for k, v in values.items() if v}
    if not values:
        status(f"{name}: no point with a {value}, skipped")
        return
    varying, repeated = aggregated([r for r in records if ok(r)],
                                   lambda r: (group_key(r, with_gpus, named), r["strategy"]))
    medians = {k: median(v) for k, v in values.items()}
    pubs = {k: published_of(rs, value) for k, rs in cells.items()}
    shown = list(medians.values()) + [n for ps in pubs.values() for _, n, _ in ps if n]
    positive = [v for v in shown if v > 0]
    log = bool(positive) and max(positive) / min(positive) > 20
    unit, scale = time_unit(shown, log=log)
    width_in = min(MAX_BAR_FIGURE_WIDTH, max(6.0, 0.28 * len(groups) * len(strategies) + 1.5))
    fig, ax = plt.subplots(figsize=(width_in, 4.2))
    if log:
        ax.set_yscale("log")
    width = 0.8 / max(1, len(strategies))
    marks = {}
    for si, s in enumerate(strategies):
        colour, marker = styles[s]
        xs, ys, hatches = [], [], []
        for gi, g in enumerate(groups):
            if (g, s) not in cells:
                continue
            x = gi + si * width
            text, all_oom, missing = cell_status_text(cells[(g, s)])
            if (g, s) in medians:
                y = max(medians[(g, s)], 1e-12) / scale
                xs.append(x)
                ys.append(y)
                hatches.append(OOM_HATCH if all_oom else "")
                if text:
                    ax.annotate(text, (x, y), xytext=(0, 6), textcoords="offset points", ha="center", va="bottom",
                                fontsize=7, rotation=90)
                    note_mark(ax, strategy=s, x=float(x), kind=mark_kind(text), text=text)
            elif missing:
                label_missing(ax, x, [s], [missing], [colour])
            draw_published(ax, x, s, styles[s], pubs.get((g, s), []), scale, marks, on_bar=True)
        if xs:
            container = ax.bar(xs, ys, width, label=s, color=colour, edgecolor="black", linewidth=0.4)
            for patch, hatch in zip(container.patches, hatches):
                if hatch:
                    patch.set_hatch(hatch)
                    marks["oom_bar"] = True
            ax.plot(xs, ys, linestyle="none", marker=marker, color=colour, markersize=5, markeredgecolor="black",
                    markeredgewidth=0.4, label="_" + s)
    # Every slot in view, a point without a bar (labelled at the bottom) too.
    ax.set_xlim(-width / 2 - 0.1, len(groups) - 1 + (len(strategies) - 0.5) * width + 0.1)
    ax.set_xticks([gi + 0.4 - width / 2 for gi in range(len(groups))])
    ax.set_xticklabels(groups, rotation=20 if len(groups) > 3 else 0, ha="right" if len(groups) > 3 else "center")
    prefix = "median " if varying or repeated else ""
    words = f", {latency_words(records)}" if value == "latency" else ""
    ax.set_ylabel(f"{prefix}{VALUE_WORDS[value]}{words} ({unit})")
    over = [f"{path} ({plural(n, 'value', 'values')})" for path, n in varying.items()]
    if repeated:
        over.append("repetitions")
    what = "latency" if value == "latency" else "search time"
    title = title_of(f"{'Median ' + what if over else what.capitalize()} per strategy", records)
    if over:
        title += "\nMedians over the sweep of " + " and ".join(over)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    handles, labels = strategy_handles(styles, strategies)
    more_handles, more_labels = extra_handles(marks)
    legend_outside(fig, [ax], handles + more_handles, labels + more_labels)
    save(fig, out_dir, name, written, described, formats)


def plot_cost_models(records, styles, out_dir, written, described, formats):
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
    by_cell = {(group_key(r, False, named), r["strategy"]): r for r in records}
    latency = {k: r["latency"] for k, r in by_cell.items() if ok(r)}
    # The best of a case is its best placement that fits in memory (an OOM single-device is no answer).
    fitting = {k for k, r in by_cell.items() if ok(r) and point_status(r) == "ok"}
    fig, axes = panels(len(cases), width=4.6, height=3.0)
    colours = ("#999999", PALETTE[0])  # grey and blue: apart in lightness as in hue
    marks = {}
    for ax, case in zip(axes, cases):
        best = min((v for k, v in latency.items() if k[0] == case and k in fitting), default=None)
        if not best:
            ax.set_visible(False)
            continue
        ys = []
        for k, kind in enumerate(("list", "flow")):
            xs, heights, hatches = [], [], []
            for i, p in enumerate(pairs):
                x, r = i + (k - 0.5) * 0.38, by_cell.get((case, f"{p}-{kind}"))
                if r is None:
                    continue
                if (case, f"{p}-{kind}") in latency:
                    xs.append(x)
                    heights.append(latency[(case, f"{p}-{kind}")] / best)
                    hatches.append(OOM_HATCH if point_status(r) == "oom" else "")
                    if point_status(r) == "oom":
                        ax.annotate("OOM", (x, heights[-1]), xytext=(0, 3), textcoords="offset points", ha="center",
                                    va="bottom", fontsize=7, rotation=90)
                        note_mark(ax, strategy=f"{p}-{kind}", x=float(x), kind="oom", text="OOM")
                else:
                    label_missing(ax, x, [f"{p}-{kind}"], [point_status(r)], [colours[k]])
            container = ax.bar(xs, heights, 0.38, label=f"cost_model: {kind}", color=colours[k], edgecolor="black",
                               linewidth=0.4)
            for patch, hatch in zip(container.patches, hatches):
                if hatch:
                    patch.set_hatch(hatch)
                    marks["oom_bar"] = True
            ys += heights
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_xlim(-0.6, len(pairs) - 0.4)  # every pair in view, those without a bar too
        ax.set_xticks(range(len(pairs)))
        ax.set_xticklabels(pairs, rotation=30, ha="right", fontsize=8)
        ax.set_title(case, fontsize=9)
        if max(ys or [1]) > 5:
            ax.set_yscale("log")
        ax.set_ylabel(f"latency / best of the case ({latency_words(records)})", fontsize=8)
    title = "Searching the contention-free list schedule or the flow model: latency relative to the best placement of each case that fits in memory (1 = best)"
    layout_under_title(fig, "\n".join(textwrap.wrap(title, 90)))
    visible = [ax for ax in axes if ax.get_visible()]
    handles = [Patch(facecolor=c, edgecolor="black", linewidth=0.4) for c in colours]
    legend_labels = ["cost_model: list", "cost_model: flow"]
    more_handles, more_labels = extra_handles(marks)
    legend_outside(fig, visible or axes, handles + more_handles, legend_labels + more_labels, title="search")
    save(fig, out_dir, "cost_models", written, described, formats)


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


def draw_lines(ax, styles, points, value, scale, marks):
    """One line per strategy through the medians of `points` ({strategy: {x: [records]}}), in the
    scenario's order: OOM points labelled, points without a value labelled at the bottom, the papers'
    numbers as hollow markers."""
    missing_at = defaultdict(list)
    last = max((x for s in points for x in points[s]), default=None)
    for s in [s for s in styles if s in points]:
        colour, marker = styles[s]
        xs, ys = [], []
        for x in sorted(points[s]):
            rs = points[s][x]
            v = [value_of(r, value) for r in rs if point_status(r) in ("ok", "oom") and value_of(r, value) is not None]
            text, _, missing = cell_status_text(rs)
            if v:
                xs.append(x)
                ys.append(max(median(v), 1e-12) / scale)
                if text:  # left of the point at the right edge, so that it stays in the axes
                    ax.annotate(text, (x, ys[-1]), textcoords="offset points", xytext=(-4 if x == last else 4, 4),
                                ha="right" if x == last else "left", fontsize=7, color=colour)
                    note_mark(ax, strategy=s, x=float(x), kind=mark_kind(text), text=text)
            elif missing:
                missing_at[x].append((s, missing))
                if xs:  # the line breaks there: no value is drawn where there is none
                    xs.append(x)
                    ys.append(float("nan"))
            draw_published(ax, x, s, styles[s], published_of(rs, value), scale, marks, on_bar=False)
        if any(y == y for y in ys):
            ax.plot(xs, ys, label=s, color=colour, marker=marker)
    for x, missing in missing_at.items():
        label_missing(ax, x, [s for s, _ in missing], [k for _, k in missing], [styles[s][0] for s, _ in missing])


def plot_latency_vs_bandwidth(records, styles, out_dir, written, described, formats):
    keys = numeric_params(records, "bandwidth")
    if not keys:
        status("latency_vs_bandwidth: no bandwidth was swept, skipped")
        return
    key = keys[0]
    swept_records = [r for r in records if key in r.get("params", {})]
    good = [r for r in swept_records if ok(r)]
    if not good:
        status("latency_vs_bandwidth: no successful point, skipped")
        return
    shown, factor = bandwidth_unit([r.get("params_text", {}).get(key, "") for r in good], [r["params"][key] for r in good])
    many_gpus = len({x.get("gpus") for x in swept_records}) > 1

    def panel_of(r):
        rest = [f"{k}={r.get('params_text', {}).get(k, v)}" for k, v in r.get("params", {}).items()
                if k not in IGNORED_PARAMS and k != key]
        return ", ".join([r.get("graph", "?")] + ([plural(r.get("gpus"), "GPU", "GPUs")] if many_gpus else []) + rest)

    names = unique(panel_of(r) for r in swept_records)
    _, repeated = aggregated(good, lambda r: (panel_of(r), r["params"][key]))
    unit, scale = time_unit(r["latency"] for r in good)
    fig, axes = panels(len(names))
    swept = sorted({r["params"][key] for r in swept_records})
    marks = {}
    for ax, name in zip(axes, names):
        points = defaultdict(lambda: defaultdict(list))
        for r in swept_records:
            if panel_of(r) == name:
                points[r["strategy"]][r["params"][key] / factor].append(r)
        ax.set_xscale("log")
        draw_lines(ax, styles, points, "latency", scale, marks)
        # Every swept value in view, those without a value (labelled at the bottom) too.
        ratio = (swept[-1] / swept[0]) ** 0.06 if swept[-1] > swept[0] else 1.5
        ax.set_xlim(swept[0] / factor / ratio, swept[-1] / factor * ratio)
        ax.xaxis.set_major_locator(FixedLocator([x / factor for x in swept]))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([number_text(x / factor) for x in swept])
        ax.set_xlabel(f"{bandwidth_words(key)} ({shown})")
        ys = [y for ln in ax.get_lines() if not ln.get_label().startswith("_") for y in ln.get_ydata()]
        if ys and max(ys) / max(1e-300, min(ys)) > 20:
            ax.set_yscale("log")
        ax.set_ylabel(f"{'median ' if repeated else ''}per-iteration latency, {latency_words(good)} ({unit})")
        ax.set_title(name, fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
    layout_under_title(fig, title_of("Latency against " + bandwidth_words(key), swept_records))
    handles, labels = strategy_handles(styles, {r["strategy"] for r in good}, with_lines=True)
    more_handles, more_labels = extra_handles(marks)
    legend_outside(fig, axes, handles + more_handles, labels + more_labels)
    save(fig, out_dir, "latency_vs_bandwidth", written, described, formats)


def plot_search_time_vs_gpus(records, styles, out_dir, written, described, formats):
    """Returns whether it drew (it needs two GPU counts or more)."""
    good = [r for r in records if ok(r) and r.get("search_time") is not None]
    gpus = sorted({r.get("gpus") for r in records})
    if len(gpus) < 2 or not good:
        status("search_time_vs_gpus: one GPU count only, skipped")
        return False
    names = unique(r.get("graph", "?") for r in records)
    varying, repeated = aggregated(good, lambda r: (r.get("graph"), r["gpus"], r["strategy"]))
    pubs = [n for r in records for p in r.get("published", []) if p.get("value") == "search_time"
            for n in [p.get("number")] if n]
    unit, scale = time_unit([r["search_time"] for r in good] + pubs, log=True)
    fig, axes = panels(len(names))
    marks = {}
    for ax, name in zip(axes, names):
        points = defaultdict(lambda: defaultdict(list))
        for r in records:
            if r.get("graph", "?") == name:
                points[r["strategy"]][r["gpus"]].append(r)
        ax.set_yscale("log")
        draw_lines(ax, styles, points, "search_time", scale, marks)
        span = (gpus[-1] - gpus[0]) or 1  # every GPU count in view, those without a value too
        ax.set_xlim(gpus[0] - 0.06 * span, gpus[-1] + 0.06 * span)
        ax.xaxis.set_major_locator(FixedLocator(gpus))  # whole GPU counts: the ones in the sweep
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([str(g) for g in gpus])
        ax.set_xlabel("GPUs")
        ax.set_ylabel(f"{'median ' if varying or repeated else ''}placement search time ({unit})")
        ax.set_title(name, fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
    title = title_of("Search time against GPU count", records)
    over = [f"{path} ({plural(n, 'value', 'values')})" for path, n in varying.items()] + (["repetitions"] if repeated else [])
    if over:
        title += "\nMedians over the sweep of " + " and ".join(over)
    layout_under_title(fig, title)
    handles, labels = strategy_handles(styles, {r["strategy"] for r in good}, with_lines=True)
    more_handles, more_labels = extra_handles(marks)
    legend_outside(fig, axes, handles + more_handles, labels + more_labels)
    save(fig, out_dir, "search_time_vs_gpus", written, described, formats)
    return True


MAX_LINK_TRACKS = 16


def merged(intervals):
    out = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def gantt_point(records, wanted):
    """The point whose timeline the Gantt chart draws, and why, by this rule:
      1. the points that ran and wrote a trace; with --gantt-strategy, that strategy's only;
      2. placements that fit in GPU memory before those that do not;
      3. on the most GPUs (the largest cluster of the sweep);
      4. using the most of them (GPUs with compute: a timeline of one GPU shows no placement);
      5. the slowest of those: its timeline shows where the time goes, which is what a reader of a
         reproduction asks of it (the fastest is often a placement on one GPU);
      6. the first of equals in the scenario's order."""
    candidates = [r for r in records if ok(r) and r.get("trace_file") and os.path.exists(r["trace_file"])]
    if wanted:
        candidates = [r for r in candidates if r["strategy"] == wanted]
    if not candidates:
        return None, ""

    def rank(item):
        i, r = item
        return (point_status(r) == "ok", r.get("gpus") or 0, r.get("gpus_used") or 0, r["latency"], -i)

    _, r = max(enumerate(candidates), key=rank)
    who = f"{wanted}'s" if wanted else "the"
    fits = "that fit in memory" if point_status(r) == "ok" else "(none fits in memory)"
    used = f" and using the most of them ({r['gpus_used']})" if r.get("gpus_used") else ""
    why = f"the slowest of {who} points with a trace {fits}, on the most GPUs ({r.get('gpus')}){used}"
    return r, why


def plot_gantt(records, styles, out_dir, written, described, formats, wanted):
    r, why = gantt_point(records, wanted)
    if r is None:
        status("gantt: no trace file to draw" + (f" for strategy {wanted}" if wanted else "") + ", skipped")
        return
    opener = gzip.open if r["trace_file"].endswith(".gz") else open  # simulation.trace: gzip
    with opener(r["trace_file"], "rt") as f:
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
    fig, ax = plt.subplots(figsize=(9, 1.6 + 0.32 * len(rows)))
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
    source = {"simgrid": "SimGrid", "evaluator": "evaluator", "flow": "flow engine",
              "estimate": "NEST's estimate"}.get(r.get("latency_source"), "")
    oom = " (OOM: over GPU memory)" if point_status(r) == "oom" else ""
    note = f" [{r['answer_note']}]" if r.get("answer_note") else ""  # whose answer the placement is
    title = (f"{r['strategy']}{note} at the point {', '.join(point)}: "
             f"{source + ' ' if source else ''}latency {r['latency'] / scale:.4g} {unit}{oom}")
    if left_out:
        title += " (not shown: " + ", ".join(left_out) + ")"
    title += f". Chosen as {why}"
    ax.set_title(title_of("Timeline", [r]) + "\n" + "\n".join(textwrap.wrap(title, 90)), fontsize=9)
    fig.tight_layout()
    save(fig, out_dir, "gantt", written, described, formats)


def job_records(records):
    """The records of a scenario of jobs (scenarios/runner/jobs.h): those with a slowdown."""
    return [r for r in records if isinstance(r.get("strategy_report"), dict) and "slowdown" in r["strategy_report"]
            and "shared" in r["strategy_report"]]


def plot_slowdown(records, out_dir, written, described, formats, relative_to_best=False):
    """Per panel (the swept values other than the allocation), a group of bars per job, a bar per
    allocation policy: its slowdown, shared / alone on the same GPUs; or (relative_to_best) its
    shared iteration over the job's best alone iteration under any policy of the panel, which
    counts what the allocation costs the job alone too. Failed or infeasible jobs are labelled
    where their bar would be."""
    jobs = [r for r in records if r.get("params_text", {}).get("allocation") is not None]
    if not jobs:
        return False

    def policy_of(r):  # a seeded policy's draws each get a bar: "random seed=2"
        seed = r.get("seed")
        return r["params_text"]["allocation"] + (f" seed={seed}" if seed is not None else "")

    policies = unique(policy_of(r) for r in jobs)
    names = unique(r["strategy"] for r in jobs)
    # Jobs chosen against the others' load too (against_others): a hatched bar beside each
    # policy's, of that choice's shared iteration, on the relative plot.
    AGAINST = " (chosen against the others' load)"
    if relative_to_best and any("shared_latency_against_others" in r.get("strategy_report", {}) for r in jobs):
        policies = [q for p in policies for q in (p, p + AGAINST)]

    def panel_of(r):
        return ", ".join(f"{k}={v}" for k, v in r.get("params_text", {}).items() if k not in IGNORED_PARAMS | {"allocation"})

    def measured(r):
        return ok(r) and "slowdown" in r.get("strategy_report", {})

    best_alone = {}
    for r in jobs:
        if measured(r):
            key = (panel_of(r), r["strategy"])
            best_alone[key] = min(best_alone.get(key, float("inf")), r["strategy_report"]["alone_latency"])
            against = r["strategy_report"]["shared"].get("against_others", {})
            if "alone_latency" in against:  # the choice against the load, alone, counts among the best
                best_alone[key] = min(best_alone[key], against["alone_latency"])

    def height(r, policy=""):
        report = r["strategy_report"]
        if not relative_to_best:
            return report["slowdown"]
        shared = report["shared_latency_against_others"] if policy.endswith(AGAINST) else report["shared_latency"]
        return shared / best_alone[(panel_of(r), r["strategy"])]

    cases = unique(panel_of(r) for r in jobs)
    fig, axes = panels(len(cases), width=max(4.2, 0.45 * len(names) * len(policies)), height=3.2)
    # A policy and its choice against the load share a colour; the hatch tells them apart.
    base_policies = unique(p[:-len(AGAINST)] if p.endswith(AGAINST) else p for p in policies)
    colours = {p: PALETTE[base_policies.index(p[:-len(AGAINST)] if p.endswith(AGAINST) else p) % len(PALETTE)] for p in policies}
    width = 0.8 / len(policies)
    engine = next((r["strategy_report"]["shared"].get("engine") for r in job_records(jobs)), "?")
    top = max([height(r, p) for r in jobs if measured(r) for p in ("", AGAINST)
               if not p or "shared_latency_against_others" in r["strategy_report"]] + [1.0])
    for ax, case in zip(axes, cases):
        for k, policy in enumerate(policies):
            xs, heights = [], []
            for i, name in enumerate(names):
                x = i + (k - (len(policies) - 1) / 2) * width
                base = policy[:-len(AGAINST)] if policy.endswith(AGAINST) else policy
                r = next((r for r in jobs if panel_of(r) == case and r["strategy"] == name and policy_of(r) == base), None)
                if r is None or (policy != base and "shared_latency_against_others" not in r.get("strategy_report", {})):
                    continue
                if measured(r):
                    xs.append(x)
                    heights.append(height(r, policy))
                else:
                    label_missing(ax, x, [name], [point_status(r)], [colours[policy]])
            bars = ax.bar(xs, heights, width, label=policy, color=colours[policy], edgecolor="black", linewidth=0.4,
                          hatch=OOM_HATCH if policy.endswith(AGAINST) else None)
            for bar, h in zip(bars, heights):
                ax.annotate(f"{h:.2f}", (bar.get_x() + bar.get_width() / 2, h), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=6)
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_ylim(0, top * 1.15)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
        if case:
            ax.set_title(case, fontsize=9)
        ax.set_ylabel(("shared / best alone" if relative_to_best else "slowdown: shared / alone") + f" ({engine})", fontsize=8)
    handles = [Patch(facecolor=colours[p], edgecolor="black", linewidth=0.4, hatch=OOM_HATCH if p.endswith(AGAINST) else None)
               for p in policies]
    cluster = common_text(unique(r.get("cluster", "") for r in jobs)) or ""
    what = ("Each job's iteration shared, over its best alone under any allocation or choice" if relative_to_best
            else "Each job's slowdown sharing the cluster (shared / alone on the same GPUs)")
    layout_under_title(fig, "\n".join(textwrap.wrap(what + (f": {cluster.split(' (')[0]}" if cluster else ""), 90)))
    legend_outside(fig, axes, handles, policies, title="allocation")
    save(fig, out_dir, "iteration_by_allocation" if relative_to_best else "slowdown", written, described, formats)
    return True

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("records", help="records.json written by `placesim report`")
    ap.add_argument("--out", required=True, help="folder for the PNG and SVG files")
    ap.add_argument("--gantt-strategy", default="",
                    help="draw this strategy's timeline (default: any strategy's; the point by the rule of gantt_point)")
    ap.add_argument("--describe", default="", help="also write what each figure shows to this JSON file")
    ap.add_argument("--formats", default="png,svg", help="file formats, comma-separated (empty: none, with --describe)")
    args = ap.parse_args()
    with open(args.records) as f:
        records = json.load(f)
    if not isinstance(records, list):
        sys.exit(f"{args.records}: expected a JSON array of records")
    records.sort(key=lambda r: r.get("index", 0))  # the scenario's order (a stable sort)
    formats = [f for f in args.formats.split(",") if f]
    os.makedirs(args.out, exist_ok=True)
    styles = strategy_styles(records)
    written, described = [], OrderedDict()
    # A scenario of jobs: its strategies are jobs, its points allocations; the slowdown is its plot.
    if job_records(records) and plot_slowdown(records, args.out, written, described, formats):
        plot_slowdown(records, args.out, written, described, formats, relative_to_best=True)
        for w in written:
            status(f"wrote {w}")
        if args.describe:
            with open(args.describe, "w") as f:
                json.dump({"styles": {}, "strategy_order": [], "figures": described}, f, indent=1)
        return
    plot_bars(records, styles, args.out, written, described, formats, "latency", "latency_by_model")
    plot_cost_models(records, styles, args.out, written, described, formats)
    plot_latency_vs_bandwidth(records, styles, args.out, written, described, formats)
    if not plot_search_time_vs_gpus(records, styles, args.out, written, described, formats):
        plot_bars(records, styles, args.out, written, described, formats, "search_time", "search_time_by_model")
    plot_gantt(records, styles, args.out, written, described, formats, args.gantt_strategy)
    for w in written:
        status(f"wrote {w}")
    if args.describe:
        with open(args.describe, "w") as f:
            json.dump({"styles": {s: {"color": c, "marker": m} for s, (c, m) in styles.items()},
                       "strategy_order": list(styles), "figures": described}, f, indent=1)


if __name__ == "__main__":
    main()
