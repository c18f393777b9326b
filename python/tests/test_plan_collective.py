"""placesim.plan and placesim.collective: the CLI's commands, the same numbers."""
import json
import re

import pytest

import placesim
from conftest import QUICKSTART, run_cli

H100 = {"type": "nvlink-servers", "gpus": 8, "gpus_per_server": 4, "gpu_memory": "80GiB"}


def test_collective_equals_the_cli_json():
    df = placesim.collective(QUICKSTART, op="all-reduce", algorithm="ring", bytes="1MiB:4MiB", engine="all")
    code, out, err = run_cli("collective", "--cluster", QUICKSTART, "--op", "all-reduce", "--algorithm", "ring",
                             "--bytes", "1MiB:4MiB", "--engine", "all", "--json")
    assert code == 0, err
    cli = [json.loads(line) for line in out.splitlines()]
    assert len(df) == len(cli) == 9  # 3 sizes x 3 engines
    for row, expected in zip(df.to_dict("records"), cli):
        for key, value in expected.items():
            if key != "wall_s":
                assert row[key] == value, key


def test_collective_on_a_cluster_made_in_python():
    c = placesim.cluster(type="fat-tree", k=4, gpus_per_server=1)
    df = placesim.collective(c, op="all-gather", bytes="1MiB", gpus=4, engine="flow")
    assert len(df) == 1 and df["time_s"][0] > 0 and df["gpus"][0] == 4


def cli_latency(text, engine):
    """The CLI's `<engine>   1.23 ms per iteration` line, in seconds."""
    m = re.search(rf"^{engine}\s+([\d.]+) (ns|us|ms|s) per iteration", text, re.M)
    return float(m.group(1)) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def test_plan_equals_the_cli(tmp_path):
    cluster_file = tmp_path / "c.yaml"
    cluster_file.write_text(json.dumps({"cluster": H100}))
    args = dict(model="gpt2", tp=2, pp=2, dp=2, micro_batches=4, zero=1, engine="all")
    mine = placesim.plan(placesim.load_cluster(cluster_file), **args)
    code, out, err = run_cli("plan", "--model", "gpt2", "--cluster", cluster_file, "--tp", 2, "--pp", 2, "--dp", 2,
                             "--micro-batches", 4, "--zero", 1, "--engine", "all")
    assert code == 0, err
    assert mine["feasible"] and len(mine["gpus"]) == 8
    for engine in ("evaluator", "flow", "simgrid"):
        assert mine["latencies"][engine] == pytest.approx(cli_latency(out, engine), rel=5e-3), engine
    assert f"{mine['operators']} operators, {mine['tensors']} tensors" in out
    # Where each engine's iteration went: the parts sum to its latency.
    for engine in ("evaluator", "flow", "simgrid"):
        parts = {k: v for k, v in mine["breakdown"][engine].items() if k != "slowest_gpu"}
        assert parts["compute"] > 0 and parts["data_parallel"] >= 0
        assert sum(parts.values()) == pytest.approx(mine["latencies"][engine], rel=1e-9), engine


def test_the_training_features_equal_the_cli(tmp_path):
    # Context parallelism, tensor-parallel overlap and the distributed optimizer by keyword, as the flags.
    cluster_file = tmp_path / "c.yaml"
    cluster_file.write_text(json.dumps({"cluster": H100}))
    args = dict(model="gpt2", tp=2, cp=2, dp=2, micro_batches=2, sequence_parallel=True, tp_comm_overlap=True,
                distributed_optimizer=True, engine="flow")
    mine = placesim.plan(placesim.load_cluster(cluster_file), **args)
    code, out, err = run_cli("plan", "--model", "gpt2", "--cluster", cluster_file, "--tp", 2, "--cp", 2, "--dp", 2,
                             "--micro-batches", 2, "--sequence-parallel", "--tp-comm-overlap", "--distributed-optimizer",
                             "--engine", "flow")
    assert code == 0, err
    assert mine["feasible"] and len(mine["gpus"]) == 8  # tp 2 x dp 2 x cp 2
    assert mine["latencies"]["flow"] == pytest.approx(cli_latency(out, "flow"), rel=5e-3)
    # The gradient reductions after the backward (Megatron's default), as --no-overlap-grad-reduce.
    after = placesim.plan(placesim.load_cluster(cluster_file), model="gpt2", dp=2, micro_batches=2,
                          overlap_grad_reduce=False, engine="flow")
    code, out, err = run_cli("plan", "--model", "gpt2", "--cluster", cluster_file, "--dp", 2, "--micro-batches", 2,
                             "--no-overlap-grad-reduce", "--engine", "flow")
    assert code == 0, err
    assert after["latencies"]["flow"] == pytest.approx(cli_latency(out, "flow"), rel=5e-3)
    overlapped = placesim.plan(placesim.load_cluster(cluster_file), model="gpt2", dp=2, micro_batches=2, engine="flow")
    assert after["latencies"]["flow"] > overlapped["latencies"]["flow"]
    # A misspelt keyword is said, not dropped.
    with pytest.raises(placesim.InputError, match="context_parallel: unknown keyword of plan"):
        placesim.plan(placesim.load_cluster(cluster_file), model="gpt2", context_parallel=2)


