// ONNX in (sim/models/onnx_import.h): models exported from PyTorch by tools/export_onnx.py, imported
// and checked against closed forms and against the zoo's own ResNet-50. Skipped, saying why, when
// Debian's PyTorch is not installed (tools/install-deps.sh installs it).
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <set>
#include <unistd.h>

#include "scenarios/runner/scenario.h"
#include "sim/models/onnx_import.h"
#include "sim/models/zoo.h"
#include "tests/test_util.h"

namespace placesim {
namespace {

namespace fs = std::filesystem;
using models::OnnxImport;
using models::OnnxImportOptions;
using models::Phase;

// A Python that has PyTorch and torchvision: `python3` first (as the README runs it), then Debian's
// own (a pyenv or venv python3 earlier in PATH does not see Debian's packages).
const std::optional<std::string>& torch_python() {
  static const std::optional<std::string> found = []() -> std::optional<std::string> {
    for (const char* python : {"python3", "/usr/bin/python3"})
      if (std::string out; testutil::run_command(std::string(python) + " -c 'import torch, torchvision'", out) == 0)
        return std::string(python);
    return std::nullopt;
  }();
  return found;
}

#define SKIP_WITHOUT_TORCH()                                                                                               \
  do {                                                                                                                     \
    if (!torch_python())                                                                                                   \
      GTEST_SKIP() << "PyTorch is not installed (Debian: python3-torch python3-torchvision; tools/install-deps.sh installs " \
                      "them): the ONNX import tests export their models with it";                                          \
  } while (false)

std::string file_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// FNV-1a, 64 bits: a cache key, not a checksum anyone relies on.
std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = 14695981039346656037ull) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

fs::path export_cache() {
  const fs::path dir = fs::temp_directory_path() / fmt::format("placesim-onnx-tests-{}", getuid());
  fs::create_directories(dir);
  return dir;
}

// Where exported() keeps an export: `<name>-<hash>.onnx`, the hash of tools/export_onnx.py, the
// arguments and the module file they name (FILE.py:Class), so that a changed exporter or module
// exports again. Reading the script and the module costs far less than an export.
fs::path export_path(const std::string& name, const std::string& arguments) {
  std::uint64_t key = fnv1a(file_bytes(fs::path(PLACESIM_TEST_SOURCE_DIR) / "tools" / "export_onnx.py"));
  key = fnv1a(std::string(1, '\0') + arguments, key);
  const std::string model = arguments.substr(0, arguments.find(' '));
  if (const auto py = model.rfind(".py:"); py != std::string::npos) key = fnv1a(file_bytes(model.substr(0, py + 3)), key);
  return export_cache() / fmt::format("{}-{:016x}.onnx", name, key);
}

// Exports once per machine, exporter, model source and arguments into a cache shared by the test
// processes (each ctest test is its own process); older exports of the same name (and the
// unhashed `<name>.onnx` of before) are removed. Written under a temporary name and renamed, so a
// parallel test never reads half a file.
std::string exported(const std::string& name, const std::string& arguments) {
  const fs::path file = export_path(name, arguments);
  const std::regex older(name + R"((-[0-9a-f]{16})?\.onnx)");
  for (const auto& entry : fs::directory_iterator(file.parent_path()))
    if (entry.path() != file && std::regex_match(entry.path().filename().string(), older)) fs::remove(entry.path());
  if (fs::exists(file)) return file.string();
  const fs::path partial = file.parent_path() / fmt::format("{}.{}.partial", file.stem().string(), getpid());
  std::string out;
  const int code = testutil::run_command(fmt::format("{} {}/tools/export_onnx.py {} -o {}", *torch_python(),
                                                    PLACESIM_TEST_SOURCE_DIR, arguments, partial.string()),
                                        out);
  if (code != 0) throw std::runtime_error("tools/export_onnx.py " + arguments + " failed:\n" + out);
  fs::rename(partial, file);
  return file.string();
}

constexpr const char* kSmallModule = R"(import torch
from torch import nn

class SmallNet(nn.Module):
    """conv 3->8 (3x3, padding 1) + batch norm + ReLU on 16x16 images, then two linear layers."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.fc1 = nn.Linear(8 * 16 * 16, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.relu(self.bn(self.conv(x)))
        return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))

class TinyViT(nn.Module):
    """A vision transformer in small: 4x4 patches of 16x16 images embedded to 32, a class token
    expanded over the batch (the shape arithmetic torchvision's ViT exports), one encoder layer,
    a linear head on the class token."""
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 32, 4, stride=4)
        self.class_token = nn.Parameter(torch.zeros(1, 1, 32))
        self.pos = nn.Parameter(torch.zeros(1, 17, 32))
        self.encoder = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        n = x.shape[0]
        x = self.patch(x).reshape(n, 32, -1).permute(0, 2, 1)
        x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1) + self.pos
        return self.head(self.encoder(x)[:, 0])

class BakedBatch(nn.Module):
    """A reshape by the batch the export saw, which torch.onnx writes as a constant: at another
    batch the reshape's -1 takes the difference, and the rest of the graph runs at the old batch
    without any shape error (torchvision's ViT does this)."""
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 32, 4, stride=4)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.patch(x).reshape(x.shape[0], 32, -1).mean(2))

class HalfInTheMiddle(nn.Module):
    """fp32 linear layers around a square taken in fp16 (CPU PyTorch has no fp16 ReLU): the
    activations between the casts, and their gradients, are 2 bytes an element."""
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        h = self.fc1(x).half()
        return self.fc2((h * h).float())

class BufferAndScalar(nn.Module):
    """A buffer of 32 added to an activation (state, not trained) and a scalar nn.Parameter that
    scales it (trained): what the file's metadata tells placesim and a guess would get wrong."""
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.register_buffer("offset", torch.ones(32))
        self.scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, x):
        return (self.fc(x) + self.offset) * self.scale

