#include "sim/models/builtin_graphs.h"

#include <cmath>
#include <fmt/format.h>
#include <random>

namespace placesim {

Graph fig31_graph(double bandwidth) {
  Graph g;
  g.add_operator({"A", "op", 5e-6, 0});
  g.add_operator({"B", "op", 10e-6, 0});
  g.add_operator({"C", "op", 5e-6, 0});
  g.add_tensor(0, 1, 5e-6 * bandwidth);
  g.add_tensor(0, 2, 5e-6 * bandwidth);
  g.finalize("builtin fig3.1");
  return g;
}

std::size_t synthetic_operator_count(const SyntheticGraphConfig& c) {
  const std::size_t per_layer = 2 + static_cast<std::size_t>(c.branches) * c.ops_per_branch;
  // input + forward + loss + backward + one update per weighted (branch) operator
  return 2 + 2 * c.layers * per_layer + static_cast<std::size_t>(c.layers) * c.branches * c.ops_per_branch;
}

Graph synthetic_training_graph(const SyntheticGraphConfig& c) {
  std::mt19937_64 rng(c.seed);
  std::lognormal_distribution<double> spread(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  // exp(sigma^2 / 2) is the mean of the unit log-normal; divide it out so means are as asked.
  const double norm = std::exp(0.5);
  auto compute = [&](bool heavy) {
    if (!heavy && unit(rng) < 1.0 / 3) return 0.0;  // bookkeeping operators: reshape, cast, ...
    return c.mean_compute_s * spread(rng) / norm;
  };
  auto tensor = [&] { return std::round(c.mean_tensor_bytes * spread(rng) / norm); };

  Graph g;
  g.add_operator({"input", "Placeholder", 0.0, 0.0});
  OpId prev = 0;
  std::vector<OpId> forward;          // forward operators carrying weights (the branch operators)
  std::vector<OpId> forward_all;      // every forward operator, in creation order
  for (int l = 0; l < c.layers; ++l) {
    const OpId split = g.add_operator({fmt::format("layer{}/split", l), "Split", compute(false), 0.0});
    g.add_tensor(prev, split, tensor());
    forward_all.push_back(split);
    std::vector<std::pair<OpId, double>> join_inputs;
    for (int b = 0; b < c.branches; ++b) {
      OpId last = split;
      for (int k = 0; k < c.ops_per_branch; ++k) {
        const OpId op = g.add_operator({fmt::format("layer{}/branch{}/op{}", l, b, k), k == 0 ? "Conv2D" : "Relu",
                                        compute(k == 0), c.mean_memory_bytes * spread(rng) / norm});
        g.add_tensor(last, op, tensor());
        forward.push_back(op);
        forward_all.push_back(op);
        last = op;
      }
      join_inputs.emplace_back(last, tensor());
    }
    const OpId concat = g.add_operator({fmt::format("layer{}/concat", l), "ConcatV2", compute(false), 0.0});
    for (auto [src, bytes] : join_inputs) g.add_tensor(src, concat, bytes);
    forward_all.push_back(concat);
    prev = concat;
  }
  const OpId loss = g.add_operator({"loss", "SoftmaxCrossEntropy", compute(true), 0.0});
  g.add_tensor(prev, loss, tensor());

  // Backward: gradient operators in reverse order, each fed by the next gradient and by its own
  // forward activation (which is what makes training graphs wide and communication heavy).
  std::vector<OpId> grad_of(g.num_operators(), -1);
  OpId upstream = loss;
  for (auto it = forward_all.rbegin(); it != forward_all.rend(); ++it) {
    const Operator fwd = g.op(*it);
    const OpId grad = g.add_operator({fwd.name + "/grad", fwd.type + "Grad", 2 * fwd.compute_s, 0.0});
    g.add_tensor(upstream, grad, tensor());
    g.add_tensor(*it, grad, tensor());
    grad_of[*it] = grad;
    upstream = grad;
  }
  for (OpId w : forward) {
    const OpId update = g.add_operator({g.op(w).name + "/update", "ApplyAdam", compute(false), g.op(w).memory_bytes});
    const double gradient = tensor();  // the weight's gradient (data parallelism reduces it)
    g.add_tensor(grad_of[w], update, gradient, gradient > 0);
  }
  g.finalize("builtin synthetic");
  return g;
}

}  // namespace placesim
