"""Shared fixtures of the placesim Python tests (run by ctest: python/CMakeLists.txt sets
PYTHONPATH to build/python and PLACESIM_CLI to the placesim command of the same build)."""
import os
import subprocess
import sys

import pytest

SOURCE_DIR = os.environ.get("PLACESIM_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("PLACESIM_BUILD_DIR") or os.path.join(SOURCE_DIR, "build")
sys.path.insert(0, os.path.join(BUILD_DIR, "python"))

import placesim  # noqa: E402

CLI = os.environ.get("PLACESIM_CLI") or placesim.CLI
QUICKSTART = os.path.join(SOURCE_DIR, "scenarios", "quickstart.yaml")


def run_cli(*args, cwd=None):
    """Runs the placesim command; returns (exit code, stdout, stderr)."""
    p = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="session")
def quickstart():
    """The quickstart scenario read: its graph (4-layer BERT, fused) and its 8-GPU spine-leaf."""
    return placesim.load_scenario(QUICKSTART)


@pytest.fixture(scope="session")
def small():
    """A small graph and a 4-GPU cluster, for fast tests."""
    graph = placesim.load_graph({"builtin": "synthetic", "layers": 3, "branches": 3, "ops_per_branch": 2})
    cluster = placesim.cluster(type="nvlink-servers", gpus=4)
    return graph, cluster


def random_placement(graph, cluster, rng):
    """A uniformly random GPU per colocation class (and per operator outside any class)."""
    import numpy as np
    classes = graph.operator_arrays()["colocation_class"]
    per_op = rng.integers(cluster.num_gpus, size=graph.num_operators)
    per_class = rng.integers(cluster.num_gpus, size=max(graph.num_colocation_classes, 1))
    return np.where(classes >= 0, per_class[np.maximum(classes, 0)], per_op).astype(np.int32)
