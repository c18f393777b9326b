#pragma once
// The model zoo's graph builder: a small autodiff tape that records, operator by operator, the
// graph of one training iteration as a framework would: forward operators (with the tensors'
// shapes and dtypes), their gradient operators emitted by an automatic backward pass (input and
// weight gradients, AddN where a tensor fans out), and the optimizer's update operators per
// parameter. Every operator carries its FLOPs and the bytes it moves, so its compute time is a
// roofline of a GPU (sim/models/gpu.h).
//
// Two recording styles:
//  * TensorFlow: what TF 2 / Keras 3 records (the profiled QuickP graphs): unfused layers built
//    from element-wise primitives, one ReadVariableOp (and resource Placeholder) per variable
//    read, shape constants, broadcasting gradients as Sum + Reshape, Keras's Adam as ~37
//    element-wise operators per parameter.
//  * Fused: what ONNX Runtime / PyTorch training graphs record (the msr-fiddle graphs): one
//    kernel per layer (FusedBatchNorm, LayerNorm, Gelu, Dropout), one gradient kernel per input,
//    one fused optimizer operator per parameter, no bookkeeping constants.
//
// Naming follows TensorFlow: forward "<model>/<layer>/<op>", gradients
// "gradient_tape/<forward op>/<op>", optimizer "<optimizer>/<variable>/<op>", so prefix-based
// grouping (SpotLight, expert placements) sees layers.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/core/graph.h"
#include "sim/models/gpu.h"

namespace placesim::models {

enum class DType : std::uint8_t { F32, F16, F64, I8, I16, I32, I64, Bool, C64, Resource };
double dtype_bytes(DType dtype);

using Shape = std::vector<std::int64_t>;
std::int64_t num_elements(const Shape& shape);

using Tid = std::int32_t;  // a tensor of the builder
using Pid = std::int32_t;  // a variable (parameter or state) of the builder
constexpr Tid kNoTensor = -1;

enum class Phase : std::uint8_t { Forward, Backward, Optimizer };
enum class GraphStyle : std::uint8_t { TensorFlow, Fused };
enum class OptimizerKind : std::uint8_t { Adam, Sgd };

struct TensorSpec {
  Shape shape;
  DType dtype = DType::F32;
};

struct BuiltOp {
  std::string name;
  std::string type;
  Phase phase = Phase::Forward;
  double flops = 0;        // floating-point operations, counted directly; a multiply-add counts 2
  // What the kernel's algorithm computes where it does less (Winograd: flops / 2.25), which the
  // roofline times; 0: flops.
  double algorithm_flops = 0;
  double macs = 0;         // multiply-accumulates of convolutions and matrix products only
  double bytes_moved = 0;  // bytes read and written (inputs + outputs)
  bool kernel = true;      // runs a GPU kernel (false: costs nothing)
  std::vector<Tid> inputs;
  std::vector<Tid> outputs;
  double resident_bytes = 0;  // variable storage held by this op (parameters, optimizer slots)
  Pid variable = -1;          // the variable this op touches (its colocation class)
};

struct BuiltTensor {
  Shape shape;
  DType dtype = DType::F32;
  std::int32_t producer = -1;
  double bytes = 0;
  bool requires_grad = false;
  bool saved_for_backward = false;  // read by a gradient operator: resident until the backward pass
  Pid read_of = -1;                 // the variable this tensor is a read of
};

struct BuiltVariable {
  std::string name;
  Shape shape;
  bool trainable = true;
  std::vector<std::int32_t> ops;            // every op touching it: one colocation class
  std::vector<Tid> reads;                   // read tensors
  std::vector<std::int32_t> forward_users;  // forward ops consuming a read
  std::int32_t gradient_op = -1;            // the op producing its accumulated gradient
  Tid gradient = kNoTensor;  // that gradient (a fused gradient kernel has other outputs: LayerNorm's dx)
  std::vector<std::int32_t> update_ops;     // optimizer ops that use the gradient
};

class ModelBuilder {
 public:
  struct Options {
    GraphStyle style = GraphStyle::TensorFlow;
    OptimizerKind optimizer = OptimizerKind::Adam;
  };
  explicit ModelBuilder(Options options);

