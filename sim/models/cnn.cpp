// Convolutional networks of the zoo. Images are NHWC float32; labels int32.
#include <fmt/format.h>

#include "sim/models/architectures.h"
#include "sim/models/layers.h"

namespace placesim::models {

namespace {

struct ImageBatch {
  Tid images, labels;
};

ImageBatch image_inputs(ModelBuilder& b, const ModelConfig& c) {
  return {b.input("input", {c.batch, c.image, c.image, 3}), b.input("target", {c.batch, 1}, DType::I32)};
}

// Flatten, the classifier and the loss: returns the loss.
Tid classify(ModelBuilder& b, Tid logits, Tid labels) {
  Tid probs;
  {
    auto s = b.scope("softmax");
    probs = b.softmax(logits);
  }
  return classification_loss(b, "sparse_categorical_crossentropy", logits, labels, probs);
}

Tid flatten(ModelBuilder& b, Tid x) {
  const Shape s = b.tensor(x).shape;
  auto scope = b.scope("flatten");
  return b.reshape(x, {s[0], s[1] * s[2] * s[3]}, "Reshape");
}

// Keras's CIFAR-10 networks of the QuickP graphs: Conv2D -> ReLU -> BatchNormalization.
Tid conv_relu_bn(ModelBuilder& b, int index, Tid x, int filters) {
  x = conv2d_layer(b, fmt::format("conv{}", index), x, filters, 3, 3);
  x = relu_layer(b, fmt::format("relu{}", index), x);
  return batch_norm(b, fmt::format("bn{}", index), x);
}

Tid max_pool_2x2(ModelBuilder& b, int index, Tid x) {
  auto s = b.scope(fmt::format("pool{}", index));
  return b.pool(x, 2, 2, false, true, "MaxPool2d");
}

Tid dense_relu_dropout(ModelBuilder& b, int index, Tid x, std::int64_t units) {
  x = dense(b, fmt::format("dense{}", index), x, units);
  x = relu_layer(b, fmt::format("relu_dense{}", index), x);
  return dropout(b, fmt::format("dropout{}", index), x);
}

// conv (no bias) -> BN -> ReLU, the unit of ResNet and Inception.
Tid conv_bn_relu(ModelBuilder& b, std::string_view name, Tid x, int filters, int kh, int kw, int stride, bool same,
                 bool relu = true) {
  auto s = b.scope(name);
  x = conv2d_layer(b, "conv", x, filters, kh, kw, stride, same, false);
  x = batch_norm(b, "bn", x);
  return relu ? b.relu(x) : x;
}

Tid global_average_pool(ModelBuilder& b, Tid x) {
  auto s = b.scope("avg_pool");
  return b.mean(x, {1, 2}, false, "Mean");
}

}  // namespace

namespace {

// AlexNet's and VGG's head: flatten, two 4096-wide dense layers with dropout, the logits.
Tid classifier_head(ModelBuilder& b, Tid x, std::int64_t classes) {
  x = flatten(b, x);
  x = dense_relu_dropout(b, 1, x, 4096);
  x = dense_relu_dropout(b, 2, x, 4096);
  return dense(b, "dense3", x, classes);
}

}  // namespace

Tid build_alexnet(ModelBuilder& b, const ModelConfig& c) {
  const auto in = image_inputs(b, c);
  Tid logits;
  {
    auto s = b.scope("alexnet");
    Tid x = conv_relu_bn(b, 1, in.images, 96);
    x = max_pool_2x2(b, 1, x);
    x = conv_relu_bn(b, 2, x, 256);
    x = max_pool_2x2(b, 2, x);
    x = conv_relu_bn(b, 3, x, 384);
    x = conv_relu_bn(b, 4, x, 384);
    x = conv_relu_bn(b, 5, x, 256);
    x = max_pool_2x2(b, 3, x);
    logits = classifier_head(b, x, c.classes);
  }
  return classify(b, logits, in.labels);
}

Tid build_vgg16(ModelBuilder& b, const ModelConfig& c) {
  const auto in = image_inputs(b, c);
  Tid logits;
  {
    auto s = b.scope("vgg16");
    Tid x = in.images;
    const int blocks[5][2] = {{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}};
    int index = 1;
    for (int blk = 0; blk < 5; ++blk) {
      for (int k = 0; k < blocks[blk][1]; ++k) x = conv_relu_bn(b, index++, x, blocks[blk][0]);
      x = max_pool_2x2(b, blk + 1, x);
    }
    logits = classifier_head(b, x, c.classes);
  }
  return classify(b, logits, in.labels);
}

Tid build_resnet50(ModelBuilder& b, const ModelConfig& c) {
  const auto in = image_inputs(b, c);
  Tid logits;
  {
    auto s = b.scope("resnet50");
    Tid x = conv_bn_relu(b, "conv1", in.images, 64, 7, 7, 2, true);
    {
      auto p = b.scope("pool1");
      x = b.pool(x, 3, 2, true, true, "MaxPool");
    }
    const int stages[4][3] = {{64, 3, 1}, {128, 4, 2}, {256, 6, 2}, {512, 3, 2}};
    for (int st = 0; st < 4; ++st) {
      for (int blk = 0; blk < stages[st][1]; ++blk) {
        auto bs = b.scope(fmt::format("res{}_{}", st + 2, blk));
        const int planes = stages[st][0];
        const int stride = blk == 0 ? stages[st][2] : 1;
        // v1.5 (torchvision): the stride sits on the 3x3 convolution.
        Tid y = conv_bn_relu(b, "branch2a", x, planes, 1, 1, 1, true);
        y = conv_bn_relu(b, "branch2b", y, planes, 3, 3, stride, true);
        y = conv_bn_relu(b, "branch2c", y, 4 * planes, 1, 1, 1, true, false);
        const Tid shortcut = blk == 0 ? conv_bn_relu(b, "branch1", x, 4 * planes, 1, 1, stride, true, false) : x;
        x = b.relu(b.add(y, shortcut, "add"), "Relu");
      }
    }
    x = global_average_pool(b, x);
    logits = dense(b, "fc", x, c.classes);
  }
  return classify(b, logits, in.labels);
}

namespace {

Tid concat_channels(ModelBuilder& b, std::initializer_list<Tid> parts) {
  const std::vector<Tid> v(parts);
  return b.concat(v, 3, "concat");
}

Tid avg_pool_3x3(ModelBuilder& b, Tid x) {
  auto s = b.scope("branch_pool_avg");
  return b.pool(x, 3, 1, true, false, "AvgPool");
}

Tid inception_a(ModelBuilder& b, std::string_view name, Tid x, int pool_features) {
  auto s = b.scope(name);
  const Tid b1 = conv_bn_relu(b, "branch1x1", x, 64, 1, 1, 1, true);
  const Tid b5 = conv_bn_relu(b, "branch5x5_2", conv_bn_relu(b, "branch5x5_1", x, 48, 1, 1, 1, true), 64, 5, 5, 1, true);
  Tid b3 = conv_bn_relu(b, "branch3x3dbl_1", x, 64, 1, 1, 1, true);
  b3 = conv_bn_relu(b, "branch3x3dbl_2", b3, 96, 3, 3, 1, true);
  b3 = conv_bn_relu(b, "branch3x3dbl_3", b3, 96, 3, 3, 1, true);
  const Tid bp = conv_bn_relu(b, "branch_pool", avg_pool_3x3(b, x), pool_features, 1, 1, 1, true);
  return concat_channels(b, {b1, b5, b3, bp});
}

Tid inception_b(ModelBuilder& b, std::string_view name, Tid x) {
  auto s = b.scope(name);
  const Tid b3 = conv_bn_relu(b, "branch3x3", x, 384, 3, 3, 2, false);
  Tid bd = conv_bn_relu(b, "branch3x3dbl_1", x, 64, 1, 1, 1, true);
  bd = conv_bn_relu(b, "branch3x3dbl_2", bd, 96, 3, 3, 1, true);
  bd = conv_bn_relu(b, "branch3x3dbl_3", bd, 96, 3, 3, 2, false);
  Tid bp;
  {
    auto p = b.scope("branch_pool");
    bp = b.pool(x, 3, 2, false, true, "MaxPool");
  }
  return concat_channels(b, {b3, bd, bp});
}

Tid inception_c(ModelBuilder& b, std::string_view name, Tid x, int c7) {
  auto s = b.scope(name);
  const Tid b1 = conv_bn_relu(b, "branch1x1", x, 192, 1, 1, 1, true);
  Tid b7 = conv_bn_relu(b, "branch7x7_1", x, c7, 1, 1, 1, true);
  b7 = conv_bn_relu(b, "branch7x7_2", b7, c7, 1, 7, 1, true);
  b7 = conv_bn_relu(b, "branch7x7_3", b7, 192, 7, 1, 1, true);
  Tid bd = conv_bn_relu(b, "branch7x7dbl_1", x, c7, 1, 1, 1, true);
  bd = conv_bn_relu(b, "branch7x7dbl_2", bd, c7, 7, 1, 1, true);
  bd = conv_bn_relu(b, "branch7x7dbl_3", bd, c7, 1, 7, 1, true);
  bd = conv_bn_relu(b, "branch7x7dbl_4", bd, c7, 7, 1, 1, true);
  bd = conv_bn_relu(b, "branch7x7dbl_5", bd, 192, 1, 7, 1, true);
  const Tid bp = conv_bn_relu(b, "branch_pool", avg_pool_3x3(b, x), 192, 1, 1, 1, true);
  return concat_channels(b, {b1, b7, bd, bp});
}

Tid inception_d(ModelBuilder& b, std::string_view name, Tid x) {
  auto s = b.scope(name);
  const Tid b3 = conv_bn_relu(b, "branch3x3_2", conv_bn_relu(b, "branch3x3_1", x, 192, 1, 1, 1, true), 320, 3, 3, 2, false);
  Tid b7 = conv_bn_relu(b, "branch7x7x3_1", x, 192, 1, 1, 1, true);
  b7 = conv_bn_relu(b, "branch7x7x3_2", b7, 192, 1, 7, 1, true);
  b7 = conv_bn_relu(b, "branch7x7x3_3", b7, 192, 7, 1, 1, true);
  b7 = conv_bn_relu(b, "branch7x7x3_4", b7, 192, 3, 3, 2, false);
  Tid bp;
  {
    auto p = b.scope("branch_pool");
    bp = b.pool(x, 3, 2, false, true, "MaxPool");
  }
  return concat_channels(b, {b3, b7, bp});
}

Tid inception_e(ModelBuilder& b, std::string_view name, Tid x) {
  auto s = b.scope(name);
  const Tid b1 = conv_bn_relu(b, "branch1x1", x, 320, 1, 1, 1, true);
  const Tid b3 = conv_bn_relu(b, "branch3x3_1", x, 384, 1, 1, 1, true);
  const Tid b3a = conv_bn_relu(b, "branch3x3_2a", b3, 384, 1, 3, 1, true);
  const Tid b3b = conv_bn_relu(b, "branch3x3_2b", b3, 384, 3, 1, 1, true);
  Tid bd = conv_bn_relu(b, "branch3x3dbl_1", x, 448, 1, 1, 1, true);
  bd = conv_bn_relu(b, "branch3x3dbl_2", bd, 384, 3, 3, 1, true);
  const Tid bda = conv_bn_relu(b, "branch3x3dbl_3a", bd, 384, 1, 3, 1, true);
  const Tid bdb = conv_bn_relu(b, "branch3x3dbl_3b", bd, 384, 3, 1, 1, true);
  const Tid bp = conv_bn_relu(b, "branch_pool", avg_pool_3x3(b, x), 192, 1, 1, 1, true);
  return concat_channels(b, {b1, b3a, b3b, bda, bdb, bp});
}

}  // namespace

Tid build_inception_v3(ModelBuilder& b, const ModelConfig& c) {
  const auto in = image_inputs(b, c);
  Tid logits;
  {
    auto s = b.scope("inception_v3");
    Tid x = conv_bn_relu(b, "Conv2d_1a_3x3", in.images, 32, 3, 3, 2, false);
    x = conv_bn_relu(b, "Conv2d_2a_3x3", x, 32, 3, 3, 1, false);
    x = conv_bn_relu(b, "Conv2d_2b_3x3", x, 64, 3, 3, 1, true);
    {
      auto p = b.scope("maxpool1");
      x = b.pool(x, 3, 2, false, true, "MaxPool");
    }
    x = conv_bn_relu(b, "Conv2d_3b_1x1", x, 80, 1, 1, 1, false);
    x = conv_bn_relu(b, "Conv2d_4a_3x3", x, 192, 3, 3, 1, false);
    {
      auto p = b.scope("maxpool2");
      x = b.pool(x, 3, 2, false, true, "MaxPool");
    }
    x = inception_a(b, "Mixed_5b", x, 32);
    x = inception_a(b, "Mixed_5c", x, 64);
    x = inception_a(b, "Mixed_5d", x, 64);
    x = inception_b(b, "Mixed_6a", x);
    x = inception_c(b, "Mixed_6b", x, 128);
    x = inception_c(b, "Mixed_6c", x, 160);
    x = inception_c(b, "Mixed_6d", x, 160);
    x = inception_c(b, "Mixed_6e", x, 192);
    x = inception_d(b, "Mixed_7a", x);
    x = inception_e(b, "Mixed_7b", x);
    x = inception_e(b, "Mixed_7c", x);
    x = global_average_pool(b, x);
    x = dropout(b, "dropout", x);
    logits = dense(b, "fc", x, c.classes);
  }
  return classify(b, logits, in.labels);
}

}  // namespace placesim::models