class WithCumsum(nn.Module):
    """A parameter's path through CumSum, which has no gradient rule in placesim."""
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return torch.cumsum(self.fc(x), dim=1)

class ForwardOnlyBranch(nn.Module):
    """Two linear layers side by side, one through CumSum: with `unsupported: forward-only` only
    fc2 is trained."""
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 16)
        self.fc2 = nn.Linear(16, 16)

    def forward(self, x):
        return self.fc2(x) + torch.cumsum(self.fc1(x), dim=1)

class WithCrossEntropy(nn.Module):
    """The loss in the graph (SoftmaxCrossEntropyLoss), against labels kept as a buffer."""
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 10)
        self.register_buffer("target", torch.tensor([1, 2, 3, 4]))

    def forward(self, x):
        return nn.functional.cross_entropy(self.fc(x), self.target)

class WithNllLoss(nn.Module):
    """NegativeLogLikelihoodLoss over the linear layer's outputs taken as log-probabilities (the
    exporter fuses a LogSoftmax right before it into SoftmaxCrossEntropyLoss)."""
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 10)
        self.register_buffer("target", torch.tensor([1, 2, 3, 4]))

    def forward(self, x):
        return nn.functional.nll_loss(self.fc(x), self.target)

class Embedded(nn.Module):
    """An embedding table of 50 x 8 (a Gather) over 6 token ids, flattened into a linear layer."""
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 8)
        self.fc = nn.Linear(6 * 8, 10)

    def forward(self, ids):
        return self.fc(self.embed(ids).flatten(1))
)";

std::string small_module_file() {
  const fs::path dir = export_cache();
  const fs::path file = dir / "small_modules.py";
  const fs::path partial = dir / fmt::format("small_modules.py.{}", getpid());
  std::ofstream(partial) << kSmallModule;
  fs::rename(partial, file);
  return file.string();
}

OnnxImport import_file(const std::string& file, std::int64_t batch = 0, const std::string& gpu = "a100") {
  OnnxImportOptions o;
  o.onnx = file;
  o.batch = batch;
  o.gpu = *models::find_gpu_preset(gpu);
  return models::import_onnx(o);
}

// Forward FLOPs and MACs of the ops recorded for the ONNX nodes (not the loss placesim adds).
struct Totals {
  double flops = 0, macs = 0;
};
Totals model_forward(const OnnxImport& m) {
  Totals t;
  for (const auto& op : m.recorded.ops())
    if (op.phase == Phase::Forward && !op.name.starts_with("loss/")) {
      t.flops += op.flops;
      t.macs += op.macs;
    }
  return t;
}

// Every forward op that reads a trained parameter has a gradient op of its own
// ("gradient_tape/<op>/...").
void expect_backward_for_every_parameter_op(const OnnxImport& m) {
  std::set<std::string> has_gradient;
  for (const auto& op : m.recorded.ops())
    if (op.phase == Phase::Backward && op.name.starts_with("gradient_tape/")) {
      const std::string rest = op.name.substr(std::string("gradient_tape/").size());
      has_gradient.insert(rest.substr(0, rest.rfind('/')));
    }
  int checked = 0;
  for (const auto& op : m.recorded.ops()) {
    if (op.phase != Phase::Forward || op.type == "VariableV2") continue;
    bool reads_parameter = false;
    for (auto t : op.inputs) {
      const auto& tensor = m.recorded.tensor(t);
      reads_parameter = reads_parameter || (tensor.read_of >= 0 && m.recorded.variables()[tensor.read_of].trainable);
    }
    if (!reads_parameter) continue;
    ++checked;
    EXPECT_TRUE(has_gradient.contains(op.name)) << op.name << " (" << op.type << ") reads a parameter but has no gradient op";
  }
  EXPECT_GT(checked, 0);
}

