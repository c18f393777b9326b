#pragma once
// The boundary between placesim and its LibTorch plugin (placesim_torch, built from
// placement/strategies/placeto/*_torch.cpp). LibTorch's static initialisation costs about 0.6 s per process,
// so no placesim binary links it: the first PlacetoPolicy made or loaded dlopens the plugin
// (placeto_policy.cpp), which implements the policy model below and resolves its references to
// placesim's own code from the executable that loaded it (see CMakeLists.txt).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "placement/strategies/placeto/placeto_env.h"
#include "placement/strategies/placeto/placeto_policy.h"

namespace placesim {

// One policy network with its optimizer state; PlacetoPolicy forwards every call here.
class PlacetoPolicyModel {
 public:
  virtual ~PlacetoPolicyModel() = default;
  virtual void save(const std::string& path) const = 0;
  virtual const PlacetoNetConfig& config() const = 0;
  virtual int episodes_done() const = 0;
  virtual void train(std::span<PlacetoEnv* const> envs, const PlacetoTrainConfig& config,
                     const std::function<void(const PlacetoEpisodeLog&)>& on_episode,
                     std::vector<PlacetoBest>* best) = 0;
  virtual std::vector<DeviceId> place(PlacetoEnv& env) const = 0;
  virtual std::vector<DeviceId> sample(PlacetoEnv& env, std::uint64_t seed) const = 0;
  virtual std::vector<float> flat_parameters() const = 0;
  virtual std::int64_t optimizer_steps() const = 0;
};

// Bumped whenever this header or a type the plugin uses changes layout.
inline constexpr int kPlacetoPluginAbi = 1;

// What the plugin's entry point returns.
struct PlacetoTorchPlugin {
  int abi = kPlacetoPluginAbi;
  // Layout checks: a plugin built against other headers (a stale build) is refused.
  std::size_t env_size = sizeof(PlacetoEnv);
  std::size_t train_config_size = sizeof(PlacetoTrainConfig);
  // A fresh network; weights initialised from `seed`.
  std::unique_ptr<PlacetoPolicyModel> (*create)(const PlacetoNetConfig& config, std::uint64_t seed) = nullptr;
  // Reads a policy file; throws InputError naming `file` (or `path`) and `field`.
  std::unique_ptr<PlacetoPolicyModel> (*load)(const std::string& path, const std::string& file,
                                              const std::string& field) = nullptr;
};

// The plugin's entry point: extern "C" so that dlsym finds it by this plain name.
inline constexpr const char* kPlacetoPluginEntry = "placesim_torch_plugin";
extern "C" const PlacetoTorchPlugin* placesim_torch_plugin();

}  // namespace placesim
