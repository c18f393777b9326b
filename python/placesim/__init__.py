"""placesim from Python: graphs, clusters, placements, strategies and scenarios.

The simulator itself is C++ (the extension ``placesim._placesim``); this package gives it keyword
arguments, NumPy arrays and pandas frames. Everything runs in process: ``evaluate`` measures a
placement with the evaluator and the flow engine without a process or a file per call.

    >>> import placesim
    >>> s = placesim.load_scenario("scenarios/quickstart.yaml")
    >>> graph, cluster = s.graph, s.cluster
    >>> placement = placesim.place(graph, cluster, "m-etf").placement
    >>> placesim.evaluate(graph, cluster, placement, engine="flow").latency

Units are seconds, bytes and bytes per second. docs/python.md is the guide.
"""
import json as _json
import os as _os
import sys as _sys
import tempfile as _tempfile
from dataclasses import dataclass as _dataclass, field as _field
from typing import Any as _Any, Optional as _Optional

from . import _build_info

# Where this build's data (scenarios/papers, plot_results.py) and LibTorch plugin are: the
# extension finds them from the running executable, which is python3 here.
if _build_info.DATA_DIR and _os.path.isdir(_build_info.DATA_DIR):
    _os.environ.setdefault("PLACESIM_DATA_DIR", _build_info.DATA_DIR)
if _build_info.TORCH_PLUGIN and _os.path.exists(_build_info.TORCH_PLUGIN):
    _os.environ.setdefault("PLACESIM_TORCH_PLUGIN", _build_info.TORCH_PLUGIN)

# The extension's symbols are made global: the LibTorch plugin of the placeto strategy, which it
# loads when a policy is first made, resolves placesim's functions from the module that loads it.
_flags = _sys.getdlopenflags()
_sys.setdlopenflags(_flags | _os.RTLD_GLOBAL)
try:
    from . import _placesim  # noqa: E402
finally:
    _sys.setdlopenflags(_flags)
from . import _strategies  # noqa: E402
from ._placesim import (  # noqa: E402,F401
    Cluster,
    CostModel,
    Deadline,
    Evaluation,
    Graph,
    InfeasibleProblem,
    InputError,
    __version__,
    evaluate,
)

#: The placesim command of this build or installation (for comparing with the CLI).
CLI = _build_info.CLI

__all__ = [
    "__version__", "Graph", "Cluster", "Evaluation", "CostModel", "Deadline", "InputError", "InfeasibleProblem",
    "Placement", "Scenario", "PlacementEnv",
    "load_graph", "zoo", "zoo_models", "import_onnx", "make_graph",
    "load_cluster", "cluster", "topology_types",
    "evaluate", "strategies", "place", "register_strategy",
    "load_scenario", "run_scenario", "read_results", "plan", "search", "collective", "version",
]


def version() -> str:
    """What ``placesim --version`` prints: the version, the commit and the optional parts built."""
    return _placesim._version_text()


# --- graphs -----------------------------------------------------------------------------------


def load_graph(source, format: str = "auto") -> Graph:
    """A graph from a file (QuickP, Tarnawski et al. or placesim JSON; ``format`` names one or
    ``auto``), or from a scenario's ``graph:`` mapping given as a dict: ``{"model": "bert-base",
    "layers": 4}``, ``{"onnx": "m.onnx", "batch": 32}``, ``{"builtin": "fig3.1"}``,
    ``{"file": "g.json", "largest_component": True}``, ``{"chakra": "et/"}``. Relative paths are
    relative to the working directory. Loader warnings are Python warnings."""
    if isinstance(source, dict):
        return _placesim._load_graph_source(source)
    return _placesim._load_graph_file(_os.fspath(source), format)


def zoo(model: str, **options) -> Graph:
    """A model-zoo training graph (``placesim graph generate``): ``zoo("bert-base", layers=4,
    style="fused", gpu="rtx3070")``. Options are a scenario's ``graph: {model: ...}`` keys: batch,
    seq, layers, heads, hidden, ffn, vocab, image, classes, style, optimizer, gpu, memory."""
    return _placesim._load_graph_source({"model": model, **options})


