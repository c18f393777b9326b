#pragma once
// The integer arithmetic an exported model does on shapes, done before ONNX shape inference.
//
// PyTorch's exporter writes the target of a Reshape or an Expand as a small computation: scalar
// Constants unsqueezed and concatenated, the Shape of a tensor, Gather, ConstantOfShape, Mul,
// Equal, Where... (torchvision's ViT expands its class token so). Debian's libonnx (1.12)
// propagates data through some of these ops but not from Constant nodes, so such targets stay
// unknown and every shape after them too. fold_shape_arithmetic evaluates those nodes on their
// known integer values and hands shape inference a copy of the model in which they are
// initializers: the importer keeps the original nodes (they are operators of the graph, with no
// kernel) and takes every value's shape from the copy.
#include <onnx/onnx_pb.h>

namespace placesim::models {

// Runs shape inference (strict, with data propagation) on a copy of `model` whose shape
// arithmetic is folded into initializers, folding again after each inference (a Shape node folds
// once its input's shape is known) until nothing more folds. Returns the copy, whose graph's
// value_info, outputs and initializers give every value's type. Integer and boolean tensors of
// up to 65,536 elements fold; floating-point values never do. Throws what InferShapes throws.
onnx::ModelProto infer_shapes_with_folding(const onnx::ModelProto& model);

}  // namespace placesim::models
