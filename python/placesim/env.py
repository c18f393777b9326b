"""placesim.PlacementEnv: learned device placement as Placeto's Markov decision process.

Placeto (Addanki et al., 2019) improves a placement one operator group at a time: the state is the
current placement of every group and the group whose turn it is, the action a GPU for that group,
and the reward how much the move sped the iteration up. An episode visits every group once. This
environment follows the Gymnasium convention (``reset() -> (observation, info)``, ``step(action) ->
(observation, reward, terminated, truncated, info)``) without depending on Gymnasium: its
``action_space`` and ``observation_space`` have the ``n``/``shape``, ``sample()`` and ``seed()`` a
Gymnasium wrapper needs.

Latencies come from :class:`placesim.CostModel`: ``engine="flow"`` (the evaluator's order under
contention, what SimGrid measures) or ``"list"`` (the contention-free list schedule the papers
search with). A placement that exceeds some GPU's memory costs more in proportion to the overflow
(``oom_penalty``), so that the policy learns to fit.
"""
from typing import Optional

import numpy as np

from . import _placesim


class Discrete:
    """The actions: a GPU index in ``range(n)`` (Gymnasium's ``Discrete``, without Gymnasium)."""

    def __init__(self, n: int, rng: np.random.Generator):
        self.n = n
        self.shape = ()
        self.dtype = np.int64
        self._rng = rng

    def sample(self) -> int:
        return int(self._rng.integers(self.n))

    def seed(self, seed: Optional[int] = None):
        self._rng = np.random.default_rng(seed)

    def contains(self, x) -> bool:
        return isinstance(x, (int, np.integer)) and 0 <= int(x) < self.n

    def __repr__(self):
        return f"Discrete({self.n})"


class Box:
    """The observations: float32 vectors of ``shape`` (Gymnasium's ``Box``, without Gymnasium)."""

    def __init__(self, shape, low=-np.inf, high=np.inf):
        self.shape = tuple(shape)
        self.dtype = np.float32
        self.low = low
        self.high = high

    def contains(self, x) -> bool:
        return isinstance(x, np.ndarray) and x.shape == self.shape

    def __repr__(self):
        return f"Box({self.shape}, float32)"