// The cache of exports follows what is exported: other arguments or another module source is
// another file; the same, the same file. (Needs no PyTorch: nothing is exported.)
TEST(OnnxImport, TheExportCacheIsKeyedOnWhatIsExported) {
  const fs::path module = export_cache() / fmt::format("cache_key.{}.py", getpid());
  std::ofstream(module) << "class Net: pass\n";
  const std::string arguments = module.string() + ":Net --input-shape 4";
  const fs::path first = export_path("key", arguments);
  EXPECT_EQ(export_path("key", arguments), first);
  EXPECT_TRUE(std::regex_match(first.filename().string(), std::regex(R"(key-[0-9a-f]{16}\.onnx)"))) << first;
  EXPECT_NE(export_path("key", arguments + " --batch 2"), first);
  std::ofstream(module) << "class Net: pass  # changed\n";
  EXPECT_NE(export_path("key", arguments), first);
  EXPECT_NE(export_path("key", "torchvision:resnet18"), export_path("key", "torchvision:resnet50"));
  fs::remove(module);
}

TEST(OnnxImport, SmallModuleMatchesItsClosedForm) {
  SKIP_WITHOUT_TORCH();
  const std::string file =
      exported("small", small_module_file() + ":SmallNet --input-shape 3,16,16 --batch 4");
  const OnnxImport m = import_file(file);
  EXPECT_EQ(m.batch, 4);
  EXPECT_EQ(m.node_types.at("Conv"), 1);
  EXPECT_EQ(m.node_types.at("BatchNormalization"), 1);
  EXPECT_EQ(m.node_types.at("Relu"), 2);
  EXPECT_EQ(m.node_types.at("Gemm"), 2);
  EXPECT_EQ(m.node_types.at("Flatten"), 1);
  // Parameters: conv 8*3*3*3, batch norm 2*8, fc1 2048*64 + 64, fc2 64*10 + 10.
  EXPECT_EQ(m.recorded.trainable_parameters(), 216 + 16 + 2048 * 64 + 64 + 640 + 10);
  // By hand, batch 4: the conv's output is 4x8x16x16 = 8,192 elements, each 3*3*3 = 27 MACs;
  // fc1 4*2048*64, fc2 4*64*10.
  const double conv_macs = 8192.0 * 27, fc1 = 4.0 * 2048 * 64, fc2 = 4.0 * 64 * 10;
  const Totals t = model_forward(m);
  EXPECT_DOUBLE_EQ(t.macs, conv_macs + fc1 + fc2);
  // FLOPs, counted directly: the conv 2 per MAC, batch norm 8 per element, ReLUs 1, the linear
  // layers 2 per MAC plus their bias. The 3x3 stride-1 conv is timed at Winograd's 2.25x fewer
  // multiplications (as the zoo), kept apart as its algorithm_flops.
  const double flops = 2 * conv_macs + 8 * 8192 + 8192 + (2 * fc1 + 4 * 64) + 4 * 64 + (2 * fc2 + 4 * 10);
  EXPECT_DOUBLE_EQ(t.flops, flops);
  for (const auto& op : m.recorded.ops())
    if (op.type == "Conv") {
      EXPECT_DOUBLE_EQ(op.algorithm_flops, 2 * conv_macs / 2.25) << op.name;
    }
  // Backward: no gradient for the images (the conv's input gradient is skipped); the filter
  // gradient, batch norm's 10 per element, the ReLUs 2, each linear layer's input and weight
  // gradients and bias sum, and the loss (softmax cross-entropy over 4x10) 2 per element.
  double backward = 0;
  int conv_input_gradients = 0;
  for (const auto& op : m.recorded.ops()) {
    if (op.phase == Phase::Backward) backward += op.flops;
    conv_input_gradients += op.type == "ConvBackpropInput";
  }
  EXPECT_EQ(conv_input_gradients, 0);
  const double expected_backward = 2 * conv_macs + 10 * 8192 + 2 * 8192 + 2 * 2 * fc1 + 4 * 64 + 2 * (4 * 64) + 2 * 2 * fc2 +
                                   4 * 10 + 2 * 40;
  EXPECT_DOUBLE_EQ(backward, expected_backward);
  expect_backward_for_every_parameter_op(m);
  // One Adam update per trained parameter tensor: conv weight, bn scale and bias, two per linear.
  int updates = 0;
  for (const auto& op : m.recorded.ops()) updates += op.type == "ApplyAdam";
  EXPECT_EQ(updates, 7);
  // The running statistics are state, not parameters.
  for (const auto& v : m.recorded.variables())
    if (v.name.find("running") != std::string::npos) {
      EXPECT_FALSE(v.trainable) << v.name;
    }
}

