#include "sim/models/builder.h"

#include <algorithm>
#include <cassert>
#include <fmt/format.h>
#include <stdexcept>

#include "sim/core/errors.h"
#include "sim/core/units.h"

namespace placesim::models {

double dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::F64: return 8;
    case DType::I8: return 1;
    case DType::I16: return 2;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::Bool: return 1;
    case DType::C64: return 8;
    case DType::Resource: return 0;
  }
  return 4;
}

std::int64_t num_elements(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::logic_error(fmt::format("model zoo: shapes do not broadcast ({} vs {})", da, db));
    out[i] = std::max(da, db);
  }
  return out;
}

namespace {

// Operators that run no kernel: sources, variable reads, metadata-only views and shape arithmetic.
bool is_bookkeeping(std::string_view type) {
  static const std::string_view kTypes[] = {
      "Placeholder", "Const", "ReadVariableOp", "VariableV2", "Reshape", "Squeeze", "ExpandDims", "Identity",
      "IdentityN", "Shape", "ShapeN", "StopGradient", "NoOp", "ConcatOffset", "InvertPermutation", "Range",
      "BroadcastGradientArgs"};
  return std::find(std::begin(kTypes), std::end(kTypes), type) != std::end(kTypes);
}

bool is_integer(DType d) {
  return d == DType::I8 || d == DType::I16 || d == DType::I32 || d == DType::I64 || d == DType::Bool;
}

}  // namespace

ModelBuilder::ModelBuilder(Options options) : options_(options) {
  ops_.reserve(4096);
  tensors_.reserve(8192);
}

ModelBuilder::Scope::Scope(ModelBuilder& b, std::string_view name) : b_(b), old_size_(b.scope_.size()) {
  if (!b_.scope_.empty()) b_.scope_ += '/';
  b_.scope_ += name;
}
ModelBuilder::Scope::~Scope() { b_.scope_.resize(old_size_); }

std::string ModelBuilder::unique_name(std::string_view leaf) {
  std::string full = scope_.empty() ? std::string(leaf) : scope_ + "/" + std::string(leaf);
  int& uses = name_uses_[full];
  if (uses++ == 0) return full;
  for (;;) {
    std::string candidate = fmt::format("{}_{}", full, uses - 1);
    auto [it, inserted] = name_uses_.try_emplace(candidate, 1);
    if (inserted) return candidate;
    ++uses;
  }
}

Tid ModelBuilder::new_tensor(TensorSpec spec, std::int32_t producer) {
  BuiltTensor t;
  t.bytes = static_cast<double>(num_elements(spec.shape)) * dtype_bytes(spec.dtype);
  t.shape = std::move(spec.shape);
  t.dtype = spec.dtype;
  t.producer = producer;
  tensors_.push_back(std::move(t));
  return static_cast<Tid>(tensors_.size() - 1);
}

std::int32_t ModelBuilder::emit(std::string_view leaf, std::string_view type, std::vector<Tid> inputs,
                                std::vector<TensorSpec> outputs, double flops, double macs) {
  const auto id = static_cast<std::int32_t>(ops_.size());
  BuiltOp op;
  op.name = unique_name(leaf);
  op.type = std::string(type);
  op.phase = phase_;
  op.flops = flops;
  op.macs = macs;
  // Integer ops on a handful of elements are shape arithmetic that TensorFlow keeps on the host.
  bool host = !outputs.empty();
  for (const auto& o : outputs) host = host && is_integer(o.dtype) && num_elements(o.shape) <= 16;
  op.kernel = !is_bookkeeping(type) && !host;
  double bytes = 0;
  for (Tid t : inputs) {
    bytes += tensors_[t].bytes;
    BuiltTensor& in = tensors_[t];
    if (phase_ == Phase::Forward && in.read_of >= 0) vars_[in.read_of].forward_users.push_back(id);
    if (phase_ == Phase::Backward && in.producer >= 0 && ops_[in.producer].phase == Phase::Forward && in.read_of < 0)
      in.saved_for_backward = true;
  }
  op.inputs = std::move(inputs);
  for (auto& o : outputs) {
    Tid t = new_tensor(std::move(o), id);
    bytes += tensors_[t].bytes;
    op.outputs.push_back(t);
  }
  op.bytes_moved = bytes;
  ops_.push_back(std::move(op));
  return id;
}

Tid ModelBuilder::input(std::string_view name, Shape shape, DType dtype) {
  return emit1(name, "Placeholder", {}, {std::move(shape), dtype}, 0);
}

Tid ModelBuilder::constant(std::string_view leaf, Shape shape, DType dtype) {
  return emit1(leaf, "Const", {}, {std::move(shape), dtype}, 0);
}

Pid ModelBuilder::variable(std::string_view leaf, Shape shape, bool trainable) {
  BuiltVariable v;
  v.name = scope_.empty() ? std::string(leaf) : scope_ + "/" + std::string(leaf);
  v.shape = std::move(shape);
  v.trainable = trainable;
  vars_.push_back(std::move(v));
  fused_var_tensor_.push_back(kNoTensor);
  return static_cast<Pid>(vars_.size() - 1);
}

