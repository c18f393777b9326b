// Scenarios from Python: a scenario file or a dict of the same shape, read (placesim.load_scenario)
// or run (placesim.run_scenario) as `placesim run` runs it: the sweep runner, its worker processes,
// results.jsonl, resume.
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common.h"
#include "scenarios/runner/results_store.h"
#include "scenarios/runner/scenario.h"
#include "scenarios/runner/sweep.h"
#include "scenarios/runner/sweep_runner.h"
#include "sim/config/yaml_fields.h"
#include "sim/core/errors.h"

namespace placesim::python {

namespace fs = std::filesystem;

namespace {

// A scenario given as a path (a file) or a dict: its YAML tree and the file its relative paths are
// relative to ("python" for a dict: the working directory).
std::pair<YAML::Node, std::string> scenario_yaml(const py::handle& spec) {
  if (py::isinstance<py::dict>(spec)) {
    YAML::Node root = to_yaml(spec);
    if (!root["name"]) root["name"] = "python";
    return {root, "python"};
  }
  const std::string path = py::str(spec).cast<std::string>();
  return {load_yaml_file(path), path};
}

// Finished points of an earlier run in `output`: the lines of results.jsonl.
std::size_t earlier_points(const fs::path& output) {
  std::ifstream in(output / "results.jsonl");
  std::size_t lines = 0;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) ++lines;
  return lines;
}

struct RunArgs {
  std::string output;
  int jobs = 1;
  bool resume = false, fresh = false, progress = false;
  std::size_t max_points = kDefaultMaxPoints;
};

// Runs every point as `placesim run` does; returns the results folder.
std::string run_scenario(const py::handle& spec, const RunArgs& a) {
  auto [root, file] = scenario_yaml(spec);
  PlanOptions planning;
  planning.max_points = a.max_points;
  const SweepPlan plan = plan_sweep(root, file, planning);
  SweepOptions options;
  options.output = a.output.empty() ? plan.output : a.output;
  options.jobs = a.jobs;
  options.resume = a.resume;
  options.progress = a.progress;
  if (a.resume && a.fresh) throw InputError("python", "fresh", "give resume=True or fresh=True, not both");
  if (const std::size_t earlier = earlier_points(options.output); earlier > 0 && !a.resume && !a.fresh)
    throw InputError(options.output, "results.jsonl",
                     fmt::format("holds {} finished point{} of an earlier run; resume=True runs only the points missing, "
                                 "fresh=True deletes them and starts over (or output= names another folder)",
                                 earlier, earlier == 1 ? "" : "s"));
  // The GIL stays held here while the workers are forked, so that each inherits the interpreter in
  // a consistent state; each worker then resets it as os.fork would (other threads gone, fork
  // handlers run) and releases the GIL, which a `python` strategy takes back to call into Python
  // (and which LibTorch, placeto's, wants released).
  options.in_worker = [] {
    PyOS_AfterFork_Child();
    PyEval_SaveThread();
  };
  std::ostringstream quiet;
  run_sweep(plan, options, a.progress ? std::cerr : static_cast<std::ostream&>(quiet));
  return options.output;
}

py::dict scenario_dict(const py::handle& spec) {
  auto [root, file] = scenario_yaml(spec);
  const SweepPlan plan = plan_sweep(root, file);
  const Scenario& s = plan.variants.front();
  py::dict out;
  out["name"] = s.name;
  out["file"] = s.file;
  out["description"] = s.description;
  out["output"] = plan.output;
  out["points"] = plan.points.size();
  out["engine"] = s.simulation.engines.name();
  out["order"] = std::string(enum_name<RunOrder>(kRunOrderNames, s.simulation.order));
  out["cluster"] = std::make_shared<Cluster>(s.cluster);
  py::list strategies;
  for (const StrategySpec& st : s.strategies) {
    py::dict d;
    d["name"] = st.name;
    d["label"] = st.label;
    YAML::Emitter options;
    options << YAML::Flow << (st.options ? st.options : YAML::Node(YAML::NodeType::Map));
    d["options"] = py::module_::import("yaml").attr("safe_load")(std::string(options.c_str()));
    strategies.append(d);
  }
  out["strategies"] = strategies;  // with jobs: the allocation policies
  py::list jobs;
  for (const JobSpec& job : s.jobs) {
    py::dict d;
    d["name"] = job.name;
    d["strategy"] = job.strategy.name;
    d["source"] = source_name(job.graph, job.workload);
    if (job.gpu_list.empty()) d["gpus"] = job.gpus;
    else d["gpus"] = job.gpu_list;
    jobs.append(d);
  }
  out["jobs"] = jobs;
  if (s.workload || !s.jobs.empty()) {
    out["graph"] = py::none();
  } else {
    std::vector<std::string> warnings;
    out["graph"] = std::make_shared<Graph>(load_graph_source(s.graph, s.file, warnings));
  }
  return out;
}

}  // namespace

void bind_scenarios(py::module_& m) {
  m.def(
      "_run_scenario",
      [](const py::handle& spec, const std::string& output, int jobs, bool resume, bool fresh, bool progress,
         std::size_t max_points) {
        return run_scenario(spec, {output, jobs, resume, fresh, progress, max_points});
      },
      py::arg("spec"), py::arg("output") = "", py::arg("jobs") = 1, py::arg("resume") = false, py::arg("fresh") = false,
      py::arg("progress") = false, py::arg("max_points") = kDefaultMaxPoints);
  m.def("_load_scenario", &scenario_dict, py::arg("spec"));
  m.def(
      "_merge_results", [](const std::string& dir) { return merge_result_shards(dir, std::nullopt); }, py::arg("dir"));
}

}  // namespace placesim::python