  GraphStyle style() const { return options_.style; }
  bool fused() const { return options_.style == GraphStyle::Fused; }
  OptimizerKind optimizer() const { return options_.optimizer; }

  // ---- naming scopes
  class Scope {
   public:
    Scope(ModelBuilder& b, std::string_view name);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    ModelBuilder& b_;
    std::size_t old_size_;
  };
  [[nodiscard]] Scope scope(std::string_view name) { return Scope(*this, name); }
  const std::string& current_scope() const { return scope_; }

  // ---- sources
  Tid input(std::string_view name, Shape shape, DType dtype = DType::F32);
  Tid constant(std::string_view leaf, Shape shape = {}, DType dtype = DType::I32);
  Pid variable(std::string_view leaf, Shape shape, bool trainable = true);
  // Reads a variable (TensorFlow: a resource Placeholder and a ReadVariableOp named
  // "<scope>/<hint>/ReadVariableOp"; fused: the variable's own source op, shared by all reads).
  // `own_resource` false reuses the variable's first resource Placeholder (as Keras's optimizer does).
  // `after` (a control tensor from assign()) orders the read after a write, as TensorFlow's
  // automatic control dependencies do.
  Tid read(Pid v, std::string_view hint = "", bool own_resource = true, Tid after = kNoTensor);
  // An op writing a variable (AssignVariableOp, AssignAddVariableOp, ...); its single output is a
  // zero-byte control tensor.
  std::int32_t assign(Pid v, std::string_view leaf, std::string_view type, Tid value, double flops_per_element = 1);

  // ---- operators
  std::int32_t emit(std::string_view leaf, std::string_view type, std::vector<Tid> inputs, std::vector<TensorSpec> outputs,
                    double flops, double macs = 0);
  Tid emit1(std::string_view leaf, std::string_view type, std::vector<Tid> inputs, TensorSpec output, double flops,
            double macs = 0) {
    return out(emit(leaf, type, std::move(inputs), {std::move(output)}, flops, macs));
  }
  Tid out(std::int32_t op, int k = 0) const { return ops_[op].outputs[k]; }
  // The arithmetic the op's algorithm does instead of its direct count (BuiltOp::algorithm_flops).
  void set_algorithm_flops(std::int32_t op, double flops) { ops_[op].algorithm_flops = flops; }
  // Overrides the bytes an op moves (e.g. an update reading and writing its variable).
  void set_bytes_moved(std::int32_t op, double bytes) { ops_[op].bytes_moved = bytes; }
  // Marks an op as running no kernel (a view such as ONNX's Flatten or Unsqueeze): it costs nothing.
  void set_no_kernel(std::int32_t op) { ops_[op].kernel = false; }

  // ---- autodiff
  // Called during the backward pass with the gradient of each output (kNoTensor when an output
  // got none); it emits gradient ops and hands input gradients to add_grad().
  using GradFn = std::function<void(ModelBuilder&, std::span<const Tid> output_grads)>;
  // Records `fn` for `op` when one of its inputs requires a gradient (its outputs then do too).
  void differentiable(std::int32_t op, GradFn fn);
  void add_grad(Tid x, Tid grad);
  bool requires_grad(Tid t) const { return tensors_[t].requires_grad; }
  // Runs the backward pass from a scalar loss, then the optimizer's updates.
  void backward(Tid loss);
  void optimizer_step();

