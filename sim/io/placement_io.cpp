#include "sim/io/placement_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/core/errors.h"

namespace placesim {

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::FILE* out = std::fopen(tmp.c_str(), "wb");
  if (!out) throw OutputError(path, fmt::format("cannot write the file: {}", std::strerror(errno)));
  int err = 0;
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0) err = errno;
  if (std::fclose(out) != 0 && err == 0) err = errno;
  std::error_code ec;
  if (err == 0) std::filesystem::rename(tmp, path, ec);
  if (err != 0 || ec) {
    // A full disk leaves a truncated temporary file: never leave it behind.
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw OutputError(path, err != 0 ? fmt::format("cannot write the file: {}", std::strerror(err))
                                     : fmt::format("cannot replace the file: {}", ec.message()));
  }
}

// Written by streaming, one operator per line in operator order, byte for byte what
// nlohmann::ordered_json's dump(1) of the same object gives: inserting a million names into an
// ordered_json (a vector searched on every insert) was quadratic.
void save_placement(const Graph& graph, const std::vector<DeviceId>& placement, const std::string& path) {
  std::string text = "{\n \"format\": \"placesim-placement\",\n \"version\": 1,\n \"placement\": ";
  if (placement.empty()) {
    text += "{}";
  } else {
    text.reserve(text.size() + placement.size() * (graph.op(0).name.size() + 16));
    text += "{\n";
    nlohmann::json name;
    for (std::size_t i = 0; i < placement.size(); ++i) {
      name = graph.op(static_cast<OpId>(i)).name;  // quoted and escaped as JSON
      text += "  ";
      text += name.dump();
      text += ": ";
      fmt::format_to(std::back_inserter(text), "{}", placement[i]);
      text += i + 1 < placement.size() ? ",\n" : "\n";
    }
    text += " }";
  }
  text += "\n}\n";
  write_file_atomically(path, text);
}

std::vector<DeviceId> load_placement(const Graph& graph, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open the placement file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    // Not only parse_error: a number too large for a double (1e400) is out_of_range.406.
    throw InputError(path, "", std::string("malformed JSON: ") + e.what());
  }
  std::vector<DeviceId> placement(graph.num_operators(), -1);
  // Read at full width and compared before narrowing: 2^32 must not wrap to GPU 0.
  auto as_gpu = [&](const nlohmann::json& v, const std::string& field) {
    constexpr auto kMaxGpu = std::numeric_limits<DeviceId>::max();
    if (!v.is_number_integer() || (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxGpu)
                                                          : v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > kMaxGpu))
      throw InputError(path, field, fmt::format("expected a GPU index (a whole number from 0 to {}), got {}", kMaxGpu, v.dump()));
    return static_cast<DeviceId>(v.get<std::int64_t>());
  };
  if (j.is_array()) {
    if (j.size() != graph.num_operators())
      throw InputError(path, "", fmt::format("expected {} GPU indices (one per operator), got {}", graph.num_operators(), j.size()));
    for (std::size_t i = 0; i < j.size(); ++i) placement[i] = as_gpu(j[i], fmt::format("[{}]", i));
    return placement;
  }
  if (!j.is_object() || !j.contains("placement") || !j["placement"].is_object())
    throw InputError(path, "placement", "expected an object mapping operator names to GPU indices");
  for (const auto& [name, value] : j["placement"].items()) {
    auto op = graph.find(name);
    if (!op) throw InputError(path, "placement." + name, "no operator of that name in the graph");
    placement[*op] = as_gpu(value, "placement." + name);
  }
  for (std::size_t i = 0; i < placement.size(); ++i)
    if (placement[i] < 0)
      throw InputError(path, "placement", fmt::format("operator '{}' has no GPU", graph.op(static_cast<OpId>(i)).name));
  return placement;
}

}  // namespace placesim