Tid ModelBuilder::read(Pid v, std::string_view hint, bool own_resource, Tid after) {
  BuiltVariable& var = vars_[v];
  const double slots = options_.optimizer == OptimizerKind::Adam ? 3.0 : 1.0;  // Adam keeps m and v
  const double storage = static_cast<double>(num_elements(var.shape)) * 4.0 * (var.trainable ? slots : 1.0);
  if (fused()) {
    // One source op per variable, named after it, shared by every read.
    if (fused_var_tensor_[v] == kNoTensor) {
      const std::string saved = scope_;
      scope_.clear();
      const std::int32_t op = emit(var.name, "VariableV2", {}, {{var.shape, DType::F32}}, 0);
      scope_ = saved;
      ops_[op].variable = v;
      ops_[op].resident_bytes = storage;
      vars_[v].ops.push_back(op);
      const Tid t = out(op);
      tensors_[t].read_of = v;
      tensors_[t].requires_grad = vars_[v].trainable;
      fused_var_tensor_[v] = t;
      vars_[v].reads.push_back(t);
    }
    return fused_var_tensor_[v];
  }
  const std::string prefix = hint.empty() ? std::string("ReadVariableOp") : std::string(hint) + "/ReadVariableOp";
  Tid resource = kNoTensor;
  if (own_resource || var.ops.empty()) {
    const std::int32_t op = emit(prefix + "/resource", "Placeholder", {}, {{{}, DType::Resource}}, 0);
    ops_[op].variable = v;
    if (vars_[v].ops.empty()) ops_[op].resident_bytes = storage;
    vars_[v].ops.push_back(op);
    resource = out(op);
  } else {
    resource = out(var.ops.front());
  }
  std::vector<Tid> inputs{resource};
  if (after != kNoTensor) inputs.push_back(after);
  const std::int32_t op = emit(prefix, "ReadVariableOp", std::move(inputs), {{vars_[v].shape, DType::F32}}, 0);
  ops_[op].variable = v;
  vars_[v].ops.push_back(op);
  const Tid t = out(op);
  tensors_[t].read_of = v;
  tensors_[t].requires_grad = vars_[v].trainable && phase_ == Phase::Forward;
  if (phase_ == Phase::Forward) vars_[v].reads.push_back(t);
  return t;
}

std::int32_t ModelBuilder::assign(Pid v, std::string_view leaf, std::string_view type, Tid value, double flops_per_element) {
  if (vars_[v].ops.empty() && !fused()) {
    const std::int32_t res = emit(std::string(leaf) + "/resource", "Placeholder", {}, {{{}, DType::Resource}}, 0);
    ops_[res].variable = v;
    ops_[res].resident_bytes = static_cast<double>(num_elements(vars_[v].shape)) * 4.0;
    vars_[v].ops.push_back(res);
  }
  const Tid resource = fused() ? read(v) : out(vars_[v].ops.front());
  const std::int32_t op = emit(leaf, type, {resource, value}, {{{}, DType::Resource}},
                               flops_per_element * static_cast<double>(num_elements(tensors_[value].shape)));
  // Reads the variable, reads the value, writes the variable.
  set_bytes_moved(op, 3 * tensors_[value].bytes);
  ops_[op].variable = v;
  vars_[v].ops.push_back(op);
  return op;
}

// ---------------------------------------------------------------------------------------------
// autodiff

void ModelBuilder::differentiable(std::int32_t op, GradFn fn) {
  bool any = false;
  for (Tid t : ops_[op].inputs) any = any || tensors_[t].requires_grad;
  if (!any) return;
  for (Tid t : ops_[op].outputs)
    if (!is_integer(tensors_[t].dtype)) tensors_[t].requires_grad = true;
  tape_.push_back({op, std::move(fn)});
}

void ModelBuilder::add_grad(Tid x, Tid grad) {
  if (x == kNoTensor || grad == kNoTensor || !tensors_[x].requires_grad) return;
  grads_[x].push_back(grad);
}

Tid ModelBuilder::gradient_of(Tid t) {
  auto it = grads_.find(t);
  if (it == grads_.end() || it->second.empty()) return kNoTensor;
  if (it->second.size() > 1) {
    std::vector<Tid> parts = std::move(it->second);
    const Tid sum = emit1("AddN", "AddN", parts, {tensors_[t].shape, tensors_[t].dtype},
                          static_cast<double>(num_elements(tensors_[t].shape)) * static_cast<double>(parts.size() - 1));
    grads_[t] = {sum};
    return sum;
  }
  return it->second.front();
}

void ModelBuilder::backward(Tid loss) {
  phase_ = Phase::Backward;
  const std::string saved = scope_;
  scope_ = "gradient_tape";
  add_grad(loss, constant("ones", {}, DType::F32));
  std::vector<Tid> dys;
  for (auto it = tape_.rbegin(); it != tape_.rend(); ++it) {
    scope_ = "gradient_tape/" + ops_[it->op].name;
    backward_op_ = it->op;
    const std::vector<Tid> outputs = ops_[it->op].outputs;  // emitting may reallocate ops_
    dys.clear();
    bool any = false;
    for (Tid t : outputs) {
      dys.push_back(gradient_of(t));
      any = any || dys.back() != kNoTensor;
    }
    if (!any) continue;
    it->fn(*this, dys);
  }
  // A variable read at several sites (tied embeddings) sums the gradients of its reads.
  for (auto& var : vars_) {
    if (!var.trainable) continue;
    std::vector<Tid> parts;
    for (Tid r : var.reads) {
      scope_ = "gradient_tape/" + ops_[tensors_[r].producer].name;
      if (Tid g = gradient_of(r); g != kNoTensor) parts.push_back(g);
    }
    if (parts.empty()) continue;
    Tid g = parts.front();
    if (parts.size() > 1) {
      scope_ = "gradient_tape/" + var.name;
      g = add_n(parts);
    }
    var.gradient_op = tensors_[g].producer;
    var.gradient = g;
  }
  scope_ = saved;
  tape_.clear();
}