  // ---- element-wise and shape primitives (TensorFlow's gradient rules)
  Tid add(Tid a, Tid b, std::string_view leaf = "add");
  Tid sub(Tid a, Tid b, std::string_view leaf = "sub");
  Tid mul(Tid a, Tid b, std::string_view leaf = "mul");
  Tid div(Tid a, Tid b, std::string_view leaf = "truediv");  // gradient for a only
  Tid unary(std::string_view leaf, std::string_view type, Tid x, double flops_per_element,
            std::string_view grad_type = "", bool grad_reads_output = true);
  Tid relu(Tid x, std::string_view leaf = "Relu") { return unary(leaf, "Relu", x, 1, "ReluGrad"); }
  Tid tanh(Tid x, std::string_view leaf = "Tanh") { return unary(leaf, "Tanh", x, 4, "TanhGrad"); }
  Tid sigmoid(Tid x, std::string_view leaf = "Sigmoid") { return unary(leaf, "Sigmoid", x, 4, "SigmoidGrad"); }
  Tid square_diff(Tid x, Tid m, std::string_view leaf = "SquaredDifference");  // gradient for x only
  Tid stop_gradient(Tid x, std::string_view leaf = "StopGradient");
  Tid reshape(Tid x, Shape shape, std::string_view leaf = "Reshape", std::string_view type = "Reshape");
  Tid transpose(Tid x, std::vector<int> perm, std::string_view leaf = "transpose");
  Tid cast(Tid x, DType dtype, std::string_view leaf = "Cast");
  Tid mean(Tid x, std::vector<int> axes, bool keepdims, std::string_view leaf = "Mean");
  Tid reduce_sum(Tid x, std::vector<int> axes, bool keepdims, std::string_view leaf = "Sum");
  Tid concat(std::span<const Tid> xs, int axis, std::string_view leaf = "concat");
  std::vector<Tid> split(Tid x, int axis, int parts, std::string_view leaf = "split");
  Tid matmul(Tid a, Tid b, bool transpose_a = false, bool transpose_b = false, std::string_view leaf = "MatMul");
  Tid batch_matmul(Tid a, Tid b, bool transpose_a = false, bool transpose_b = false, std::string_view leaf = "MatMul");
  Tid conv2d(Tid x, Tid w, int stride, bool same_padding, std::string_view leaf = "convolution");
  Tid pool(Tid x, int window, int stride, bool same_padding, bool max, std::string_view leaf);
  Tid softmax(Tid x, std::string_view leaf = "Softmax");
  Tid gather(Tid table, Tid ids, std::string_view leaf = "GatherV2");
  Tid add_n(std::span<const Tid> xs, std::string_view leaf = "AddN");

  // ---- results
  std::span<const BuiltOp> ops() const { return ops_; }
  std::span<const BuiltTensor> tensors() const { return tensors_; }
  std::span<const BuiltVariable> variables() const { return vars_; }
  const BuiltTensor& tensor(Tid t) const { return tensors_[t]; }
  Phase phase() const { return phase_; }
  void set_phase(Phase p) { phase_ = p; }

  // The placesim graph: compute from the roofline of `gpu`; memory = variables (with optimizer
  // slots) on their first op + outputs saved for the backward pass; one colocation class per
  // variable. Finalized; `source` names it in errors.
  Graph to_graph(const GpuSpec& gpu, const std::string& source) const;

  // Trainable parameters (elements) and forward multiply-accumulates.
  std::int64_t trainable_parameters() const;
  double forward_macs() const;

  // Name of a new op in the current scope: "<scope>/<leaf>", uniquified TF-style ("_1", "_2").
  std::string unique_name(std::string_view leaf);
  // Gradient of a broadcast input: Sum over the broadcast axes + Reshape (TensorFlow), or one
  // ReduceSum (fused); `grad` itself when shapes already match.
  Tid unbroadcast(Tid grad, Shape target);

 private:
  struct TapeEntry {
    std::int32_t op;
    GradFn fn;
  };
  Tid new_tensor(TensorSpec spec, std::int32_t producer);
  Tid gradient_of(Tid t);  // accumulated gradient (AddN when several), or kNoTensor
  Tid elementwise_binary(std::string_view leaf, std::string_view type, Tid a, Tid b, int grad_mode);

  Options options_;
  std::string scope_;
  Phase phase_ = Phase::Forward;
  std::vector<BuiltOp> ops_;
  std::vector<BuiltTensor> tensors_;
  std::vector<BuiltVariable> vars_;
  std::vector<Tid> fused_var_tensor_;  // fused style: the variable op's output, per variable
  std::vector<TapeEntry> tape_;
  std::unordered_map<std::string, int> name_uses_;
  std::unordered_map<Tid, std::vector<Tid>> grads_;  // contributions per tensor during backward
  std::int32_t backward_op_ = -1;                   // forward op whose gradient is being emitted
};

// Numpy broadcasting of two shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace placesim::models
