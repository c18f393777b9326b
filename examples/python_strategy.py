#!/usr/bin/env python3
"""A strategy written in Python in a scenario beside the C++ strategies: run, resumed and reported
as `placesim run` would (examples/python-strategy.yaml, examples/strategies/greedy_placer.py).

  PYTHONPATH=build/python /usr/bin/python3 examples/python_strategy.py [-o OUT]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "build", "python"))
import placesim  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="out/python-strategy")
    a = parser.parse_args()
    df = placesim.run_scenario(os.path.join(HERE, "python-strategy.yaml"), a.output, jobs=2, fresh=True)
    columns = ["label", "status", "evaluator_latency", "flow_latency", "simgrid_latency", "peak_memory", "search_time"]
    print(df[columns].to_string(index=False))
    # Running again resumes: every point is there already, nothing runs.
    again = placesim.run_scenario(os.path.join(HERE, "python-strategy.yaml"), a.output, resume=True)
    assert again["simgrid_latency"].tolist() == df["simgrid_latency"].tolist()
    print(f"results: {a.output}/results.jsonl (`placesim report {a.output}` makes the table and plots)")
    return 0 if (df["status"] == "ok").all() else 1


if __name__ == "__main__":
    sys.exit(main())