void ModelBuilder::optimizer_step() {
  phase_ = Phase::Optimizer;
  const std::string saved = scope_;
  std::vector<Pid> trained;
  std::vector<Tid> grads;
  for (Pid v = 0; v < static_cast<Pid>(vars_.size()); ++v)
    if (vars_[v].trainable && vars_[v].gradient_op >= 0) {
      trained.push_back(v);
      grads.push_back(vars_[v].gradient);
    }
  const bool adam = options_.optimizer == OptimizerKind::Adam;
  const std::string opt = adam ? "adam" : "sgd";
  if (fused()) {
    for (std::size_t i = 0; i < trained.size(); ++i) {
      const Pid v = trained[i];
      scope_ = opt + "/" + vars_[v].name;
      const double n = static_cast<double>(num_elements(vars_[v].shape));
      const std::int32_t op = emit(adam ? "ApplyAdam" : "ApplyGradientDescent", adam ? "ApplyAdam" : "ApplyGradientDescent",
                                   {read(v), grads[i]}, {}, adam ? 12 * n : 2 * n);
      // Adam reads parameter, m, v and the gradient and writes the three back; SGD reads two, writes one.
      set_bytes_moved(op, (adam ? 7.0 : 3.0) * 4.0 * n);
      ops_[op].variable = v;
      vars_[v].ops.push_back(op);
      vars_[v].update_ops.push_back(op);
    }
    scope_ = saved;
    return;
  }

  // Keras 3 on TensorFlow: gradients pass through Identity/IdentityN, then each variable gets the
  // element-wise update of keras.optimizers.Adam (or SGD), recomputing the bias corrections per
  // variable as the traced graph does.
  scope_ = opt;
  std::vector<TensorSpec> specs;
  for (Tid g : grads) {
    emit1("Identity", "Identity", {g}, {tensors_[g].shape, tensors_[g].dtype}, 0);
    specs.push_back({tensors_[g].shape, tensors_[g].dtype});
  }
  const std::int32_t identity_n = emit("IdentityN", "IdentityN", grads, specs, 0);
  const Pid lr = variable("learning_rate", {}, false);
  const Pid iterations = variable("iteration", {}, false);
  for (std::size_t i = 0; i < trained.size(); ++i) {
    const Pid v = trained[i];
    const Tid g = out(identity_n, static_cast<int>(i));
    const Shape shape = vars_[v].shape;
    scope_ = opt + "/" + vars_[v].name;
    auto ew = [&](std::string_view leaf, std::string_view type, std::vector<Tid> in, const Shape s) {
      return emit1(leaf, type, std::move(in), {s, DType::F32}, static_cast<double>(num_elements(s)));
    };
    const Tid rate = read(lr, "Cast", false);
    if (adam) {
      const Tid one = constant("Const", {}, DType::I64);
      const Tid step = emit1("Add", "AddV2", {one, read(iterations, "Add", false)}, {{}, DType::I64}, 1);
      const Tid t = emit1("Cast_1", "Cast", {step}, {{}, DType::F32}, 1);
      const Tid beta1_t = ew("Pow", "Pow", {t, constant("Cast_2/x", {}, DType::F32)}, {});
      const Tid beta2_t = ew("Pow_1", "Pow", {t, constant("Cast_3/x", {}, DType::F32)}, {});
      const Tid c2 = ew("sub", "Sub", {constant("sub/x", {}, DType::F32), beta2_t}, {});
      const Tid num = ew("mul", "Mul", {rate, ew("Sqrt", "Sqrt", {c2}, {})}, {});
      const Tid c1 = ew("sub_1", "Sub", {constant("sub_1/x", {}, DType::F32), beta1_t}, {});
      const Tid alpha = ew("truediv", "RealDiv", {num, c1}, {});
      const Pid m = variable("m", shape, false);
      const Pid s = variable("v", shape, false);
      const Tid dm = ew("Sub_2", "Sub", {g, read(m, "Sub_2")}, shape);
      const Tid m_written = out(
          assign(m, "AssignAddVariableOp", "AssignAddVariableOp", ew("Mul_1", "Mul", {dm, constant("Const_1", {}, DType::F32)}, shape)));
      const Tid sq = ew("Square", "Square", {g}, shape);
      const Tid ds = ew("Sub_3", "Sub", {sq, read(s, "Sub_3")}, shape);
      const Tid s_written = out(
          assign(s, "AssignAddVariableOp_1", "AssignAddVariableOp", ew("Mul_2", "Mul", {ds, constant("Const_2", {}, DType::F32)}, shape)));
      // The slots are read back after their updates (a control edge, as TensorFlow records).
      const Tid step_m = ew("Mul_3", "Mul", {alpha, read(m, "Mul_3", false, m_written)}, shape);
      const Tid denom = ew("Add_1", "AddV2", {ew("Sqrt_1", "Sqrt", {read(s, "Cast_4", false, s_written)}, shape), constant("Const_3", {}, DType::F32)}, shape);
      const Tid update = ew("truediv_1", "RealDiv", {step_m, denom}, shape);
      vars_[v].update_ops.push_back(assign(v, "AssignSubVariableOp", "AssignSubVariableOp", update));
      // The optimizer slots live with the variable (TensorFlow colocates them).
      for (Pid slot : {m, s}) {
        for (std::int32_t op : vars_[slot].ops) {
          ops_[op].variable = v;
          ops_[op].resident_bytes = 0;
          vars_[v].ops.push_back(op);
        }
        vars_[slot].ops.clear();
      }
    } else {
      vars_[v].update_ops.push_back(assign(v, "AssignSubVariableOp", "AssignSubVariableOp", ew("Mul", "Mul", {g, rate}, shape)));
    }
  }
  scope_ = opt;
  const Tid next = emit1("Add", "AddV2", {constant("Const", {}, DType::I64), read(iterations, "Add", false)}, {{}, DType::I64}, 1);
  assign(iterations, "AssignVariableOp", "AssignVariableOp", next);
  scope_ = saved;
}

