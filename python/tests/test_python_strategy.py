"""Strategies written in Python (`name: python`): beside the C++ ones in a scenario, run, resumed
and reported like them; what goes wrong in Python is the point's failure row, never a crash."""
import json
import textwrap

import numpy as np
import pandas as pd
import pytest

import placesim
from conftest import run_cli

STRATEGIES = textwrap.dedent('''
    import numpy as np

    class Spread:
        """Round robin over the first `gpus` GPUs."""
        def __init__(self, gpus=2):
            self.gpus = gpus
        def place(self, graph, cluster, deadline):
            assert deadline.remaining() > 0
            return np.arange(graph.num_operators) % min(self.gpus, cluster.num_gpus), {"gpus_used": self.gpus}

    class Raises:
        def place(self, graph, cluster, deadline):
            raise ValueError("no idea where to put it")

    class WrongLength:
        def place(self, graph, cluster, deadline):
            return [0] * (graph.num_operators - 1)

    class OutOfRange:
        def place(self, graph, cluster, deadline):
            return [cluster.num_gpus] * graph.num_operators

    class Floats:
        def place(self, graph, cluster, deadline):
            return np.zeros(graph.num_operators)
''')


def scenario(folder, strategies, name="mixed"):
    return {
        "name": name,
        "graph": {"builtin": "synthetic", "layers": 3, "branches": 3, "ops_per_branch": 2},
        "cluster": {"type": "nvlink-servers", "gpus": 4},
        "strategies": strategies,
        "simulation": {"engine": "flow", "trace": False},
        "output": str(folder / "out"),
    }


def python_strategy(cls, label, folder, **extra):
    return {"name": "python", "label": label, "options": {"module": "my_strategies", "class": cls, "path": str(folder), **extra}}


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "my_strategies.py").write_text(STRATEGIES)
    return tmp_path


def test_a_mixed_scenario_runs_with_failure_rows(folder):
    strategies = ["round-robin", "m-etf",
                  python_strategy("Spread", "spread", folder, args={"gpus": 3}),
                  python_strategy("Raises", "raises", folder),
                  python_strategy("WrongLength", "wrong-length", folder),
                  python_strategy("OutOfRange", "out-of-range", folder),
                  python_strategy("Floats", "floats", folder),
                  python_strategy("Missing", "missing-class", folder),
                  {"name": "python", "label": "missing-module", "options": {"module": "no_such_module", "class": "X"}}]
    df = placesim.run_scenario(scenario(folder, strategies), jobs=2)
    rows = df.set_index("label")
    assert list(df["label"]) == [s if isinstance(s, str) else s["label"] for s in strategies]
    for ok in ("round-robin", "m-etf", "spread"):
        assert rows.loc[ok, "status"] == "ok", rows.loc[ok, "error"] if "error" in rows else ""
    assert rows.loc["spread", "strategy_report"]["gpus_used"] == 3
    assert rows.loc["spread", "strategy_report"]["python_class"] == "my_strategies.Spread"
    errors = {label: rows.loc[label, "error"] for label in rows.index if rows.loc[label, "status"] == "failed"}
    assert set(errors) == {"raises", "wrong-length", "out-of-range", "floats", "missing-class", "missing-module"}
    assert "ValueError: no idea where to put it" in errors["raises"] and "my_strategies.py" in errors["raises"]
    assert "operator" in errors["wrong-length"]
    assert "GPU 4" in errors["out-of-range"] or "4" in errors["out-of-range"]
    assert "whole numbers" in errors["floats"]
    assert "has no class 'Missing'" in errors["missing-class"]
    assert "ModuleNotFoundError" in errors["missing-module"]
    # The Python strategy's placement is measured as any other: evaluate gives the same latency.
    s = placesim.load_scenario(scenario(folder, ["round-robin"]))
    placement = np.arange(s.graph.num_operators) % 3
    assert rows.loc["spread", "flow_latency"] == placesim.evaluate(s.graph, s.cluster, placement).latency
    # The same fields as results.jsonl.
    lines = [json.loads(l) for l in (folder / "out" / "results.jsonl").read_text().splitlines()]
    assert set(df.columns) == set().union(*lines)


def test_resume_and_report(folder):
    spec = scenario(folder, ["round-robin", python_strategy("Spread", "spread", folder)])
    first = placesim.run_scenario(spec)
    with pytest.raises(placesim.InputError, match="resume=True"):
        placesim.run_scenario(spec)
    results = folder / "out" / "results.jsonl"
    lines = results.read_text().splitlines()
    results.write_text(lines[0] + "\n")  # the Python strategy's point is missing
    resumed = placesim.run_scenario(spec, resume=True)
    assert len(resumed) == 2 and list(resumed["status"]) == ["ok", "ok"]
    assert resumed["flow_latency"].tolist() == first["flow_latency"].tolist()
    fresh = placesim.run_scenario(spec, fresh=True)
    assert len(fresh) == 2
    code, out, err = run_cli("report", folder / "out", "--no-plots")
    assert code == 0, err
    assert "spread" in out


def test_a_scenario_file_finds_the_module_beside_it(folder):
    (folder / "s.yaml").write_text(textwrap.dedent(f'''
        name: beside
        graph: {{builtin: fig3.1}}
        cluster: {{type: nvlink-servers, gpus: 2}}
        strategies:
          - single-device
          - {{name: python, label: spread, options: {{module: my_strategies, class: Spread}}}}
        simulation: {{engine: evaluator, trace: false}}
        output: {folder / "out"}
    '''))
    df = placesim.run_scenario(folder / "s.yaml")
    assert list(df["status"]) == ["ok", "ok"]


def test_the_cli_refuses_python_strategies_saying_how_to_run_them(folder):
    (folder / "s.yaml").write_text(textwrap.dedent('''
        graph: {builtin: fig3.1}
        cluster: {type: nvlink-servers, gpus: 2}
        strategies: [{name: python, options: {module: my_strategies, class: Spread}}]
    '''))
    code, out, err = run_cli("run", folder / "s.yaml", "-o", folder / "out")
    assert code == 2
    assert "placesim.run_scenario" in err and "strategies[0]" in err


def test_registered_classes_and_direct_placement(folder, small):
    graph, cluster = small

    @placesim.register_strategy(name="all-on-one")
    class AllOnOne:
        def __init__(self, gpu=0):
            self.gpu = gpu

        def place(self, graph, cluster, deadline):
            return np.full(graph.num_operators, self.gpu)

    r = placesim.place(graph, cluster, "python", **{"class": "all-on-one", "args": {"gpu": 1}})
    assert set(r.placement) == {1} and r.details["python_class"] == "all-on-one"
    df = placesim.run_scenario(scenario(folder, [{"name": "python", "label": "one", "options": {"class": "all-on-one"}}]))
    assert df["status"].tolist() == ["ok"]
    with pytest.raises(RuntimeError, match="no strategy class 'nope'"):
        placesim.place(graph, cluster, "python", **{"class": "nope"})