// A gradient keeps the precision of what it is the gradient of: the fp16 square's input gradients
// are fp16 (4 x 32 x 2 bytes), the fp32 layers' are fp32.
TEST(OnnxImport, GradientsKeepTheirTensorsPrecision) {
  SKIP_WITHOUT_TORCH();
  const OnnxImport m = import_file(exported("half", small_module_file() + ":HalfInTheMiddle --input-shape 16 --batch 4"));
  int square_gradients = 0, fp32_gradients = 0;
  for (const auto& op : m.recorded.ops()) {
    if (op.phase != Phase::Backward || op.outputs.empty()) continue;
    const auto& out = m.recorded.tensor(op.outputs[0]);
    if (op.type == "Mul") {
      ++square_gradients;
      EXPECT_EQ(out.dtype, models::DType::F16) << op.name;
      EXPECT_DOUBLE_EQ(out.bytes, 4 * 32 * 2) << op.name;
    }
    if (op.name.find("Gemm") != std::string::npos && out.dtype == models::DType::F32) ++fp32_gradients;
  }
  EXPECT_EQ(square_gradients, 2);  // one per factor
  EXPECT_GT(fp32_gradients, 0);
}

// The exporter's metadata names the trainable parameters: the linear layer's 16 x 32 + 32 and the
// scalar, 545; the buffer is state. The same file without the metadata (cut off where the
// exporter appended it) falls back on the guess: the buffer trained, the scalar a constant, 544.
TEST(OnnxImport, TheExportersMetadataNamesTheTrainableParameters) {
  SKIP_WITHOUT_TORCH();
  const std::string file = exported("buffer_and_scalar", small_module_file() + ":BufferAndScalar --input-shape 16 --batch 4");
  const OnnxImport declared = import_file(file);
  EXPECT_EQ(declared.recorded.trainable_parameters(), 16 * 32 + 32 + 1);
  int updates = 0;
  for (const auto& op : declared.recorded.ops()) updates += op.type == "ApplyAdam";
  EXPECT_EQ(updates, 3);  // weight, bias, scale
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t metadata = bytes.find("placesim.trainable_parameters");
  ASSERT_NE(metadata, std::string::npos);
  const fs::path bare = fs::path(file).parent_path() / fmt::format("bare.{}.onnx", getpid());
  std::ofstream(bare, std::ios::binary) << bytes.substr(0, metadata - 4);  // field 14's tag and two lengths
  const OnnxImport guessed = import_file(bare.string());
  EXPECT_EQ(guessed.recorded.trainable_parameters(), 16 * 32 + 32 + 32);
  fs::remove(bare);
}

TEST(OnnxImport, BatchOverridesTheExportedOne) {
  SKIP_WITHOUT_TORCH();
  const std::string file = exported("small", small_module_file() + ":SmallNet --input-shape 3,16,16 --batch 4");
  const OnnxImport at4 = import_file(file);
  const OnnxImport at12 = import_file(file, 12);
  EXPECT_EQ(at12.batch, 12);
  EXPECT_DOUBLE_EQ(model_forward(at12).macs, 3 * model_forward(at4).macs);
  EXPECT_EQ(at12.recorded.trainable_parameters(), at4.recorded.trainable_parameters());
}

