"""placesim.evaluate: the same numbers as `placesim simulate`, bit for bit, and the checks it makes."""
import json

import numpy as np
import pytest

import placesim
from conftest import QUICKSTART, random_placement, run_cli


def simulate_json(tmp_path, graph, placement, engine):
    """`placesim simulate --json` on the quickstart's cluster, the graph and placement written to files."""
    graph_file, placement_file = tmp_path / "g.json", tmp_path / "p.json"
    graph.save(graph_file)
    placement_file.write_text(json.dumps([int(d) for d in placement]))
    code, out, err = run_cli("simulate", "--graph", graph_file, "--placement", placement_file, "--cluster", QUICKSTART,
                             "--engine", engine, "--json")
    assert code in (0, 1), err
    return json.loads(out)


@pytest.mark.parametrize("engine", ["flow", "evaluator", "all"])
def test_evaluate_equals_simulate_bit_for_bit(tmp_path, quickstart, engine):
    graph, cluster = quickstart.graph, quickstart.cluster
    placements = [placesim.place(graph, cluster, "m-etf").placement,
                  random_placement(graph, cluster, np.random.default_rng(7)).astype(np.int64)]
    for placement in placements:
        cli = simulate_json(tmp_path, graph, placement, engine)
        mine = placesim.evaluate(graph, cluster, placement, engine=engine)
        assert mine.latencies.keys() == {k[: -len("_latency")] for k in cli if k.endswith("_latency")}
        for name, latency in mine.latencies.items():
            assert latency == cli[f"{name}_latency"], name  # exact: the same doubles
        assert mine.busy.tolist() == cli["busy_per_gpu"]
        assert mine.memory.tolist() == cli["memory_per_gpu"]
        assert mine.peak_memory == cli["peak_memory"] and mine.oom == cli["oom"]
        assert mine.lower_bounds["critical_path"] == cli["lower_bound_critical_path"]
        assert mine.lower_bounds["work_per_gpu"] == cli["lower_bound_work_per_gpu"]
        if engine == "all":  # SimGrid's link statistics
            links = mine.links
            assert links["name"].tolist() == [l["name"] for l in cli["links"]]
            assert links["bytes"].tolist() == [l["bytes"] for l in cli["links"]]
            assert links["busy_s"].tolist() == [l["busy_s"] for l in cli["links"]]


def test_evaluate_in_a_loop_matches_the_cost_model(quickstart):
    graph, cluster = quickstart.graph, quickstart.cluster
    rng = np.random.default_rng(1)
    model = placesim.CostModel(graph, cluster, "flow")
    for _ in range(20):
        p = random_placement(graph, cluster, rng)
        e = placesim.evaluate(graph, cluster, p)
        assert e.engine == "flow" and e.latency == e.latencies["flow"]
        assert e.latency == model.latency(p)
        assert e.latency >= e.latencies["evaluator"]  # contention only delays
        assert e.busy.sum() == pytest.approx(graph.total_compute)


def test_links_without_simgrid_are_the_routed_bytes(quickstart):
    graph, cluster = quickstart.graph, quickstart.cluster
    p = random_placement(graph, cluster, np.random.default_rng(3))
    flow = placesim.evaluate(graph, cluster, p, engine="flow").links
    simgrid = placesim.evaluate(graph, cluster, p, engine="simgrid").links
    assert flow["busy_s"].isna().all() and not simgrid["busy_s"].isna().any()
    routed = dict(zip(flow["name"], flow["bytes"]))
    measured = dict(zip(simgrid["name"], simgrid["bytes"]))
    assert routed.keys() == measured.keys()
    for name, b in measured.items():
        assert routed[name] == pytest.approx(b, rel=1e-6)


def test_bad_placements_are_value_errors(small):
    graph, cluster = small
    n = graph.num_operators
    with pytest.raises(placesim.InputError, match="operator"):
        placesim.evaluate(graph, cluster, np.zeros(n - 1, dtype=np.int32))
    with pytest.raises(placesim.InputError, match="GPU"):
        placesim.evaluate(graph, cluster, np.full(n, 7))
    with pytest.raises(placesim.InputError, match="whole numbers"):
        placesim.evaluate(graph, cluster, np.zeros(n, dtype=float))
    with pytest.raises(placesim.InputError, match="engine"):
        placesim.evaluate(graph, cluster, np.zeros(n, dtype=np.int32), engine="estimate")
    # A plain list works as well as an array.
    assert placesim.evaluate(graph, cluster, [0] * n).latency == placesim.evaluate(graph, cluster, np.zeros(n, np.int32)).latency


def test_the_benchmark_runs(quickstart):
    import subprocess, sys, os
    from conftest import SOURCE_DIR
    script = os.path.join(SOURCE_DIR, "bench", "bench_python.py")
    p = subprocess.run([sys.executable, script, "--calls", "200", "--rounds", "3"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "overhead" in p.stdout
