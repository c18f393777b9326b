// PlacetoPolicy: forwards to the policy model of the LibTorch plugin, loaded on first use.
#include "placement/strategies/placeto/placeto_policy.h"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>

#include "placement/strategies/placeto/placeto_plugin.h"
#include "sim/config/data_dir.h"
#include "sim/core/errors.h"

#ifdef PLACESIM_HAVE_TORCH
#include <dlfcn.h>
#endif

namespace placesim {

namespace {

#ifdef PLACESIM_HAVE_TORCH
// dlopens the plugin and checks that it was built against these headers. Never closed: LibTorch
// does not support being unloaded, and policy objects keep pointers into the plugin's code.
const PlacetoTorchPlugin* open_torch_plugin() {
  const char* override_path = std::getenv("PLACESIM_TORCH_PLUGIN");
  const std::string path = override_path && *override_path ? override_path : plugin_path(PLACESIM_TORCH_PLUGIN_NAME).string();
  const std::string fix = "the placeto strategy needs placesim's LibTorch plugin (built with placesim; the "
                          "environment variable PLACESIM_TORCH_PLUGIN overrides its path)";
  // RTLD_NOW: a missing symbol is reported here, not as a crash in the middle of training.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw InputError(path, "", fmt::format("cannot load the plugin: {}; {}", dlerror(), fix));
  using Entry = const PlacetoTorchPlugin* (*)();
  const auto entry = reinterpret_cast<Entry>(dlsym(handle, kPlacetoPluginEntry));
  if (!entry) throw InputError(path, "", fmt::format("not a placesim plugin: {}; {}", dlerror(), fix));
  const PlacetoTorchPlugin* plugin = entry();
  const PlacetoTorchPlugin expected;
  if (!plugin || plugin->abi != expected.abi || plugin->env_size != expected.env_size ||
      plugin->train_config_size != expected.train_config_size || !plugin->create || !plugin->load)
    throw InputError(path, "", "the plugin was built from other sources than this placesim: rebuild both");
  return plugin;
}
#endif

const PlacetoTorchPlugin& torch_plugin() {
#ifdef PLACESIM_HAVE_TORCH
  // Loaded once per process; a failed load throws and is tried again by the next call.
  static const PlacetoTorchPlugin* const plugin = open_torch_plugin();
  return *plugin;
#else
  throw InputError("", "placeto", "this placesim was built without LibTorch (install libtorch-dev and rebuild)");
#endif
}

}  // namespace

PlacetoPolicy::PlacetoPolicy(const PlacetoNetConfig& config, std::uint64_t seed)
    : model_(torch_plugin().create(config, seed)) {}
PlacetoPolicy::PlacetoPolicy(std::unique_ptr<PlacetoPolicyModel> model) : model_(std::move(model)) {}
PlacetoPolicy::PlacetoPolicy(PlacetoPolicy&&) noexcept = default;
PlacetoPolicy& PlacetoPolicy::operator=(PlacetoPolicy&&) noexcept = default;
PlacetoPolicy::~PlacetoPolicy() = default;

PlacetoPolicy PlacetoPolicy::load(const std::string& path, const std::string& file, const std::string& field) {
  // Checked before loading the plugin, so that a wrong path costs no LibTorch start-up.
  if (!std::filesystem::exists(path))
    throw InputError(file.empty() ? path : file, field, fmt::format("policy file '{}' does not exist", path));
  return PlacetoPolicy(torch_plugin().load(path, file, field));
}

void PlacetoPolicy::save(const std::string& path) const { model_->save(path); }
const PlacetoNetConfig& PlacetoPolicy::config() const { return model_->config(); }
int PlacetoPolicy::episodes_done() const { return model_->episodes_done(); }

void PlacetoPolicy::train(std::span<PlacetoEnv* const> envs, const PlacetoTrainConfig& config,
                          const std::function<void(const PlacetoEpisodeLog&)>& on_episode,
                          std::vector<PlacetoBest>* best) {
  model_->train(envs, config, on_episode, best);
}

std::vector<DeviceId> PlacetoPolicy::place(PlacetoEnv& env) const { return model_->place(env); }
std::vector<DeviceId> PlacetoPolicy::sample(PlacetoEnv& env, std::uint64_t seed) const {
  return model_->sample(env, seed);
}
std::vector<float> PlacetoPolicy::flat_parameters() const { return model_->flat_parameters(); }
std::int64_t PlacetoPolicy::optimizer_steps() const { return model_->optimizer_steps(); }

}  // namespace placesim