def zoo_models():
    """The model zoo as a pandas DataFrame: name, description, the size keys it takes."""
    import pandas as pd
    return pd.DataFrame(_placesim._zoo_models())


def import_onnx(path, **options) -> Graph:
    """An ONNX model's training graph (``placesim graph import``): ``import_onnx("m.onnx",
    batch=32, gpu="a100")``; options are the keys of a scenario's ``graph: {onnx: ...}``."""
    return _placesim._load_graph_source({"onnx": _os.fspath(path), **options})


def make_graph(operators, tensors, source: str = "python") -> Graph:
    """A graph from Python: ``operators`` a DataFrame or dict of columns (name, compute_s; optional
    type, memory_bytes, colocation_class, flops), ``tensors`` likewise (src and dst as operator names
    or indices, bytes; optional gradient). Checked as a loaded graph is (cycles, names, values)."""
    return _placesim._graph_from_columns(operators, tensors, source)


# --- clusters ---------------------------------------------------------------------------------


def load_cluster(path) -> Cluster:
    """A cluster from a YAML file holding a ``cluster:`` mapping (a scenario file, say) or the
    mapping itself."""
    c = _placesim._load_cluster_file(_os.fspath(path))
    c._source_path = _os.fspath(path)
    return c


def cluster(mapping: _Optional[dict] = None, **keys) -> Cluster:
    """A cluster from a ``cluster:`` mapping, as a dict and/or keyword arguments:
    ``cluster(type="spine-leaf", leaves=2, servers_per_leaf=2, gpus_per_server=2,
    nic_bandwidth="25Gbps")``. Quantities take units as in YAML ("150GB/s", "16GiB").
    :func:`topology_types` lists the types (the presets) and their keys."""
    spec = dict(mapping or {})
    spec.update(keys)
    c = _placesim._cluster_from_mapping(spec)
    c._mapping = spec
    return c


def topology_types():
    """Every cluster type and its keys (``placesim topology types --json``) as a DataFrame."""
    import pandas as pd
    return pd.DataFrame(_placesim._topology_types())


def _as_cluster(value) -> Cluster:
    if isinstance(value, Cluster):
        return value
    if isinstance(value, dict):
        return cluster(value)
    return load_cluster(value)


def _as_graph(value) -> Graph:
    return value if isinstance(value, Graph) else load_graph(value)


# --- strategies -------------------------------------------------------------------------------


@_dataclass
class Placement:
    """What a strategy returned: a GPU per operator, the wall time of its ``place()`` call, its own
    details and the search's facts (time limit, cost model, portfolio winner...)."""
    placement: _Any
    search_seconds: float
    details: dict = _field(default_factory=dict)
    facts: dict = _field(default_factory=dict)
    strategy: str = ""


def strategies():
    """Every registered placement strategy and planner with its options (``placesim strategies
    --json``) as a DataFrame: name, kind (placement or planner), description, options."""
    import pandas as pd
    return pd.DataFrame(_placesim._strategies())


def place(graph, cluster, strategy: str, **options) -> Placement:
    """Places the graph with a registered strategy, its options as keyword arguments (a
    scenario's ``options:`` keys): ``place(g, c, "mcmc", steps=2000, seed=1, cost_model="flow")``.
    Timed and validated as in a scenario; raises InfeasibleProblem when no placement can fit."""
    r = _placesim._place(_as_graph(graph), _as_cluster(cluster), strategy, options)
    return Placement(r["placement"], r["search_seconds"], r["details"], r["facts"], strategy)


def register_strategy(cls=None, *, name: _Optional[str] = None):
    """Registers a strategy class written in Python (a class with ``place(graph, cluster,
    deadline)``) so that scenarios name it without a module: ``{name: python, options: {class:
    NAME}}``. Usable as a decorator. Registered classes are seen by ``run_scenario`` in this
    process and its workers."""
    if cls is None:
        return lambda c: _strategies.register(c, name)
    return _strategies.register(cls, name)


# --- scenarios --------------------------------------------------------------------------------