def operator_groups(graph, groups: int) -> np.ndarray:
    """Each operator's group: ``groups`` runs of consecutive operators in topological order of
    about equal compute time, a colocation class kept whole (in its first member's group)."""
    ops = graph.operator_arrays()
    tensors = graph.tensor_arrays()
    n = len(ops["compute_s"])
    order = _topological_order(n, tensors["src"], tensors["dst"])
    compute = np.asarray(ops["compute_s"], dtype=float)
    total = compute.sum()
    share = total / groups if total > 0 else 1.0
    group = np.zeros(n, dtype=np.int64)
    acc = 0.0
    for i, op in enumerate(order):
        g = min(groups - 1, int(acc / share) if total > 0 else i * groups // n)
        group[op] = g
        acc += compute[op]
    first_of_class = {}
    for op in order:
        cls = int(ops["colocation_class"][op])
        if cls >= 0:
            group[op] = first_of_class.setdefault(cls, group[op])
    # Dense numbering of the groups that remain.
    _, dense = np.unique(group, return_inverse=True)
    return dense.astype(np.int64)


def _topological_order(n, src, dst):
    indegree = np.zeros(n, dtype=np.int64)
    np.add.at(indegree, dst, 1)
    succ = [[] for _ in range(n)]
    for s, d in zip(src.tolist(), dst.tolist()):
        succ[s].append(d)
    ready = [i for i in range(n) if indegree[i] == 0]
    order = []
    while ready:
        op = ready.pop(0) if len(ready) < 64 else ready.pop()
        order.append(op)
        for d in succ[op]:
            indegree[d] -= 1
            if indegree[d] == 0:
                ready.append(d)
    return order


class PlacementEnv:
    """Placeto's MDP on one graph and cluster.

    ``reset(seed=None)`` starts an episode from a random placement (``initial="random"``) or all
    on GPU 0 (``"single"``) and returns ``(observation, info)``; ``step(gpu)`` moves the current
    group to ``gpu`` and returns ``(observation, reward, terminated, truncated, info)``, the reward
    being the latency saved by the move divided by the latency the episode started from (so an
    episode's rewards add up to its relative improvement). ``terminated`` is True once every group
    has moved once; ``truncated`` is always False.

    The observation (float32, ``observation_space.shape == (2 + 4 * gpus,)``) is what a policy
    needs to place the current group, whatever the graph's size: the group's share of the compute
    and of the memory, then per GPU the share of the compute placed there, its memory use as a
    fraction of its capacity, the share of the current group's tensor bytes exchanged with the
    operators placed there, and whether the group is there now. ``info`` has the placement (a GPU
    per operator), the latency (seconds), the group and the peak memory."""

    def __init__(self, graph, cluster, engine: str = "flow", groups: int = 32, initial: str = "random",
                 oom_penalty: float = 10.0, seed: Optional[int] = None):
        if engine not in ("flow", "list"):
            raise ValueError(f"engine: expected flow or list, got {engine!r}")
        if initial not in ("random", "single"):
            raise ValueError(f"initial: expected random or single, got {initial!r}")
        self.graph = graph
        self.cluster = cluster
        self.engine = engine
        self.initial = initial
        self.oom_penalty = float(oom_penalty)
        self._cost = _placesim.CostModel(graph, cluster, engine)
        self.group_of = operator_groups(graph, max(1, min(groups, graph.num_operators)))
        self.num_groups = int(self.group_of.max()) + 1
        self.num_gpus = cluster.num_gpus
        ops = graph.operator_arrays()
        tensors = graph.tensor_arrays()
        self._compute = np.bincount(self.group_of, weights=ops["compute_s"], minlength=self.num_groups)
        self._memory = np.bincount(self.group_of, weights=ops["memory_bytes"], minlength=self.num_groups)
        self._capacity = np.asarray(cluster.gpus()["memory_bytes"], dtype=float)
        gs, gd = self.group_of[tensors["src"]], self.group_of[tensors["dst"]]
        cross = gs != gd
        # Bytes between each pair of groups, both ways.
        self._traffic = np.zeros((self.num_groups, self.num_groups))
        np.add.at(self._traffic, (gs[cross], gd[cross]), tensors["bytes"][cross])
        self._traffic += self._traffic.T
        self._rng = np.random.default_rng(seed)
        self.action_space = Discrete(self.num_gpus, np.random.default_rng(seed))
        self.observation_space = Box((2 + 4 * self.num_gpus,))
        self.group_gpu = np.zeros(self.num_groups, dtype=np.int64)
        self._turn = 0
        self._start_cost = self._cost_now = 1.0
        self._latency = float("nan")

    # -- the MDP ---------------------------------------------------------------------------------

    def placement(self) -> np.ndarray:
        """The current placement: a GPU per operator (int32)."""
        return self.group_gpu[self.group_of].astype(np.int32)

    def cost(self, group_gpu: Optional[np.ndarray] = None) -> float:
        """The latency of a group placement, raised by ``oom_penalty`` x the worst memory overflow."""
        gg = self.group_gpu if group_gpu is None else group_gpu
        latency = self._cost.latency(gg[self.group_of].astype(np.int32))
        if group_gpu is None:
            self._latency = latency
        used = np.bincount(gg, weights=self._memory, minlength=self.num_gpus)
        overflow = max(0.0, float(np.max(used / self._capacity)) - 1.0)
        return latency * (1.0 + self.oom_penalty * overflow)

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self.action_space.seed(seed)
        if self.initial == "random":
            self.group_gpu = self._rng.integers(self.num_gpus, size=self.num_groups)
        else:
            self.group_gpu = np.zeros(self.num_groups, dtype=np.int64)
        self._turn = 0
        self._start_cost = self._cost_now = self.cost()
        return self._observation(), self._info()

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"action: expected a GPU index in [0, {self.num_gpus}), got {action!r}")
        if self._turn >= self.num_groups:
            raise RuntimeError("the episode has ended: call reset()")
        self.group_gpu[self._turn] = int(action)
        new_cost = self.cost()
        reward = (self._cost_now - new_cost) / self._start_cost
        self._cost_now = new_cost
        self._turn += 1
        terminated = self._turn >= self.num_groups
        return self._observation(), float(reward), terminated, False, self._info()

    # -- what the policy sees --------------------------------------------------------------------

    def _observation(self) -> np.ndarray:
        g = min(self._turn, self.num_groups - 1)
        d = self.num_gpus
        total_compute = self._compute.sum() or 1.0
        total_memory = self._memory.sum() or 1.0
        load = np.bincount(self.group_gpu, weights=self._compute, minlength=d) / total_compute
        memory = np.bincount(self.group_gpu, weights=self._memory, minlength=d) / self._capacity
        traffic = np.bincount(self.group_gpu, weights=self._traffic[g], minlength=d)
        traffic = traffic / (traffic.sum() or 1.0)
        here = np.zeros(d)
        here[self.group_gpu[g]] = 1.0
        head = [self._compute[g] / total_compute, self._memory[g] / total_memory]
        return np.concatenate([head, load, memory, traffic, here]).astype(np.float32)

    def _info(self) -> dict:
        return {"latency": self._latency, "cost": self._cost_now, "group": self._turn,
                "placement": self.placement(), "start_cost": self._start_cost}
