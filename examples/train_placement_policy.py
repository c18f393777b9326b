#!/usr/bin/env python3
"""Learned placement: a small policy trained with REINFORCE (PyTorch) on placesim.PlacementEnv,
Placeto's MDP, then compared with random placement on the same zoo graph and cluster.

The graph is the quickstart's (4-layer BERT, fused, from the model zoo) cut into operator groups;
the cluster its 8-GPU spine-leaf. Every step the policy moves one group to a GPU, seeing the group's
compute and memory, each GPU's load and memory, and where the group's tensors go; the reward is the
latency the move saved under contention (the flow engine). A few minutes of training on 2 cores.

  PYTHONPATH=build/python /usr/bin/python3 examples/train_placement_policy.py [--seconds 180]
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "build", "python"))
import numpy as np  # noqa: E402

import placesim  # noqa: E402

try:
    import torch
except ImportError:
    sys.exit(f"this example needs PyTorch for {sys.executable}: Debian's python3-torch is installed for /usr/bin/python3")


def make_policy(obs_dim, gpus):
    return torch.nn.Sequential(torch.nn.Linear(obs_dim, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
                               torch.nn.Linear(64, gpus))


def episode(env, policy, rng_seed, greedy=False):
    """One pass over the groups; returns (log-probabilities, rewards, final latency)."""
    obs, info = env.reset(seed=rng_seed)
    log_probs, rewards = [], []
    done = False
    while not done:
        logits = policy(torch.as_tensor(obs))
        if greedy:
            action = int(torch.argmax(logits))
        else:
            dist = torch.distributions.Categorical(logits=logits)
            a = dist.sample()
            log_probs.append(dist.log_prob(a))
            action = int(a)
        obs, reward, done, _, info = env.step(action)
        rewards.append(reward)
    return log_probs, rewards, info


def train(env, policy, seconds, batch, seed):
    """REINFORCE with a per-step moving baseline; returns the episodes run and, as Placeto reports,
    the best placement found on the way (by the cost: latency, and memory)."""
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    baseline = np.zeros(env.num_groups)
    started, episodes, updates = time.perf_counter(), 0, 0
    best = None
    while time.perf_counter() - started < seconds:
        loss = 0.0
        for _ in range(batch):
            log_probs, rewards, info = episode(env, policy, seed + episodes)
            episodes += 1
            if best is None or info["cost"] < best["cost"]:
                best = info
            returns = np.cumsum(rewards[::-1])[::-1]  # reward to go
            baseline = 0.95 * baseline + 0.05 * returns
            advantage = torch.as_tensor(returns - baseline, dtype=torch.float32)
            loss = loss - (torch.stack(log_probs) * advantage).sum()
        optimizer.zero_grad()
        (loss / batch).backward()
        optimizer.step()
        updates += 1
        if updates % 20 == 0:
            print(f"  {time.perf_counter() - started:6.1f} s  episode {episodes:5d}  last latency "
                  f"{info['latency'] * 1e3:8.3f} ms  best {best['latency'] * 1e3:8.3f} ms", flush=True)
    return episodes, best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180, help="training time")
    parser.add_argument("--groups", type=int, default=24, help="operator groups (steps per episode)")
    parser.add_argument("--batch", type=int, default=8, help="episodes per update")
    parser.add_argument("--seed", type=int, default=0)
    a = parser.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    s = placesim.load_scenario(os.path.join(HERE, "..", "scenarios", "quickstart.yaml"))
    env = placesim.PlacementEnv(s.graph, s.cluster, engine="flow", groups=a.groups, seed=a.seed)
    print(f"graph: {s.graph.num_operators} operators in {env.num_groups} groups; cluster: {s.cluster.description}")
    policy = make_policy(env.observation_space.shape[0], env.action_space.n)
    episodes, best_found = train(env, policy, a.seconds, a.batch, a.seed)

    # Evaluation, by the flow engine: from 20 random starting placements the policy's placement,
    # greedy (its most likely GPU each step) and sampled, against random placement (a uniform GPU
    # per group) and single-device on the same graph.
    rng = np.random.default_rng(a.seed + 1)
    with torch.no_grad():
        greedy = [episode(env, policy, 10_000 + k, greedy=True)[2]["latency"] for k in range(20)]
        sampled = [episode(env, policy, 20_000 + k)[2]["latency"] for k in range(20)]
    random_latency = []
    for _ in range(200):
        group_gpu = rng.integers(env.num_gpus, size=env.num_groups)
        random_latency.append(placesim.evaluate(s.graph, s.cluster, group_gpu[env.group_of]).latency)
    single = placesim.evaluate(s.graph, s.cluster, placesim.place(s.graph, s.cluster, "single-device").placement).latency
    check = placesim.evaluate(s.graph, s.cluster, best_found["placement"], engine="all")
    print(f"trained on {episodes} episodes in {a.seconds:.0f} s; latency by the flow engine:")
    print(f"policy, greedy           {np.mean(greedy) * 1e3:8.3f} ms mean of 20")
    print(f"policy, sampled          {np.mean(sampled) * 1e3:8.3f} ms mean of 20, {np.min(sampled) * 1e3:8.3f} ms best")
    print(f"best found in training   {best_found['latency'] * 1e3:8.3f} ms (SimGrid {check.latencies['simgrid'] * 1e3:.3f} ms, "
          f"peak memory {check.peak_memory / 2**30:.2f} GiB{', OOM' if check.oom else ''})")
    print(f"random placement         {np.mean(random_latency) * 1e3:8.3f} ms mean of {len(random_latency)}, "
          f"{np.min(random_latency) * 1e3:8.3f} ms best")
    print(f"single-device            {single * 1e3:8.3f} ms")
    beats = max(np.mean(greedy), np.mean(sampled)) < np.mean(random_latency)
    print("the policy beats random placement" if beats else "the policy does NOT beat random placement")
    return 0 if beats else 1


if __name__ == "__main__":
    sys.exit(main())