// ---------------------------------------------------------------------------------------------
// primitives

Tid ModelBuilder::unbroadcast(Tid grad, Shape target) {
  const Shape have = tensors_[grad].shape;
  if (have == target) return grad;
  const double n = static_cast<double>(num_elements(have));
  const DType dtype = tensors_[grad].dtype;  // a gradient keeps its precision
  if (fused()) return emit1("ReduceSum", "ReduceSum", {grad}, {target, dtype}, n);
  constant("Shape", {static_cast<std::int64_t>(have.size())});
  const Tid shape1 = constant("Shape_1", {static_cast<std::int64_t>(target.size())});
  const Tid axes = constant("Sum/reduction_indices", {static_cast<std::int64_t>(have.size())});
  const Tid sum = emit1("Sum", "Sum", {grad, axes}, {{num_elements(target)}, dtype}, n);
  return emit1("Reshape", "Reshape", {shape1, sum}, {target, dtype}, 0);
}

// grad_mode: 0 add, 1 sub, 2 mul, 3 div (a only)
Tid ModelBuilder::elementwise_binary(std::string_view leaf, std::string_view type, Tid a, Tid b, int grad_mode) {
  Shape shape = broadcast_shapes(tensors_[a].shape, tensors_[b].shape);
  const double n = static_cast<double>(num_elements(shape));
  const DType dtype = tensors_[a].dtype;
  const std::int32_t op = emit(leaf, type, {a, b}, {{std::move(shape), dtype}}, n);
  differentiable(op, [a, b, grad_mode](ModelBuilder& m, std::span<const Tid> dy) {
    const Tid g = dy[0];
    const Shape sa = m.tensors_[a].shape, sb = m.tensors_[b].shape;
    const Shape sg = m.tensors_[g].shape;
    const double ng = static_cast<double>(num_elements(sg));
    switch (grad_mode) {
      case 0:
        if (m.requires_grad(a)) m.add_grad(a, m.unbroadcast(g, sa));
        if (m.requires_grad(b)) m.add_grad(b, m.unbroadcast(g, sb));
        break;
      case 1:
        if (m.requires_grad(a)) m.add_grad(a, m.unbroadcast(g, sa));
        if (m.requires_grad(b)) {
          const Tid r = m.unbroadcast(g, sb);
          m.add_grad(b, m.emit1("Neg", "Neg", {r}, {sb, m.tensor(r).dtype}, static_cast<double>(num_elements(sb))));
        }
        break;
      case 2:
        if (m.requires_grad(a)) m.add_grad(a, m.unbroadcast(m.emit1("Mul", "Mul", {b, g}, {sg, m.tensor(g).dtype}, ng), sa));
        if (m.requires_grad(b)) m.add_grad(b, m.unbroadcast(m.emit1("Mul_1", "Mul", {a, g}, {sg, m.tensor(g).dtype}, ng), sb));
        break;
      default:
        if (m.requires_grad(a)) m.add_grad(a, m.unbroadcast(m.emit1("RealDiv", "RealDiv", {g, b}, {sg, m.tensor(g).dtype}, ng), sa));
        break;
    }
  });
  return out(op);
}

Tid ModelBuilder::add(Tid a, Tid b, std::string_view leaf) { return elementwise_binary(leaf, "AddV2", a, b, 0); }
Tid ModelBuilder::sub(Tid a, Tid b, std::string_view leaf) { return elementwise_binary(leaf, "Sub", a, b, 1); }
Tid ModelBuilder::mul(Tid a, Tid b, std::string_view leaf) { return elementwise_binary(leaf, "Mul", a, b, 2); }
Tid ModelBuilder::div(Tid a, Tid b, std::string_view leaf) { return elementwise_binary(leaf, "RealDiv", a, b, 3); }

Tid ModelBuilder::unary(std::string_view leaf, std::string_view type, Tid x, double flops_per_element,
                        std::string_view grad_type, bool grad_reads_output) {
  const Shape shape = tensors_[x].shape;
  const double n = static_cast<double>(num_elements(shape));
  const std::int32_t op = emit(leaf, type, {x}, {{shape, tensors_[x].dtype}}, flops_per_element * n);
  const Tid y = out(op);
  if (!grad_type.empty())
    differentiable(op, [x, y, n, grad_type = std::string(grad_type), grad_reads_output](ModelBuilder& m, std::span<const Tid> dy) {
      m.add_grad(x, m.emit1(grad_type, grad_type, {grad_reads_output ? y : x, dy[0]}, {m.tensors_[x].shape, m.tensors_[x].dtype}, 2 * n));
    });
  return y;
}

Tid ModelBuilder::square_diff(Tid x, Tid mval, std::string_view leaf) {
  Shape shape = broadcast_shapes(tensors_[x].shape, tensors_[mval].shape);
  const double n = static_cast<double>(num_elements(shape));
  const std::int32_t op = emit(leaf, "SquaredDifference", {x, mval}, {{shape, DType::F32}}, 2 * n);
  differentiable(op, [x, mval, n](ModelBuilder& m, std::span<const Tid> dy) {
    const Shape s = m.tensors_[dy[0]].shape;
    const Tid two = m.constant("scalar", {}, DType::F32);
    const Tid scaled = m.emit1("Mul", "Mul", {dy[0], two}, {s, DType::F32}, n);
    const Tid diff = m.emit1("sub", "Sub", {x, mval}, {s, DType::F32}, n);
    m.add_grad(x, m.unbroadcast(m.emit1("mul_1", "Mul", {scaled, diff}, {s, DType::F32}, n), m.tensors_[x].shape));
  });
  return out(op);
}

