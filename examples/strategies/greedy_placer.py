"""A placement strategy written in Python, for examples/python-strategy.yaml.

Greedy list placement: operators in topological order, each to the GPU where it can start
earliest given its inputs' arrival (the cluster's transfer times) and the GPU's queue, among the
GPUs with memory left. About what HEFT does, in a few lines of Python.
"""
import numpy as np


class GreedyPlacer:
    def __init__(self, memory_slack=0.95):
        self.memory_slack = memory_slack

    def place(self, graph, cluster, deadline):
        ops, tensors = graph.operator_arrays(), graph.tensor_arrays()
        n, gpus = graph.num_operators, cluster.num_gpus
        capacity = np.asarray(cluster.gpus()["memory_bytes"], dtype=float) * self.memory_slack
        inputs = [[] for _ in range(n)]
        indegree = np.zeros(n, dtype=int)
        for e, (s, d) in enumerate(zip(tensors["src"], tensors["dst"])):
            inputs[d].append((s, tensors["bytes"][e]))
            indegree[d] += 1
        succ = [[] for _ in range(n)]
        for s, d in zip(tensors["src"], tensors["dst"]):
            succ[s].append(d)
        ready = [i for i in range(n) if indegree[i] == 0]
        placement = np.zeros(n, dtype=np.int32)
        finish, gpu_free, used = np.zeros(n), np.zeros(gpus), np.zeros(gpus)
        cls_gpu = {}
        while ready:
            op = ready.pop()
            cls = ops["colocation_class"][op]
            choices = [cls_gpu[cls]] if cls >= 0 and cls in cls_gpu else range(gpus)
            best, best_start = None, np.inf
            for g in choices:
                if used[g] + ops["memory_bytes"][op] > capacity[g] and len(choices) > 1:
                    continue
                arrive = max([finish[s] + cluster.transfer_time(int(placement[s]), g, float(b)) for s, b in inputs[op]],
                             default=0.0)
                start = max(arrive, gpu_free[g])
                if start < best_start:
                    best, best_start = g, start
            if best is None:
                best = int(np.argmin(used))
            placement[op] = best
            if cls >= 0:
                cls_gpu[cls] = best
            finish[op] = best_start + ops["compute_s"][op]
            gpu_free[best] = finish[op]
            used[best] += ops["memory_bytes"][op]
            for d in succ[op]:
                indegree[d] -= 1
                if indegree[d] == 0:
                    ready.append(d)
        return placement, {"estimated_latency_s": float(finish.max())}