@_dataclass
class Scenario:
    """A scenario read (its base, without the sweep applied): the loaded graph (None for a
    workload or jobs), the cluster, the strategies (with jobs: the allocation policies), the jobs
    (name, strategy, source, gpus: a count or a list; empty for a scenario of one job) and what a
    run would do."""
    name: str
    file: str
    description: str
    output: str
    points: int
    engine: str
    order: str
    graph: _Optional[Graph]
    cluster: Cluster
    strategies: list
    jobs: list


def _scenario_spec(spec):
    return spec if isinstance(spec, dict) else _os.fspath(spec)


def load_scenario(spec) -> Scenario:
    """Reads a scenario file (or a dict of the same shape) as ``placesim run`` would, and loads
    its graph and cluster."""
    d = _placesim._load_scenario(_scenario_spec(spec))
    c = d["cluster"]
    if isinstance(spec, dict):
        c._mapping = dict(spec.get("cluster", {}))
    else:
        c._source_path = _os.fspath(spec)
    return Scenario(**d)


def read_results(path):
    """The records of a run (a results folder or its results.jsonl) as a DataFrame, one row per
    point in plan order, with the fields of results.jsonl as columns (lists and mappings such as
    memory_per_gpu and strategy_report as Python objects)."""
    import pandas as pd
    path = _os.fspath(path)
    if _os.path.isdir(path):
        path = _os.path.join(path, "results.jsonl")
    records = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    records.append(_json.loads(line))
                except ValueError:
                    pass  # a last line cut short, as the CLI skips it
    records.sort(key=lambda r: r.get("index", 0))
    return pd.DataFrame.from_records(records)


def run_scenario(spec, output: _Optional[str] = None, *, jobs: int = 1, resume: bool = False, fresh: bool = False,
                 progress: bool = False, max_points: int = 100_000):
    """Runs a scenario file (or a dict of the same shape) as ``placesim run`` does: every point of
    its sweep in worker processes, results.jsonl, results.json and results.csv, placement and trace
    files in ``output`` (default: the scenario's). Returns the results as a DataFrame, one row per
    point (:func:`read_results`). Strategies written in Python (``name: python``) run beside the
    C++ ones. A folder holding an earlier run's results needs ``resume=True`` (run the missing
    points) or ``fresh=True`` (start over), as ``--resume`` and ``--fresh``. ``progress`` prints the
    runner's progress on stderr."""
    folder = _placesim._run_scenario(_scenario_spec(spec), output or "", jobs, resume, fresh, progress, max_points)
    return read_results(folder)


# --- plans and collectives --------------------------------------------------------------------


def plan(cluster, *, workload=None, model: _Optional[str] = None, planner: _Optional[str] = None, **options) -> dict:
    """``placesim plan``: one parallel plan of a layer-level workload, laid out, checked against GPU
    memory, compiled and run on the engines. Returns a dict: plan, gpus, stage_starts,
    memory_per_stage, feasible (and reason), operators, tensors, collectives (messages or condensed,
    as run), folding (replicas_simulated, copies, exact, reason: its data-parallel replicas folded
    into one block standing for all, exact where the fabric is symmetric; full_graph=True builds
    every one, fold=True folds even approximately), notes (defaults chosen by size), latencies and
    wall_times per engine.

    Without ``planner``, the plan is given: ``plan(c, model="gpt2", tp=2, pp=2, dp=2,
    micro_batches=8, zero=1, schedule="1f1b", engine="all")`` with the CLI's options as keywords
    (workload=FILE instead of model; micro_batch_size, sequence, gpu, mfu, recompute, stage_tp,
    virtual_stages, stage_split, ep, sequence_parallel, scatter_gather, gradient_algorithm, collectives,
    order; every ``plan`` option of the CLI has its keyword, a ``--no-X`` flag as ``X=False``).

    With ``planner`` (``megatron``, ``nest``, ``nest-unaware``, ``mcmc-plan``), the planner chooses
    it for ``workload`` (a scenario's ``workload:`` mapping, or the ``model`` name) with its options
    as keywords; ``engine``, ``order`` and ``collectives`` say how it is run."""
    c = _as_cluster(cluster)
    if planner is None:
        kw = dict(options, model=model)
        if workload is not None:
            kw["workload"] = _os.fspath(workload)
        return _placesim._plan(c, kw)
    run = {k: options.pop(k) for k in ("engine", "order", "collectives", "full_graph", "fold") if k in options}
    spec = workload if isinstance(workload, dict) else ({"model": model} if model else {"file": _os.fspath(workload)})
    return _placesim._plan_with(planner, spec, c, options, run)


