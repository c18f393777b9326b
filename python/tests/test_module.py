"""The module's surface: version, graphs, clusters, strategies, as the CLI sees them."""
import json
import re

import numpy as np
import pandas as pd
import pytest

import placesim
from conftest import QUICKSTART, SOURCE_DIR, run_cli


def test_version_matches_the_cli():
    code, out, _ = run_cli("--version")
    assert code == 0
    assert re.match(r"\d+\.\d+\.\d+$", placesim.__version__)
    assert out.startswith(f"placesim {placesim.__version__} ")
    assert placesim.version().splitlines()[0].startswith(f"placesim {placesim.__version__}")


def test_graph_frames_and_info(quickstart):
    g = quickstart.graph
    ops, tensors = g.operators(), g.tensors()
    assert isinstance(ops, pd.DataFrame) and len(ops) == g.num_operators
    assert list(ops.columns) == ["name", "type", "compute_s", "memory_bytes", "colocation_class", "communication", "flops"]
    assert len(tensors) == g.num_tensors
    assert tensors["src_name"].iloc[0] == ops["name"].iloc[tensors["src"].iloc[0]]
    assert ops["compute_s"].sum() == pytest.approx(g.total_compute)
    info = g.info()
    assert info["operators"] == g.num_operators and info["critical_path_s"] == pytest.approx(g.critical_path())
    # `placesim graph info` says the same counts.
    assert "operators" in str(g)


def test_graph_info_equals_the_cli(tmp_path, quickstart):
    path = tmp_path / "g.json"
    quickstart.graph.save(path)
    code, out, _ = run_cli("graph", "info", path)
    assert code == 0
    assert out.endswith(str(placesim.load_graph(path)))


def test_zoo_graph_is_the_cli_s(tmp_path):
    code, _, err = run_cli("graph", "generate", "bert-base", "--layers", "2", "--style", "fused", "-o", tmp_path / "b.json")
    assert code == 0, err
    mine = placesim.zoo("bert-base", layers=2, style="fused")
    assert mine.to_json() == placesim.load_graph(tmp_path / "b.json").to_json()
    assert "bert-base" in set(placesim.zoo_models()["name"])


def test_make_graph_from_frames():
    g = placesim.make_graph({"name": ["a", "b", "c"], "compute_s": [1.0, 2.0, 3.0], "memory_bytes": [1, 1, 1]},
                            pd.DataFrame({"src": ["a", "b"], "dst": ["b", "c"], "bytes": [10.0, 20.0]}))
    assert g.num_operators == 3 and g.num_tensors == 2 and g.critical_path() == 6.0
    with pytest.raises(placesim.InputError, match="cycle"):
        placesim.make_graph({"name": ["a", "b"], "compute_s": [1, 1]}, {"src": [0, 1], "dst": [1, 0], "bytes": [1, 1]})


def test_graph_pickles(quickstart):
    import pickle
    again = pickle.loads(pickle.dumps(quickstart.graph))
    assert again.to_json() == quickstart.graph.to_json()


def test_cluster_from_dict_file_and_scenario(quickstart):
    from_file = placesim.load_cluster(QUICKSTART)
    mapping = {"type": "spine-leaf", "leaves": 2, "servers_per_leaf": 2, "spines": 1, "gpus_per_server": 2,
               "nvlink_bandwidth": "150GB/s", "nic_bandwidth": "25Gbps", "oversubscription": 4, "gpu_memory": "16GiB"}
    from_dict = placesim.cluster(mapping)
    for c in (from_file, from_dict, quickstart.cluster):
        assert c.num_gpus == 8 and c.num_servers == 4
        assert c.description == from_file.description
    info = from_dict.info()
    assert info["gpus"] == 8 and info["bandwidth_levels"][0]["bandwidth"] == pytest.approx(150e9)
    code, out, _ = run_cli("topology", "info", QUICKSTART)
    assert code == 0 and out == str(from_file)
    gpus = from_dict.gpus()
    assert list(gpus["memory_bytes"]) == [16 * 2**30] * 8
    bw = from_dict.bandwidth_matrix()
    assert bw.shape == (8, 8) and np.isinf(bw[0, 0]) and bw[0, 1] == pytest.approx(150e9)
    assert "fat-tree" in set(placesim.topology_types()["name"])