Tid ModelBuilder::stop_gradient(Tid x, std::string_view leaf) {
  return emit1(leaf, "StopGradient", {x}, {tensors_[x].shape, tensors_[x].dtype}, 0);
}

Tid ModelBuilder::reshape(Tid x, Shape shape, std::string_view leaf, std::string_view type) {
  std::vector<Tid> in{x};
  if (type == "Reshape" && !fused()) in.push_back(constant(std::string(leaf) + "/shape", {static_cast<std::int64_t>(shape.size())}));
  const std::int32_t op = emit(leaf, type, std::move(in), {{std::move(shape), tensors_[x].dtype}}, 0);
  differentiable(op, [x](ModelBuilder& m, std::span<const Tid> dy) {
    std::vector<Tid> grad_inputs{dy[0]};
    if (!m.fused()) grad_inputs.push_back(m.constant("Shape", {static_cast<std::int64_t>(m.tensors_[x].shape.size())}));
    m.add_grad(x, m.emit1("Reshape", "Reshape", std::move(grad_inputs), {m.tensors_[x].shape, m.tensors_[x].dtype}, 0));
  });
  return out(op);
}

Tid ModelBuilder::transpose(Tid x, std::vector<int> perm, std::string_view leaf) {
  const Shape in = tensors_[x].shape;
  Shape shape(in.size());
  for (std::size_t i = 0; i < perm.size(); ++i) shape[i] = in[perm[i]];
  std::vector<Tid> inputs{x};
  if (!fused()) inputs.push_back(constant(std::string(leaf) + "/perm", {static_cast<std::int64_t>(perm.size())}));
  const std::int32_t op = emit(leaf, "Transpose", std::move(inputs), {{std::move(shape), tensors_[x].dtype}}, 0);
  differentiable(op, [x](ModelBuilder& m, std::span<const Tid> dy) {
    std::vector<Tid> grad_inputs{dy[0]};
    if (!m.fused())
      grad_inputs.push_back(m.emit1("InvertPermutation", "InvertPermutation",
                           {m.constant("perm", {static_cast<std::int64_t>(m.tensors_[x].shape.size())})},
                           {{static_cast<std::int64_t>(m.tensors_[x].shape.size())}, DType::I32}, 0));
    m.add_grad(x, m.emit1("transpose", "Transpose", std::move(grad_inputs), {m.tensors_[x].shape, m.tensors_[x].dtype}, 0));
  });
  return out(op);
}

Tid ModelBuilder::cast(Tid x, DType dtype, std::string_view leaf) {
  const double n = static_cast<double>(num_elements(tensors_[x].shape));
  const std::int32_t op = emit(leaf, "Cast", {x}, {{tensors_[x].shape, dtype}}, n);
  if (!is_integer(dtype) && !is_integer(tensors_[x].dtype))
    differentiable(op, [x, n](ModelBuilder& m, std::span<const Tid> dy) {
      m.add_grad(x, m.emit1("Cast", "Cast", {dy[0]}, {m.tensors_[x].shape, m.tensors_[x].dtype}, n));
    });
  return out(op);
}

