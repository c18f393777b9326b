#pragma once
// The architectures of the zoo (internal to sim/models): each records its forward pass and loss
// into the builder and returns the scalar loss; record_model() adds the backward pass and the
// optimizer. `config` is resolved (every size set).
#include "sim/models/builder.h"
#include "sim/models/zoo.h"

namespace placesim::models {

Tid build_alexnet(ModelBuilder& b, const ModelConfig& config);
Tid build_vgg16(ModelBuilder& b, const ModelConfig& config);
Tid build_resnet50(ModelBuilder& b, const ModelConfig& config);
Tid build_inception_v3(ModelBuilder& b, const ModelConfig& config);
Tid build_bert(ModelBuilder& b, const ModelConfig& config, bool fourier_mixing);
Tid build_gpt2(ModelBuilder& b, const ModelConfig& config);
Tid build_transformer(ModelBuilder& b, const ModelConfig& config);
Tid build_gnmt(ModelBuilder& b, const ModelConfig& config);

}  // namespace placesim::models