// The shape arithmetic of a class token expanded over the batch (Constant, Unsqueeze, Concat,
// Shape, ConstantOfShape, Mul, Equal, Where into Expand; sim/models/onnx_shape_folding.h), which
// Debian's libonnx leaves unresolved alone. Parameters: patch embedding 3*32*16 + 32 = 1,568,
// class token 32, positions 17*32 = 544, encoder layer (attention in and out 3,168 + 1,056, MLP
// 2,112 + 2,080, two norms 128) 8,544, head 330: 11,018 in all.
TEST(OnnxImport, AClassTokenExpandedOverTheBatch) {
  SKIP_WITHOUT_TORCH();
  // At the export's batch: the exporter writes x.shape[0] as the constant 4 into the reshape.
  const std::string file = exported("tinyvit", small_module_file() + ":TinyViT --input-shape 3,16,16 --batch 4");
  {
    const std::int64_t batch = 4;
    const OnnxImport m = import_file(file);
    EXPECT_EQ(m.recorded.trainable_parameters(), 11'018);
    EXPECT_TRUE(m.node_types.contains("Expand"));
    expect_backward_for_every_parameter_op(m);
    // The encoder's attention over 17 tokens: the scores are [batch * heads, 17, 17].
    bool scores = false;
    for (const auto& op : m.recorded.ops())
      for (auto t : op.outputs)
        scores = scores || m.recorded.tensor(t).shape == models::Shape{batch * 4, 17, 17};
    EXPECT_TRUE(scores) << "batch " << batch;
  }
  // At another batch the constant 4 stays in the reshape, and shape inference fails.
  EXPECT_NE(testutil::input_error_message([&] { import_file(file, 8); }).find("export at this batch"), std::string::npos);
}

TEST(OnnxImport, ABatchFixedIntoTheGraphIsRefusedAtAnotherBatch) {
  SKIP_WITHOUT_TORCH();
  const std::string file = exported("baked", small_module_file() + ":BakedBatch --input-shape 3,16,16 --batch 4");
  EXPECT_EQ(import_file(file).batch, 4);
  // At batch 8 the reshape to (4, 32, -1) takes [8, 32, 4, 4] to [4, 32, 32]: inference succeeds,
  // and the head would run 4 rows, half the work. Refused, with the export to run.
  const std::string why = testutil::input_error_message([&] { import_file(file, 8); });
  EXPECT_NE(why.find("output 'output': exported at batch 4, its first dimension stays 4 at batch 8: the export fixed its "
                     "batch into the graph"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("tools/export_onnx.py --batch 8"), std::string::npos) << why;
}

TEST(OnnxImport, ResNet18FromTorchvision) {
  SKIP_WITHOUT_TORCH();
  const OnnxImport m = import_file(exported("resnet18-b2", "torchvision:resnet18 --batch 2"));
  const std::map<std::string, int> expected{{"Add", 8},     {"BatchNormalization", 20}, {"Conv", 20},     {"Flatten", 1},
                                            {"Gemm", 1},    {"GlobalAveragePool", 1},  {"MaxPool", 1},  {"Relu", 17}};
  EXPECT_EQ(m.node_types, expected);
  EXPECT_EQ(m.recorded.trainable_parameters(), 11'689'512);  // torchvision's count
  // 1.814 GMAC per 224x224 image (torchvision's model card: 1.81 GFLOPS, counted as MACs).
  EXPECT_NEAR(model_forward(m).macs / 2 / 1e9, 1.814, 0.001);
  expect_backward_for_every_parameter_op(m);
  // Every forward op has its training counterpart: an Adam update per parameter tensor (62).
  int updates = 0;
  for (const auto& op : m.recorded.ops()) updates += op.type == "ApplyAdam";
  EXPECT_EQ(updates, 62);
}

// Torchvision's ResNet-50 through ONNX against the zoo's (sim/models/cnn.cpp, fused style, the same
// batch and GPU). Differences, all in the head: ONNX's Gemm is the zoo's MatMul + AddV2 (and its
// gradients Gemm x2 for MatMul x2); GlobalAveragePool is the zoo's Mean (gradient BroadcastTo);
// ONNX has a Flatten view (and its Reshape gradient); the zoo computes a Softmax for its accuracy
// metric. Compute agrees to 0.1%, parameters and their bytes exactly.
TEST(OnnxImport, ResNet50MatchesTheZoos) {
  SKIP_WITHOUT_TORCH();
  const OnnxImport imported = import_file(exported("resnet50-b32", "torchvision:resnet50 --batch 32"));
  const Graph onnx = imported.recorded.to_graph(*models::find_gpu_preset("a100"), "resnet50.onnx");
  models::ModelConfig config;
  config.model = "resnet50";
  config.batch = 32;
  config.style = models::GraphStyle::Fused;
  config.gpu = *models::find_gpu_preset("a100");
  const models::ModelBuilder zoo_recorded = models::record_model(models::resolve_model_config(config));
  const Graph zoo = zoo_recorded.to_graph(config.gpu, "zoo");
  EXPECT_EQ(onnx.num_operators(), zoo.num_operators());
  EXPECT_EQ(imported.recorded.trainable_parameters(), zoo_recorded.trainable_parameters());
  double onnx_parameter_bytes = 0, zoo_parameter_bytes = 0;
  for (const auto& op : imported.recorded.ops()) onnx_parameter_bytes += op.resident_bytes;
  for (const auto& op : zoo_recorded.ops()) zoo_parameter_bytes += op.resident_bytes;
  EXPECT_DOUBLE_EQ(onnx_parameter_bytes, zoo_parameter_bytes);
  EXPECT_NEAR(onnx.total_compute() / zoo.total_compute(), 1.0, 1e-3);
  EXPECT_NEAR(onnx.total_memory() / zoo.total_memory(), 1.0, 1e-3);
  EXPECT_NEAR(model_forward(imported).macs, zoo_recorded.forward_macs(), 1e-6 * zoo_recorded.forward_macs());
}

TEST(OnnxImport, ANodeWithoutAGradientRuleIsAnErrorUnlessForwardOnly) {
  SKIP_WITHOUT_TORCH();
  const std::string file = exported("cumsum", small_module_file() + ":WithCumsum --input-shape 16 --batch 2");
  OnnxImportOptions o;
  o.onnx = file;
  EXPECT_INPUT_ERROR(models::import_onnx(o), "(CumSum)", "no gradient rule for CumSum", "unsupported: forward-only");
  o.unsupported = models::UnsupportedOps::ForwardOnly;
  // Kept without a gradient, so nothing downstream of fc depends on a parameter with a gradient:
  // there is nothing to train.
  EXPECT_INPUT_ERROR(models::import_onnx(o), "graph.output", "nothing to train");
  o.training = false;
  const OnnxImport forward = models::import_onnx(o);
  EXPECT_EQ(forward.node_types.at("CumSum"), 1);
  EXPECT_EQ(forward.backward_flops, 0);
}

// With `unsupported: forward-only` the CumSum node is kept and said so: the import's warning
// and `graph import`'s stderr name it. fc1 lies behind it and gets no gradient: only fc2 is
// updated. Backward by hand (batch 4, 16 outputs): the added loss 2 * 64, fc2's weight gradient
// 2 * 4 * 16 * 16 and bias sum 4 * 16; no input gradient (x is the graph's input), nothing for fc1.
TEST(OnnxImport, ForwardOnlyKeepsTheNodeAndWarns) {
  SKIP_WITHOUT_TORCH();
  const std::string file = exported("forward_only", small_module_file() + ":ForwardOnlyBranch --input-shape 16 --batch 4");
  OnnxImportOptions o;
  o.onnx = file;
  EXPECT_INPUT_ERROR(models::import_onnx(o), "(CumSum)", "no gradient rule for CumSum");
  o.unsupported = models::UnsupportedOps::ForwardOnly;
  const OnnxImport m = models::import_onnx(o);
  EXPECT_EQ(m.node_types.at("CumSum"), 1);
  const std::string expected = file + ": 1 node without a gradient rule kept forward-only (no gradient flows through them; "
                                      "costed as one pass over their tensors): CumSum x1";
  EXPECT_NE(std::find(m.warnings.begin(), m.warnings.end(), expected), m.warnings.end()) << fmt::format("{}", fmt::join(m.warnings, "\n"));
  int updates = 0;
  for (const auto& op : m.recorded.ops()) {
    updates += op.type == "ApplyAdam";
    if (op.phase == Phase::Backward) {
      EXPECT_EQ(op.name.find("fc1"), std::string::npos) << op.name << " is a gradient of fc1";
    }
  }
  EXPECT_EQ(updates, 2);  // fc2's weight and bias
  EXPECT_DOUBLE_EQ(m.backward_flops, 2 * 64 + 2 * 4 * 16 * 16 + 4 * 16);
  const fs::path dir = fs::temp_directory_path() / fmt::format("placesim-onnx-forward-only-{}", getpid());
  fs::create_directories(dir);
  std::string out;
  ASSERT_EQ(testutil::run_cli(fmt::format("graph import {} -o {}/m.json --unsupported forward-only", file, dir.string()), out), 0)
      << out;
  EXPECT_NE(out.find("warning: " + expected), std::string::npos) << out;
  fs::remove_all(dir);
}

// A loss the model computes itself is the loss: no softmax cross-entropy is added, and the
// backward starts from it. By hand, batch 4, 16 -> 10: the linear layer 2 * 4 * 16 * 10 + 40
// (bias) forward; backward, the loss's gradient, the weight gradient 1,280 and the bias sum 40.
// SoftmaxCrossEntropyLoss costs 6 per logit forward, NegativeLogLikelihoodLoss 1; both 2 backward.
TEST(OnnxImport, AnInGraphLossImportsWithItsBackward) {
  SKIP_WITHOUT_TORCH();
  for (const auto& [module, loss_type, loss_flops] :
       {std::tuple<std::string, std::string, double>{"WithCrossEntropy", "SoftmaxCrossEntropyLoss", 6 * 40},
        std::tuple<std::string, std::string, double>{"WithNllLoss", "NegativeLogLikelihoodLoss", 40}}) {
    SCOPED_TRACE(module);
    const OnnxImport m = import_file(exported(module, small_module_file() + ":" + module + " --input-shape 16 --batch 4"));
    EXPECT_EQ(m.node_types, (std::map<std::string, int>{{"Gemm", 1}, {loss_type, 1}}));
    for (const auto& w : m.warnings) EXPECT_EQ(w.find("added softmax cross-entropy"), std::string::npos) << w;
    EXPECT_DOUBLE_EQ(m.forward_flops, 2 * 4 * 16 * 10 + 40 + loss_flops);
    EXPECT_DOUBLE_EQ(m.backward_flops, 2 * 40 + 2 * 4 * 16 * 10 + 40);
    int loss_gradients = 0, updates = 0;
    for (const auto& op : m.recorded.ops()) {
      updates += op.type == "ApplyAdam";
      if (op.type != loss_type + "Grad") continue;
      ++loss_gradients;
      EXPECT_EQ(op.phase, Phase::Backward);
      EXPECT_DOUBLE_EQ(op.flops, 2 * 40);
      ASSERT_EQ(op.outputs.size(), 1u);
      EXPECT_EQ(m.recorded.tensor(op.outputs[0]).shape, (models::Shape{4, 10}));  // the logits' gradient
    }
    EXPECT_EQ(loss_gradients, 1);
    EXPECT_EQ(updates, 2);
    expect_backward_for_every_parameter_op(m);
  }
}

// An embedding table is trained through its Gather: a ScatterAdd writes the whole table's
// gradient (50 x 8 fp32, 1,600 bytes) from the 4 x 6 x 8 = 192 gathered rows' gradients, and
// the table gets its Adam update, which reads that gradient.
TEST(OnnxImport, AnEmbeddingGatherIsTrained) {
  SKIP_WITHOUT_TORCH();
  const OnnxImport m =
      import_file(exported("embedded", small_module_file() + ":Embedded --input-shape 6 --input-dtype int64 --vocab 50 --batch 4"));
  EXPECT_EQ(m.node_types.at("Gather"), 1);
  EXPECT_EQ(m.recorded.trainable_parameters(), 50 * 8 + 48 * 10 + 10);
  std::int32_t scatter = -1, scatters = 0;
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(m.recorded.ops().size()); ++i)
    if (m.recorded.ops()[i].type == "ScatterAdd") {
      scatter = i;
      ++scatters;
    }
  ASSERT_EQ(scatters, 1);
  const auto& grad = m.recorded.ops()[scatter];
  EXPECT_EQ(grad.phase, Phase::Backward);
  EXPECT_DOUBLE_EQ(grad.flops, 4 * 6 * 8);
  ASSERT_EQ(grad.outputs.size(), 1u);
  const auto& table_gradient = m.recorded.tensor(grad.outputs[0]);
  EXPECT_EQ(table_gradient.shape, (models::Shape{50, 8}));
  EXPECT_DOUBLE_EQ(table_gradient.bytes, 50 * 8 * 4);
  // The update that reads the table's gradient, and it is the table's.
  int updates = 0, table_updates = 0;
  for (const auto& op : m.recorded.ops()) {
    if (op.type != "ApplyAdam") continue;
    ++updates;
    if (std::find(op.inputs.begin(), op.inputs.end(), grad.outputs[0]) == op.inputs.end()) continue;
    ++table_updates;
    EXPECT_NE(op.name.find("embed"), std::string::npos) << op.name;
  }
  EXPECT_EQ(updates, 3);  // the table, fc's weight and bias
  EXPECT_EQ(table_updates, 1);
  // In the placesim graph, the gradient goes to the update as a parameter gradient of 1,600 bytes.
  const Graph g = m.recorded.to_graph(*models::find_gpu_preset("a100"), "embedded");
  const auto gather_grad = g.find(grad.name);
  ASSERT_TRUE(gather_grad);
  bool to_update = false;
  for (EdgeId e : g.out_edges(*gather_grad)) {
    const Tensor& t = g.tensor(e);
    if (g.op(t.dst).type != "ApplyAdam") continue;
    to_update = true;
    EXPECT_TRUE(t.gradient);
    EXPECT_DOUBLE_EQ(t.bytes, 1600);
  }
  EXPECT_TRUE(to_update);
}

// Without PyTorch for the interpreter that runs it (here a venv made of a symlink to Debian's
// python3 and a pyvenv.cfg, which sees no Debian packages), the exporter names that interpreter
// and says to run Debian's /usr/bin/python3, which python3-torch is installed for; exit 2.
TEST(OnnxImport, TheExporterNamesTheInterpreterWithoutTorch) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 (Debian: python3)";
  const fs::path venv = fs::temp_directory_path() / fmt::format("placesim-onnx-venv-{}", getpid());
  fs::remove_all(venv);
  fs::create_directories(venv / "bin");
  fs::create_symlink("/usr/bin/python3", venv / "bin" / "python3");
  std::ofstream(venv / "pyvenv.cfg") << "home = /usr/bin\ninclude-system-site-packages = false\n";
  const std::string python = (venv / "bin" / "python3").string();
  const std::string script = fmt::format("{}/tools/export_onnx.py", PLACESIM_TEST_SOURCE_DIR);
  std::string out;
  EXPECT_EQ(testutil::run_command(fmt::format("{} {} torchvision:resnet18 -o {}/r.onnx", python, script, venv.string()), out), 2)
      << out;
  EXPECT_NE(out.find(fmt::format("export_onnx: error: PyTorch is not installed for {} (Debian: apt-get install python3-torch); "
                                 "Debian's python3-torch is installed for /usr/bin/python3: run /usr/bin/python3 {} "
                                 "torchvision:resnet18 -o {}/r.onnx",
                                 python, script, venv.string())),
            std::string::npos)
      << out;
  // Debian's own interpreter without its packages (-S): named, and no advice to run itself.
  EXPECT_EQ(testutil::run_command(fmt::format("/usr/bin/python3 -S {} torchvision:resnet18 -o {}/r.onnx", script, venv.string()), out),
            2)
      << out;
  EXPECT_NE(out.find("PyTorch is not installed for /usr/bin/python3 (Debian: apt-get install python3-torch)\n"), std::string::npos)
      << out;
  fs::remove_all(venv);
}