def test_bad_input_is_a_value_error_naming_the_field():
    with pytest.raises(placesim.InputError, match=r"cluster.*gpus") as e:
        placesim.cluster(type="nvlink-servers", gpus="many")
    assert isinstance(e.value, ValueError)
    with pytest.raises(placesim.InputError, match="did you mean 'gpus'"):
        placesim.cluster(type="nvlink-servers", gpu=4)


def test_strategies_list_equals_the_cli():
    code, out, _ = run_cli("strategies", "--json")
    assert code == 0
    listed = placesim.strategies()
    assert list(listed["name"]) == [s["name"] for s in json.loads(out)]
    assert "python" in set(listed["name"])


def test_place_with_options_as_keywords(small):
    graph, cluster = small
    r = placesim.place(graph, cluster, "mcmc", steps=200, seed=3, cost_model="flow")
    assert r.placement.shape == (graph.num_operators,) and r.placement.dtype == np.int32
    assert r.search_seconds > 0 and r.facts["cost_model"] == "flow"
    again = placesim.place(graph, cluster, "mcmc", steps=200, seed=3, cost_model="flow")
    assert np.array_equal(r.placement, again.placement)
    with pytest.raises(placesim.InputError, match="steps"):
        placesim.place(graph, cluster, "mcmc", steps=-1)
    with pytest.raises(placesim.InputError, match="did you mean"):
        placesim.place(graph, cluster, "mcmcc")


def test_every_registered_strategy_places_from_python(small):
    graph, cluster = small
    quick = {"mcmc": {"steps": 100}, "random": {"samples": 2}, "placeto": {"episodes": 2}, "quickp": {"time_limit": "5s"}}
    for name in placesim.strategies().query("kind == 'placement'")["name"]:
        if name == "python":
            continue
        r = placesim.place(graph, cluster, name, **quick.get(name, {}))
        assert len(r.placement) == graph.num_operators, name
        assert placesim.evaluate(graph, cluster, r.placement).latency > 0, name


def test_a_scenario_of_jobs_reads_and_runs(tmp_path):
    # Two jobs on two leaves of two 2-GPU servers (scenarios/README.md, "jobs"): a record per job
    # and allocation, each with its slowdown.
    spec = {"name": "jobs",
            "cluster": {"type": "spine-leaf", "servers": 4, "servers_per_leaf": 2, "spines": 1, "gpus_per_server": 2,
                        "nic_bandwidth": "100Gbps", "oversubscription": 2},
            "jobs": [{"name": "a", "graph": {"builtin": "fig3.1"}, "strategy": "round-robin", "gpus": 2},
                     {"name": "b", "graph": {"builtin": "fig3.1"}, "strategy": "single-device", "gpus": [4, 5]}],
            "allocation": ["packed", "spread"],
            "simulation": {"engine": "flow", "trace": False}}
    s = placesim.load_scenario(spec)
    assert s.graph is None
    assert [st["name"] for st in s.strategies] == ["packed", "spread"]
    assert [(j["name"], j["gpus"]) for j in s.jobs] == [("a", 2), ("b", [4, 5])]
    df = placesim.run_scenario(spec, output=str(tmp_path / "out"))
    assert list(df["key"]) == ["allocation=packed rep=0 job=a", "allocation=packed rep=0 job=b",
                               "allocation=spread rep=0 job=a", "allocation=spread rep=0 job=b"]
    slowdown = df["strategy_report"].apply(lambda r: r["slowdown"])
    assert (slowdown >= 1.0 - 1e-9).all()
    assert df["strategy_report"].apply(lambda r: r["shared"]["gpus"])[1] == [4, 5]