namespace {
Shape reduced_shape(const Shape in, const std::vector<int>& axes, bool keepdims) {
  Shape out;
  for (int i = 0; i < static_cast<int>(in.size()); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) out.push_back(in[i]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}
}  // namespace

Tid ModelBuilder::mean(Tid x, std::vector<int> axes, bool keepdims, std::string_view leaf) {
  const Shape in = tensors_[x].shape;
  const double n = static_cast<double>(num_elements(in));
  std::vector<Tid> inputs{x};
  if (!fused()) inputs.push_back(constant(std::string(leaf) + "/reduction_indices", {static_cast<std::int64_t>(axes.size())}));
  const std::int32_t op = emit(leaf, "Mean", std::move(inputs), {{reduced_shape(in, axes, keepdims), DType::F32}}, n);
  differentiable(op, [x, axes, n](ModelBuilder& m, std::span<const Tid> dy) {
    const Shape sx = m.tensors_[x].shape;
    if (m.fused()) {
      m.add_grad(x, m.emit1("MeanGrad", "BroadcastTo", {dy[0]}, {sx, DType::F32}, n));
      return;
    }
    const Tid r = m.emit1("Reshape", "Reshape", {dy[0], m.constant("Reshape/shape", {static_cast<std::int64_t>(sx.size())})},
                          {reduced_shape(sx, axes, true), DType::F32}, 0);
    const Tid tiled = m.emit1("Tile", "Tile", {r, m.constant("Tile/multiples", {static_cast<std::int64_t>(sx.size())})}, {sx, DType::F32}, n);
    m.add_grad(x, m.emit1("truediv", "RealDiv", {tiled, m.constant("Const", {}, DType::F32)}, {sx, DType::F32}, n));
  });
  return out(op);
}

Tid ModelBuilder::reduce_sum(Tid x, std::vector<int> axes, bool keepdims, std::string_view leaf) {
  const Shape in = tensors_[x].shape;
  const double n = static_cast<double>(num_elements(in));
  std::vector<Tid> inputs{x};
  if (!fused()) inputs.push_back(constant(std::string(leaf) + "/reduction_indices", {static_cast<std::int64_t>(axes.size())}));
  const std::int32_t op = emit(leaf, "Sum", std::move(inputs), {{reduced_shape(in, axes, keepdims), DType::F32}}, n);
  differentiable(op, [x, axes, n](ModelBuilder& m, std::span<const Tid> dy) {
    const Shape sx = m.tensors_[x].shape;
    if (m.fused()) {
      m.add_grad(x, m.emit1("SumGrad", "BroadcastTo", {dy[0]}, {sx, DType::F32}, n));
      return;
    }
    const Tid r = m.emit1("Reshape", "Reshape", {dy[0], m.constant("Reshape/shape", {static_cast<std::int64_t>(sx.size())})},
                          {reduced_shape(sx, axes, true), DType::F32}, 0);
    m.add_grad(x, m.emit1("Tile", "Tile", {r, m.constant("Const", {static_cast<std::int64_t>(sx.size())})}, {sx, DType::F32}, n));
  });
  return out(op);
}

Tid ModelBuilder::concat(std::span<const Tid> xs, int axis, std::string_view leaf) {
  Shape shape = tensors_[xs[0]].shape;
  const int ax = axis < 0 ? static_cast<int>(shape.size()) + axis : axis;
  shape[ax] = 0;
  for (Tid x : xs) shape[ax] += tensors_[x].shape[ax];
  std::vector<Tid> inputs(xs.begin(), xs.end());
  if (!fused()) inputs.push_back(constant(std::string(leaf) + "/axis"));
  const std::vector<Tid> parts(xs.begin(), xs.end());
  const std::int32_t op = emit(leaf, "ConcatV2", std::move(inputs), {{std::move(shape), tensors_[xs[0]].dtype}}, 0);
  differentiable(op, [parts](ModelBuilder& m, std::span<const Tid> dy) {
    Tid offsets = kNoTensor;
    if (!m.fused()) {
      std::vector<TensorSpec> specs(parts.size(), TensorSpec{{static_cast<std::int64_t>(m.tensors_[parts[0]].shape.size())}, DType::I32});
      offsets = m.emit("ConcatOffset", "ConcatOffset", {m.constant("mod")}, std::move(specs), 0);
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (!m.requires_grad(parts[i])) continue;
      std::vector<Tid> in{dy[0]};
      if (offsets != kNoTensor) in.push_back(m.out(offsets, static_cast<int>(i)));
      m.add_grad(parts[i], m.emit1("Slice", "Slice", std::move(in), {m.tensors_[parts[i]].shape, m.tensors_[parts[i]].dtype}, 0));
    }
  });
  return out(op);
}

std::vector<Tid> ModelBuilder::split(Tid x, int axis, int parts, std::string_view leaf) {
  Shape shape = tensors_[x].shape;
  const int ax = axis < 0 ? static_cast<int>(shape.size()) + axis : axis;
  shape[ax] /= parts;
  std::vector<Tid> inputs{x};
  if (!fused()) inputs.insert(inputs.begin(), constant(std::string(leaf) + "/split_dim"));
  const std::int32_t op = emit(leaf, "Split", std::move(inputs), std::vector<TensorSpec>(parts, TensorSpec{shape, DType::F32}), 0);
  differentiable(op, [x](ModelBuilder& m, std::span<const Tid> dy) {
    std::vector<Tid> in;
    for (std::size_t i = 0; i < dy.size(); ++i) {
      Tid g = dy[i];
      if (g == kNoTensor) {
        const Tid y = m.out(m.backward_op_, static_cast<int>(i));
        g = m.emit1("zeros_like", "ZerosLike", {y}, {m.tensors_[y].shape, m.tensors_[y].dtype}, 0);
      }
      in.push_back(g);
    }
    if (!m.fused()) in.push_back(m.constant("concat/axis"));
    m.add_grad(x, m.emit1("concat", "ConcatV2", std::move(in), {m.tensors_[x].shape, m.tensors_[x].dtype}, 0));
  });
  std::vector<Tid> outs = ops_[op].outputs;
  return outs;
}

Tid ModelBuilder::matmul(Tid a, Tid b, bool ta, bool tb, std::string_view leaf) {
  const Shape sa = tensors_[a].shape;
  const Shape sb = tensors_[b].shape;
  const std::int64_t rows = ta ? sa[1] : sa[0], inner = ta ? sa[0] : sa[1], cols = tb ? sb[0] : sb[1];
  const double macs = static_cast<double>(rows) * static_cast<double>(inner) * static_cast<double>(cols);
  const std::int32_t op = emit(leaf, "MatMul", {a, b}, {{{rows, cols}, DType::F32}}, 2 * macs, macs);
  differentiable(op, [a, b, macs](ModelBuilder& m, std::span<const Tid> dy) {
    if (m.requires_grad(a)) m.add_grad(a, m.emit1("MatMul", "MatMul", {b, dy[0]}, {m.tensors_[a].shape, m.tensors_[a].dtype}, 2 * macs, macs));
    if (m.requires_grad(b)) m.add_grad(b, m.emit1("MatMul_1", "MatMul", {a, dy[0]}, {m.tensors_[b].shape, m.tensors_[b].dtype}, 2 * macs, macs));
  });
  return out(op);
}

Tid ModelBuilder::batch_matmul(Tid a, Tid b, bool ta, bool tb, std::string_view leaf) {
  const Shape sa = tensors_[a].shape;
  const Shape sb = tensors_[b].shape;
  const std::size_t r = sa.size();
  const std::int64_t rows = ta ? sa[r - 1] : sa[r - 2], inner = ta ? sa[r - 2] : sa[r - 1];
  const std::int64_t cols = tb ? sb[r - 2] : sb[r - 1];
  Shape shape(sa.begin(), sa.end() - 2);
  double batch = 1;
  for (auto d : shape) batch *= static_cast<double>(d);
  shape.push_back(rows);
  shape.push_back(cols);
  const double macs = batch * static_cast<double>(rows) * static_cast<double>(inner) * static_cast<double>(cols);
  const std::int32_t op = emit(leaf, "BatchMatMulV2", {a, b}, {{std::move(shape), DType::F32}}, 2 * macs, macs);
  differentiable(op, [a, b, macs](ModelBuilder& m, std::span<const Tid> dy) {
    if (m.requires_grad(a)) m.add_grad(a, m.emit1("MatMul", "BatchMatMulV2", {dy[0], b}, {m.tensors_[a].shape, m.tensors_[a].dtype}, 2 * macs, macs));
    if (m.requires_grad(b)) m.add_grad(b, m.emit1("MatMul_1", "BatchMatMulV2", {a, dy[0]}, {m.tensors_[b].shape, m.tensors_[b].dtype}, 2 * macs, macs));
  });
  return out(op);
}

Tid ModelBuilder::conv2d(Tid x, Tid w, int stride, bool same, std::string_view leaf) {
  const Shape sx = tensors_[x].shape;  // NHWC
  const Shape sw = tensors_[w].shape;  // kh kw cin cout
  auto extent = [&](std::int64_t in, std::int64_t k) { return same ? (in + stride - 1) / stride : (in - k) / stride + 1; };
  const Shape shape{sx[0], extent(sx[1], sw[0]), extent(sx[2], sw[1]), sw[3]};
  const double macs = static_cast<double>(num_elements(shape)) * static_cast<double>(sw[0] * sw[1] * sw[2]);
  // cuDNN runs 3x3 stride-1 convolutions (forward and both gradients) with Winograd's
  // F(2x2, 3x3), which does 2.25x fewer multiplications than the direct method (Lavin & Gray,
  // CVPR 2016): the roofline charges that arithmetic (algorithm_flops), `flops` stays the direct
  // count.
  const double flops = 2 * macs;
  const double algorithm = sw[0] == 3 && sw[1] == 3 && stride == 1 ? flops / 2.25 : 0.0;
  const std::int32_t op = emit(leaf, "Conv2D", {x, w}, {{shape, DType::F32}}, flops, macs);
  set_algorithm_flops(op, algorithm);
  differentiable(op, [x, w, macs, flops, algorithm](ModelBuilder& m, std::span<const Tid> dy) {
    Tid shapes = kNoTensor;
    if (!m.fused())
      shapes = m.emit("ShapeN", "ShapeN", {x, w}, {{{4}, DType::I32}, {{4}, DType::I32}}, 0);
    auto in = [&](Tid first) {
      std::vector<Tid> v{first, dy[0]};
      if (shapes != kNoTensor) v.push_back(m.out(shapes, 0));
      return v;
    };
    auto gradient = [&](const char* name, std::vector<Tid> inputs, Tid like) {
      const std::int32_t g = m.emit(name, name, std::move(inputs), {{m.tensors_[like].shape, m.tensors_[like].dtype}}, flops, macs);
      m.set_algorithm_flops(g, algorithm);
      return m.out(g);
    };
    if (m.requires_grad(x)) m.add_grad(x, gradient("Conv2DBackpropInput", in(w), x));
    if (m.requires_grad(w)) m.add_grad(w, gradient("Conv2DBackpropFilter", in(x), w));
  });
  return out(op);
}

Tid ModelBuilder::pool(Tid x, int window, int stride, bool same, bool max, std::string_view leaf) {
  const Shape sx = tensors_[x].shape;
  auto extent = [&](std::int64_t in) { return same ? (in + stride - 1) / stride : (in - window) / stride + 1; };
  const Shape shape{sx[0], extent(sx[1]), extent(sx[2]), sx[3]};
  const double work = static_cast<double>(num_elements(shape)) * window * window;
  const std::int32_t op = emit(leaf, max ? "MaxPool" : "AvgPool", {x}, {{shape, DType::F32}}, work);
  const Tid y = out(op);
  differentiable(op, [x, y, work, max](ModelBuilder& m, std::span<const Tid> dy) {
    const Shape shape_x = m.tensors_[x].shape;
    if (max)
      m.add_grad(x, m.emit1("MaxPoolGrad", "MaxPoolGrad", {x, y, dy[0]}, {shape_x, DType::F32}, work));
    else
      m.add_grad(x, m.emit1("AvgPoolGrad", "AvgPoolGrad", {m.fused() ? dy[0] : m.constant("Shape", {4}), dy[0]}, {shape_x, DType::F32}, work));
  });
  return y;
}

Tid ModelBuilder::softmax(Tid x, std::string_view leaf) {
  const Shape shape = tensors_[x].shape;
  const double n = static_cast<double>(num_elements(shape));
  const std::int32_t op = emit(leaf, "Softmax", {x}, {{shape, DType::F32}}, 5 * n);
  const Tid y = out(op);
  differentiable(op, [x, y, n](ModelBuilder& m, std::span<const Tid> dy) {
    const Shape s = m.tensors_[y].shape;
    if (m.fused()) {
      m.add_grad(x, m.emit1("SoftmaxGrad", "SoftmaxGrad", {y, dy[0]}, {s, DType::F32}, 4 * n));
      return;
    }
    Shape rows = s;
    rows.back() = 1;
    const Tid prod = m.emit1("mul", "Mul", {dy[0], y}, {s, DType::F32}, n);
    const Tid sum = m.emit1("Sum", "Sum", {prod, m.constant("Sum/reduction_indices")}, {rows, DType::F32}, n);
    const Tid diff = m.emit1("sub", "Sub", {dy[0], sum}, {s, DType::F32}, n);
    m.add_grad(x, m.emit1("mul_1", "Mul", {diff, y}, {s, DType::F32}, n));
  });
  return y;
}

Tid ModelBuilder::gather(Tid table, Tid ids, std::string_view leaf) {
  Shape shape = tensors_[ids].shape;
  shape.push_back(tensors_[table].shape.back());
  std::vector<Tid> inputs{table, ids};
  if (!fused()) inputs.push_back(constant(std::string(leaf) + "/axis"));
  const std::int32_t op = emit(leaf, "GatherV2", std::move(inputs), {{std::move(shape), DType::F32}}, 0);
  // A gather moves the rows it reads, not the whole table.
  const Tid y = out(op);
  set_bytes_moved(op, 2 * tensors_[y].bytes + tensors_[ids].bytes);
  differentiable(op, [table, ids](ModelBuilder& m, std::span<const Tid> dy) {
    const double n = static_cast<double>(num_elements(m.tensors_[dy[0]].shape));
    std::vector<Tid> in{dy[0], ids};
    if (!m.fused()) in.push_back(m.constant("num_segments"));
    // Densified as Keras and PyTorch's dense embedding backward do: the whole table is written.
    const std::int32_t g = m.emit("UnsortedSegmentSum", "UnsortedSegmentSum", std::move(in), {{m.tensors_[table].shape, m.tensors_[table].dtype}}, n);
    m.add_grad(table, m.out(g));
  });
  return y;
}

Tid ModelBuilder::add_n(std::span<const Tid> xs, std::string_view leaf) {
  const Shape shape = tensors_[xs[0]].shape;
  const double n = static_cast<double>(num_elements(shape));
  const std::vector<Tid> parts(xs.begin(), xs.end());
  const std::int32_t op = emit(leaf, "AddN", parts, {{shape, tensors_[xs[0]].dtype}}, n * static_cast<double>(xs.size() - 1));
  differentiable(op, [parts](ModelBuilder& m, std::span<const Tid> dy) {
    for (Tid p : parts) m.add_grad(p, dy[0]);
  });
  return out(op);
}

// ---------------------------------------------------------------------------------------------
// results

std::int64_t ModelBuilder::trainable_parameters() const {
  std::int64_t n = 0;
  for (const auto& v : vars_)
    if (v.trainable) n += num_elements(v.shape);
  return n;
}

double ModelBuilder::forward_macs() const {
  double macs = 0;
  for (const auto& op : ops_)
    if (op.phase == Phase::Forward) macs += op.macs;
  return macs;
}

Graph ModelBuilder::to_graph(const GpuSpec& gpu, const std::string& source) const {
  Graph g;
  std::vector<std::int32_t> class_of(vars_.size(), -1);
  std::int32_t classes = 0;
  for (std::size_t v = 0; v < vars_.size(); ++v)
    if (!vars_[v].ops.empty()) class_of[v] = classes++;
  for (const BuiltOp& op : ops_) {
    Operator o;
    o.name = op.name;
    o.type = op.type;
    const double arithmetic = op.algorithm_flops > 0 ? op.algorithm_flops : op.flops;
    o.compute_s = op.kernel && (arithmetic > 0 || op.bytes_moved > 0) ? roofline_seconds(gpu, arithmetic, op.bytes_moved) : 0.0;
    o.flops = op.kernel ? op.flops : 0.0;  // a view runs no kernel
    o.algorithm_flops = op.kernel ? op.algorithm_flops : 0.0;
    double memory = op.resident_bytes;
    for (Tid t : op.outputs)
      if (tensors_[t].saved_for_backward) memory += tensors_[t].bytes;
    o.memory_bytes = memory;
    o.colocation_class = op.variable >= 0 ? class_of[op.variable] : -1;
    // Sizes up to 1e9 per key and a slow GPU multiply into values no engine can represent: the
    // same ranges as for graph files (sim/core/units.h), named after what makes them big.
    if (!(o.compute_s <= kMaxDuration))
      throw InputError(source, fmt::format("operator '{}'", o.name),
                       fmt::format("would take {:g} s on GPU '{}', more than the {:g} s placesim simulates; give a faster "
                                   "gpu (flops, memory_bandwidth, efficiency) or smaller model sizes",
                                   o.compute_s, gpu.name, kMaxDuration));
    if (!(o.memory_bytes <= kMaxBytes))
      throw InputError(source, fmt::format("operator '{}'", o.name),
                       fmt::format("would hold {:g} bytes, more than the {:g} bytes placesim simulates; give smaller model sizes",
                                   o.memory_bytes, kMaxBytes));
    g.add_operator(std::move(o));
  }
  std::vector<char> is_gradient(tensors_.size(), 0);
  for (const BuiltVariable& v : vars_)
    if (v.trainable && v.gradient >= 0) is_gradient[v.gradient] = 1;
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(ops_.size()); ++i) {
    const auto& in = ops_[i].inputs;
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (std::find(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(k), in[k]) != in.begin() + static_cast<std::ptrdiff_t>(k)) continue;
      const double bytes = tensors_[in[k]].bytes;
      if (!(bytes <= kMaxBytes))
        throw InputError(source, fmt::format("tensor '{}' -> '{}'", ops_[tensors_[in[k]].producer].name, ops_[i].name),
                         fmt::format("would hold {:g} bytes, more than the {:g} bytes placesim simulates; give smaller model sizes",
                                     bytes, kMaxBytes));
      // A trainable parameter's gradient into the optimizer: what data parallelism all-reduces.
      const bool gradient = ops_[i].phase == Phase::Optimizer && is_gradient[in[k]] && bytes > 0;
      g.add_tensor(tensors_[in[k]].producer, i, bytes, gradient);
    }
  }
  g.finalize(source);
  return g;
}

}  // namespace placesim::models