def _cluster_file(c: Cluster, folder: str) -> str:
    path = getattr(c, "_source_path", None)
    if path:
        return path
    mapping = getattr(c, "_mapping", None)
    if mapping is None:
        raise ValueError("collective needs a cluster made by placesim.cluster(...), load_cluster or load_scenario")
    import yaml
    path = _os.path.join(folder, "cluster.yaml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump({"cluster": mapping}, f)
    return path


def collective(cluster, op: str = "all-reduce", algorithm: str = "ring", bytes="1MiB:1GiB", *, factor: float = 2,
               gpus: int = 0, group=None, chunks: int = 1, root: int = 0, engine: str = "all", model: str = "auto"):
    """``placesim collective``: one collective on the cluster over a range of sizes (``bytes``: one
    size or FROM:TO, each ``factor`` times the last, per rank as in nccl-tests), per engine beside the
    closed form. Returns a DataFrame, one row per size and engine, with the columns of
    ``placesim collective --json``: op, algorithm, gpus, chunks, bytes, engine, time_s,
    closed_form_s, algbw_bytes_per_s, busbw_bytes_per_s, wall_s, model."""
    import pandas as pd
    if group is not None and not isinstance(group, str):
        group = ",".join(str(int(g)) for g in group)
    with _tempfile.TemporaryDirectory(prefix="placesim-") as folder:
        kw = dict(cluster=_cluster_file(_as_cluster(cluster), folder), op=op, algorithm=algorithm, bytes=str(bytes),
                  factor=factor, gpus=gpus, group=group, chunks=chunks, root=root, engine=engine, model=model)
        text = _placesim._collective_json(kw)
    return pd.DataFrame([_json.loads(line) for line in text.splitlines() if line.strip()])


def search(cluster, *, global_batch: int, model: _Optional[str] = None, model_file=None, gpus: int = 0, top: int = 10,
           exhaustive: bool = False, **options) -> dict:
    """``placesim search``: every Megatron-style configuration of ``model`` (a zoo name) or
    ``model_file`` on ``gpus`` GPUs of the cluster (0: all) at ``global_batch`` sequences per
    iteration, pruned by memory, ranked by NEST's estimate, the ``top`` best simulated on the flow
    engine (``exhaustive=True``: then every one whose lower bound is below the best). The space's
    knobs as lists: tp, pp, cp, ep, virtual_stages, micro_batch_size, recompute ("none",
    "selective", "full"), sequence_parallel and tp_comm_overlap ("on", "off"), optimizer ("none",
    "distributed", "zero2", "zero3"); and gpu, precision, sequence, attention, main_gradients,
    threads, engine. Returns ``search --json``'s object as a dict (counts, phases and their
    seconds, proven_best, plans: each with iteration_s, tokens_per_s_per_gpu, mfu,
    memory_per_gpu_bytes, breakdown and the ``placesim plan`` command that re-runs it) with
    ``frame``: the plans as a DataFrame, one row each, the plan's knobs as columns."""
    import pandas as pd
    with _tempfile.TemporaryDirectory(prefix="placesim-") as folder:
        kw = dict(cluster=_cluster_file(_as_cluster(cluster), folder), model=model,
                  model_file=None if model_file is None else _os.fspath(model_file), gpus=gpus,
                  global_batch=global_batch, top=top, exhaustive=exhaustive, **options)
        result = _json.loads(_placesim._search_json(kw))
    rows = []
    for p in result["plans"]:
        row = {k: v for k, v in p.items() if k not in ("plan", "breakdown", "memory_per_component_bytes")}
        row.update(p["plan"])
        row.update({f"{k}_s": v for k, v in p["breakdown"].items() if k != "slowest_gpu"})
        rows.append(row)
    result["frame"] = pd.DataFrame(rows)
    return result


from .env import PlacementEnv  # noqa: E402