def test_every_option_of_the_cli_plan_is_a_keyword():
    # The keywords are the CLI's options under Python's names (--no-overlap-grad-reduce:
    # overlap_grad_reduce=False); what only a command line has (the cluster file, printing, traces)
    # is left out. A keyword the CLI lacks, or an option with no keyword, fails here.
    code, out, err = run_cli("plan", "--help")
    assert code == 0, err
    options = set(re.findall(r"^  --([a-z0-9-]+)", out, re.M))  # an option opens its line; its help is indented further
    cli_only = {"help", "cluster", "json", "trace", "chakra"}
    expected = {o[3:] if o.startswith("no-") else o for o in options - cli_only}
    expected = {o.replace("-", "_") for o in expected}
    with pytest.raises(placesim.InputError) as refused:
        placesim.plan(placesim.cluster(type="nvlink-servers", gpus=2), not_a_keyword=1)
    known = set(re.search(r"expected one of (.*)", str(refused.value)).group(1).split(", "))
    assert known == expected


def test_a_plan_that_does_not_fit_says_why():
    small = placesim.cluster(type="nvlink-servers", gpus=2, gpu_memory="1GiB")
    r = placesim.plan(small, model="gpt2", dp=2, engine="evaluator")
    assert not r["feasible"] and "GiB" in r["reason"] and r["latencies"] == {}


def test_a_planner_chooses_as_in_a_scenario(tmp_path):
    options = {"pp": 2, "dp": 2, "zero": 1, "micro_batches": 4}
    mine = placesim.plan(H100, model="gpt2", planner="megatron", engine="all", order="scheduler", **options)
    df = placesim.run_scenario({"name": "megatron", "workload": {"model": "gpt2"}, "cluster": H100,
                                "strategies": [{"name": "megatron", "options": options}],
                                "simulation": {"engine": "all", "trace": False}, "output": str(tmp_path / "out")})
    assert df["status"][0] == "ok"
    for engine in ("evaluator", "flow", "simgrid"):
        assert mine["latencies"][engine] == df[f"{engine}_latency"][0], engine
    assert mine["plan"]["pp"] == 2 and mine["search_seconds"] >= 0


def test_search_equals_the_cli(tmp_path):
    cluster = tmp_path / "c.yaml"
    cluster.write_text("cluster: {preset: dgx-h100, servers: 2}\n")
    space = dict(tp=[2, 4], pp=[1, 2], cp=[1], micro_batch_size=[1], recompute=["none"], optimizer=["distributed"],
                 tp_comm_overlap=["off"])
    r = placesim.search(placesim.load_cluster(cluster), model="llama2-7b", global_batch=16, top=2, **space)
    args = ["search", "--model", "llama2-7b", "--cluster", cluster, "--global-batch", "16", "--top", "2", "--json"]
    for key, values in space.items():
        args += ["--" + key.replace("_", "-"), ",".join(str(v) for v in values)]
    code, out, err = run_cli(*args)
    assert code == 0, err
    cli = json.loads(out)
    assert [p["iteration_s"] for p in r["plans"]] == [p["iteration_s"] for p in cli["plans"]]
    assert list(r["frame"]["iteration_s"]) == [p["iteration_s"] for p in cli["plans"]]
    assert {"mfu", "tokens_per_s_per_gpu", "tp", "pp", "dp", "compute_s", "command"} <= set(r["frame"].columns)
    with pytest.raises(placesim.InputError, match="--top"):
        placesim.search(placesim.load_cluster(cluster), model="llama2-7b", global_batch=16, top=0)


def test_a_framework_profile_is_its_flags_written_out(tmp_path):
    # framework="deepspeed" runs ZeRO 1, the reductions after the backward and the even split, as
    # those keywords given by hand; a keyword the caller gives keeps its value.
    cluster_file = tmp_path / "c.yaml"
    cluster_file.write_text(json.dumps({"cluster": H100}))
    cluster = placesim.load_cluster(cluster_file)
    args = dict(model="gpt2", tp=2, pp=2, dp=2, micro_batches=4, engine="flow")
    profiled = placesim.plan(cluster, framework="deepspeed", **args)
    by_hand = placesim.plan(cluster, zero=1, overlap_grad_reduce=False, stage_split="even", **args)
    assert profiled["latencies"]["flow"] == by_hand["latencies"]["flow"]
    assert placesim.plan(cluster, framework="deepspeed", zero=0, **args)["latencies"]["flow"] == \
        placesim.plan(cluster, overlap_grad_reduce=False, stage_split="even", **args)["latencies"]["flow"]
    with pytest.raises(placesim.InputError, match="virtual_stages: deepspeed runs 1F1B without interleaving"):
        placesim.plan(cluster, framework="deepspeed", virtual_stages=2, **args)