// The README's path: `graph import`, then a scenario with `onnx:` run end to end.
TEST(OnnxImport, CommandLineAndScenario) {
  SKIP_WITHOUT_TORCH();
  const std::string file = exported("small", small_module_file() + ":SmallNet --input-shape 3,16,16 --batch 4");
  const fs::path dir = fs::temp_directory_path() / fmt::format("placesim-onnx-cli-{}", getpid());
  fs::create_directories(dir);
  std::string out;
  ASSERT_EQ(testutil::run_cli(fmt::format("graph import {} -o {}/small.json --gpu v100 --batch 8", file, dir.string()), out), 0) << out;
  EXPECT_NE(out.find("ONNX nodes (BatchNormalization 1, Conv 1, Flatten 1, Gemm 2, Relu 2), batch 8"), std::string::npos) << out;
  EXPECT_NE(out.find("added softmax cross-entropy over output 'output' [8, 10]"), std::string::npos) << out;
  EXPECT_NE(out.find("on v100 (fp32 peak 15.7 TFLOP/s"), std::string::npos) << out;
  EXPECT_NE(out.find("`plan --gpu v100` runs fp16: --precision fp16 times this graph"), std::string::npos) << out;
  EXPECT_EQ(testutil::run_cli(fmt::format("graph import {} -o {}/x.json --unsupported skip", file, dir.string()), out), 2) << out;
  EXPECT_NE(out.find("error: command line: --unsupported: expected error or forward-only, got 'skip'"), std::string::npos) << out;
  std::ofstream(dir / "s.yaml") << fmt::format(
      "graph: {{onnx: {}, gpu: a100}}\ncluster: {{type: full-mesh, gpus: 2, bandwidth: 20GB/s}}\n"
      "strategies: [single-device, m-etf]\noutput: {}\n",
      file, (dir / "out").string());
  ASSERT_EQ(testutil::run_cli("run " + (dir / "s.yaml").string(), out), 0) << out;
  EXPECT_NE(out.find("m-etf"), std::string::npos) << out;
  fs::remove_all(dir);
}

