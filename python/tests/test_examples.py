"""The examples (examples/*.py) run as the docs say, quickly."""
import os
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

EXAMPLES = os.path.join(SOURCE_DIR, "examples")


def run(script, *args, timeout=600):
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_evaluate_loop():
    out = run("evaluate_loop.py", "--seconds", 2)
    assert "evaluations in" in out and "m-etf + local search" in out


def test_python_strategy_in_a_scenario(tmp_path):
    out = run("python_strategy.py", "-o", tmp_path / "out")
    assert "greedy-python" in out and "greedy-python-tight" in out


def test_sweep_to_a_dataframe_and_a_plot(tmp_path):
    pytest.importorskip("matplotlib")
    out = run("sweep_dataframe.py", "-o", tmp_path / "out")
    assert "flow latency (ms)" in out
    assert (tmp_path / "out" / "latency-by-bandwidth.png").stat().st_size > 1000


def test_a_trained_policy_beats_random_placement():
    pytest.importorskip("torch")
    out = run("train_placement_policy.py", "--seconds", 45)
    assert "the policy beats random placement" in out
