#include "sim/placement_io.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/errors.h"

namespace placesim {

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "", "cannot write the file");
    out << text;
    if (!out.flush()) throw InputError(path, "", "writing the file failed");
  }
  std::filesystem::rename(tmp, path);
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
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path, "", std::string("malformed JSON: ") + e.what());
  }
  std::vector<DeviceId> placement(graph.num_operators(), -1);
  auto as_gpu = [&](const nlohmann::json& v, const std::string& field) {
    if (!v.is_number_integer() || v.get<long>() < 0)
      throw InputError(path, field, "expected a GPU index (a whole number >= 0)");
    return static_cast<DeviceId>(v.get<long>());
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
