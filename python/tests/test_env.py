"""placesim.PlacementEnv: Gymnasium's conventions, Placeto's MDP."""
import numpy as np
import pytest

import placesim


@pytest.fixture(scope="module")
def env(quickstart):
    return placesim.PlacementEnv(quickstart.graph, quickstart.cluster, engine="flow", groups=16, seed=3)


def test_reset_and_step_follow_gymnasium(env, quickstart):
    obs, info = env.reset(seed=1)
    assert isinstance(obs, np.ndarray) and obs.dtype == np.float32 and obs.shape == env.observation_space.shape
    assert env.observation_space.contains(obs)
    assert env.action_space.n == quickstart.cluster.num_gpus
    start = info["latency"]
    total, steps, terminated = 0.0, 0, False
    while not terminated:
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert isinstance(reward, float) and truncated is False
        total += reward
        steps += 1
    assert steps == env.num_groups
    # The rewards add up to the relative improvement of the episode's cost.
    assert total == pytest.approx((info["start_cost"] - info["cost"]) / info["start_cost"])
    # The latency is the flow engine's, as placesim.evaluate measures it.
    assert info["latency"] == placesim.evaluate(quickstart.graph, quickstart.cluster, info["placement"]).latency
    assert start > 0
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    with pytest.raises(ValueError, match="GPU index"):
        env.reset()
        env.step(env.action_space.n)


def test_same_seed_same_episode(env):
    def run(seed):
        env.reset(seed=seed)
        out = []
        done = False
        while not done:
            _, r, done, _, info = env.step(env.action_space.sample())
            out.append(r)
        return out, info["placement"]
    a, pa = run(5)
    b, pb = run(5)
    assert a == b and np.array_equal(pa, pb)


def test_groups_keep_colocation_classes_whole():
    g = placesim.make_graph({"name": list("abcdef"), "compute_s": [1.0] * 6, "colocation_class": [0, -1, -1, -1, -1, 0]},
                            {"src": [0, 1, 2, 3, 4], "dst": [1, 2, 3, 4, 5], "bytes": [1.0] * 5})
    c = placesim.cluster(type="nvlink-servers", gpus=2)
    env = placesim.PlacementEnv(g, c, groups=3)
    assert env.group_of[0] == env.group_of[5]
    env.reset(seed=0)
    for _ in range(env.num_groups):
        _, _, done, _, info = env.step(1)
    assert done and set(info["placement"]) == {1}


def test_everything_on_one_gpu_beats_random_here(env, quickstart):
    """A sanity check the example's claim rests on: on this cluster, random placement is slow."""
    env.reset(seed=0)
    for _ in range(env.num_groups):
        _, _, _, _, info = env.step(0)
    rng = np.random.default_rng(0)
    random = [placesim.evaluate(quickstart.graph, quickstart.cluster, rng.integers(8, size=env.num_groups)[env.group_of]).latency
              for _ in range(20)]
    assert info["latency"] < np.mean(random)