TEST(OnnxImport, BadFilesAreInputErrors) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("placesim-onnx-bad-{}", getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "text.onnx") << "this is not protobuf at all\n";
  OnnxImportOptions o;
  o.onnx = (dir / "text.onnx").string();
  EXPECT_INPUT_ERROR(models::import_onnx(o), "", "not an ONNX model");
  o.onnx = (dir / "absent.onnx").string();
  EXPECT_INPUT_ERROR(models::import_onnx(o), "", "cannot open");
  fs::remove_all(dir);
}

TEST(OnnxImport, ScenarioGraphSourceParsesAndResolvesItsPath) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("placesim-onnx-source-{}", getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "model.onnx") << "";  // the path is checked when read; the model when loaded
  const std::string scenario = (dir / "s.yaml").string();
  const YAML::Node node = YAML::Load("{onnx: model.onnx, batch: 16, gpu: v100, unsupported: forward-only}");
  const GraphSource g = graph_source_from_yaml(node, scenario, "graph");
  ASSERT_TRUE(g.onnx);
  EXPECT_EQ(g.onnx->onnx, "model.onnx");
  EXPECT_EQ(g.onnx->batch, 16);
  EXPECT_EQ(g.onnx->gpu.name, "v100");
  EXPECT_EQ(g.onnx->unsupported, models::UnsupportedOps::ForwardOnly);
  EXPECT_INPUT_ERROR(graph_source_from_yaml(YAML::Load("{onnx: m.onnx, batchh: 3}"), "s.yaml", "graph"), "batchh", "batch");
  EXPECT_INPUT_ERROR(graph_source_from_yaml(YAML::Load("{onnx: m.onnx, unsupported: skip}"), "s.yaml", "graph"),
                     "unsupported", "forward-only");
  EXPECT_INPUT_ERROR(graph_source_from_yaml(YAML::Load("{onnx: absent.onnx}"), scenario, "graph"), "graph.onnx",
                     "absent.onnx' does not exist");
  std::vector<std::string> warnings;
  EXPECT_INPUT_ERROR(load_graph_source(g, "/nowhere/s.yaml", warnings), "graph.onnx", "does not exist");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace placesim
