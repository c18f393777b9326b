#pragma once
// `placesim search`: which plan should I run? (placement/planners/search/plan_search.h, docs/search.md)
#include <CLI/CLI.hpp>
#include <string>

#include "placement/planners/search/plan_search.h"

namespace placesim {

struct SearchArgs {
  SearchRequest request;
  bool json = false;
  std::string csv;  // a CSV of the simulated plans, written as well
};

CLI::App* add_search_command(CLI::App& app, SearchArgs& args);
int cmd_search(const SearchArgs& args);

// The result as `search --json` prints it (one object), and the CSV's header and rows.
std::string search_json(const SearchResult& result, const std::string& engine);
std::string search_csv(const SearchResult& result, const std::string& engine);

}  // namespace placesim
