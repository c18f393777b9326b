// The command line's conventions, through the binary as a user runs it: the
// version, unknown commands and options named with the nearest valid one, numbers said in words,
// exit codes 0, 1 and 2 only, `reproduce --list`, a graph given where a scenario is expected, and
// `simulate` across GPUs that cannot reach each other.
#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/runner/scenario.h"
#include "tests/test_util.h"

namespace placesim {
namespace {

namespace fs = std::filesystem;
using testutil::run_cli;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// A two-operator graph in placesim's format: a -> b, 1000 bytes.
constexpr const char* kTwoOperatorGraph = R"({"format": "placesim-graph", "version": 1,
  "operators": [{"name": "a", "compute_s": 1e-3}, {"name": "b", "compute_s": 1e-3}],
  "tensors": [{"src": "a", "dst": "b", "bytes": 1000}]})";

TEST(Cli, Item13VersionIsTheProjectVersion) {
  std::string out;
  ASSERT_EQ(run_cli("--version", out), 0) << out;
  // The version, the commit it was built from (git describe; "unknown" outside a checkout) and the
  // optional parts this build has.
  EXPECT_TRUE(std::regex_search(out, std::regex("^placesim [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit ([0-9a-f]{7,}(-dirty)?|unknown)\\)\n")))
      << out;
  for (const char* part : {"LibTorch: ", "MPI: ", "ONNX import: yes", "Chakra traces: yes", "SimGrid: 3."})
    EXPECT_TRUE(contains(out, part)) << part << "\n" << out;
  std::string short_flag;
  ASSERT_EQ(run_cli("-V", short_flag), 0) << short_flag;
  EXPECT_EQ(short_flag, out);
}

TEST(Cli, Item13UnknownCommandIsNamedWithTheNearestOne) {
  std::string out;
  EXPECT_EQ(run_cli("simulat", out), 2) << out;
  EXPECT_TRUE(contains(out, "error: command line: placesim: unknown command 'simulat'; did you mean 'simulate'?")) << out;
  EXPECT_TRUE(contains(out, "(commands: run, merge, simulate, graph")) << out;
  EXPECT_FALSE(contains(out, "A subcommand is required")) << out;

  EXPECT_EQ(run_cli("foo", out), 2) << out;
  EXPECT_TRUE(contains(out, "unknown command 'foo'")) << out;

  EXPECT_EQ(run_cli("help", out), 2) << out;
  EXPECT_TRUE(contains(out, "unknown command 'help'; did you mean '--help'?")) << out;

  EXPECT_EQ(run_cli("graph inf g.json", out), 2) << out;
  EXPECT_TRUE(contains(out, "placesim graph: unknown command 'inf'; did you mean 'info'?")) << out;
}

TEST(Cli, Item13NoCommandPrintsAShortUsage) {
  std::string out;
  EXPECT_EQ(run_cli("", out), 2) << out;
  EXPECT_TRUE(contains(out, "usage: placesim <command> [options]")) << out;
  EXPECT_TRUE(contains(out, "  reproduce ")) << out;
  EXPECT_LT(std::count(out.begin(), out.end(), '\n'), 17) << out;  // a line per command, the usage and the hint

  EXPECT_EQ(run_cli("graph", out), 2) << out;
  EXPECT_TRUE(contains(out, "usage: placesim graph <command> [options]")) << out;
  EXPECT_TRUE(contains(out, "  generate ")) << out;
}

TEST(Cli, Item13MistypedOptionGetsTheNearestOne) {
  std::string out;
  EXPECT_EQ(run_cli("run --job 2 scenario.yaml", out), 2) << out;
  EXPECT_TRUE(contains(out, "placesim run: unknown option '--job'; did you mean '--jobs'?")) << out;
  EXPECT_FALSE(contains(out, "File does not exist")) << out;

  EXPECT_EQ(run_cli("simulate --grpah g.json", out), 2) << out;
  EXPECT_TRUE(contains(out, "unknown option '--grpah'; did you mean '--graph'?")) << out;
  // A name that begins several options gets each, with what it is: the nearest by spelling
  // (--micro-batches) is not always the one meant.
  EXPECT_EQ(run_cli("plan --model llama2-7b --micro-batch 2", out), 2) << out;
  EXPECT_TRUE(contains(out, "unknown option '--micro-batch'; did you mean '--micro-batch-size' (sequences per micro-batch) or "
                            "'--micro-batches' (micro-batches per iteration)?")) << out;

  // An option given before its command is found where it belongs.
  EXPECT_EQ(run_cli("--jobs 2 run scenario.yaml", out), 2) << out;
  EXPECT_TRUE(contains(out, "placesim: unknown option '--jobs' here: it is an option of 'placesim run', 'placesim reproduce', "
                            "and goes after that command")) << out;

  // A value that looks like an option is the value of the option before it, not an option.
  EXPECT_EQ(run_cli("graph generate nosuchmodel -o -not-an-option.json", out), 2) << out;
  EXPECT_FALSE(contains(out, "unknown option")) << out;
  EXPECT_TRUE(contains(out, "unknown model 'nosuchmodel'")) << out;
}

TEST(Cli, Item13NumericFlagsSayTheyExpectANumber) {
  std::string out;
  EXPECT_EQ(run_cli(std::string("run --jobs two ") + PLACESIM_TEST_SOURCE_DIR + "/scenarios/fig31.yaml", out), 2) << out;
  EXPECT_TRUE(contains(out, "--jobs: expected a whole number from 1 to 1024, got 'two'")) << out;
  EXPECT_EQ(run_cli("graph generate gpt2 -o x.json --efficiency high", out), 2) << out;
  EXPECT_TRUE(contains(out, "--efficiency: expected a number in (0, 1], got 'high'")) << out;
}

// Every command and subcommand that `--help` lists, as "graph info", ...
std::vector<std::string> commands_under(const std::string& command) {
  std::string help;
  run_cli(command + " --help", help);
  std::vector<std::string> out;
  std::istringstream lines(help);
  bool in_subcommands = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Subcommands:")) in_subcommands = true;
    else if (!line.starts_with("  ")) in_subcommands = false;
    std::smatch m;
    if (in_subcommands && std::regex_search(line, m, std::regex("^  ([a-z-]+)\\s"))) {
      const std::string sub = command.empty() ? m[1].str() : command + " " + m[1].str();
      out.push_back(sub);
      for (const auto& deeper : commands_under(sub)) out.push_back(deeper);
    }
  }
  return out;
}

// Each flag whose --help says it takes a number (INT, UINT, FLOAT), with "two" for its value.
TEST(Cli, Item13EveryNumericFlagSaysItExpectsANumber) {
  const std::vector<std::string> commands = commands_under("");
  ASSERT_GE(commands.size(), 10u);
  int checked = 0;
  for (const std::string& command : commands) {
    std::string help;
    ASSERT_EQ(run_cli(command + " --help", help), 0) << help;
    std::istringstream lines(help);
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, std::regex("^\\s+(?:-\\w,)?(--[a-z-]+) (INT|UINT|FLOAT)\\b"))) continue;
      const std::string flag = m[1].str(), kind = m[2].str();
      std::string out;
      EXPECT_EQ(run_cli(command + " " + flag + " two", out), 2) << command << " " << flag << ": " << out;
      const std::string expected = kind == "FLOAT" ? "expected a number" : "expected a whole number";
      EXPECT_TRUE(contains(out, flag + ": " + expected)) << command << " " << flag << ": " << out;
      EXPECT_TRUE(contains(out, "got 'two'")) << command << " " << flag << ": " << out;
      ++checked;
    }
  }
  EXPECT_GE(checked, 20) << "the --help scan found too few numeric flags: has the help format changed?";
}

TEST(Cli, Item13GenerateBatchZeroIsAnErrorLikeMinusOne) {
  const fs::path dir = testutil::fresh_temp_dir("cli-batch");
  for (const char* batch : {"0", "-1"}) {
    std::string out;
    EXPECT_EQ(run_cli("graph generate gpt2 -o " + (dir / "g.json").string() + " --batch " + batch, out), 2) << out;
    EXPECT_TRUE(contains(out, "--batch: expected a whole number >= 1, got")) << out;
  }
  EXPECT_FALSE(fs::exists(dir / "g.json"));
  fs::remove_all(dir);
}

TEST(Cli, Item13ExitCodesAreZeroOneOrTwo) {
  const fs::path dir = testutil::fresh_temp_dir("cli-exit");
  std::string out;
  ASSERT_EQ(run_cli("--help", out), 0) << out;
  EXPECT_TRUE(contains(out, "Exit codes:\n  0  everything ran\n  1  some point failed")) << out;
  // CLI11's own errors (106, 105, ...) are bad input.
  EXPECT_EQ(run_cli("run", out), 2) << out;
  EXPECT_TRUE(contains(out, "error: command line: scenario is required")) << out;
  EXPECT_EQ(run_cli("run " + (dir / "missing.yaml").string(), out), 2) << out;
  EXPECT_EQ(run_cli("strategies extra", out), 2) << out;
  EXPECT_EQ(run_cli("run --jobs", out), 2) << out;
  EXPECT_TRUE(contains(out, "error: command line: --jobs: expected a value after it")) << out;
  EXPECT_EQ(run_cli(std::string("graph info --format foo ") + PLACESIM_TEST_SOURCE_DIR + "/README.md", out), 2) << out;
  EXPECT_TRUE(contains(out, "error: command line: --format: unknown graph format 'foo'")) << out;

  // A placement that does not fit in memory is a failed point (it was 3).
  write(dir / "g.json", R"({"format": "placesim-graph", "version": 1,
    "operators": [{"name": "a", "compute_s": 1e-3, "memory_bytes": 2e9}, {"name": "b", "compute_s": 1e-3}],
    "tensors": [{"src": "a", "dst": "b", "bytes": 1000}]})");
  write(dir / "p.json", "[0, 1]");
  write(dir / "c.yaml", "type: full-mesh\ngpus: 2\ngpu_memory: 1GB\n");
  EXPECT_EQ(run_cli("simulate --engine evaluator --graph " + (dir / "g.json").string() + " --placement " +
                        (dir / "p.json").string() + " --cluster " + (dir / "c.yaml").string(),
                    out),
            1)
      << out;
  EXPECT_TRUE(contains(out, "(OOM)")) << out;
  EXPECT_TRUE(contains(out, "the placement does not fit")) << out;
  fs::remove_all(dir);
}

// A scenario whose graph has a cycle: one line naming the file and the cycle, exit 2, no failed
// row per strategy and no results file (`graph info` says the same of the graph).
TEST(Cli, ScenarioWithACyclicGraphExitsTwoInOneLine) {
  const fs::path dir = testutil::fresh_temp_dir("cli-cycle");
  write(dir / "g.json", R"({"format": "placesim-graph", "version": 1,
    "operators": [{"name": "a", "compute_s": 1e-3}, {"name": "b", "compute_s": 1e-3}],
    "tensors": [{"src": "a", "dst": "b", "bytes": 1000}, {"src": "b", "dst": "a", "bytes": 1000}]})");
  write(dir / "s.yaml", "graph: {file: g.json}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [heft, metis]\n");
  std::string out;
  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "error: ")) << out;
  EXPECT_TRUE(contains(out, "g.json: operator '")) << out;
  EXPECT_TRUE(contains(out, "the graph has a cycle")) << out;
  EXPECT_FALSE(contains(out, "failed")) << out;
  EXPECT_EQ(std::regex_search(out, std::regex("error: [^\n]*\n[^\n]")), false) << "one line: " << out;
  EXPECT_FALSE(fs::exists(dir / "out" / "results.jsonl"));
  EXPECT_EQ(run_cli("graph info " + (dir / "g.json").string(), out), 2) << out;
  fs::remove_all(dir);
}

TEST(Cli, Item13ReproduceListSaysWhatEachReproductionIs) {
  std::string out;
  ASSERT_EQ(run_cli("reproduce --list", out), 0) << out;
  int files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(PLACESIM_TEST_SOURCE_DIR) / "scenarios" / "papers")) {
    if (e.path().extension() != ".yaml") continue;
    ++files;
    const std::string name = e.path().stem().string();
    const std::string description = load_scenario_description(e.path().string());
    EXPECT_FALSE(description.empty()) << name << " has no description:";
    // Each with the run time measured here, so a user knows what they start.
    const std::string run_time = load_scenario_run_time(e.path().string());
    EXPECT_TRUE(std::regex_match(run_time, std::regex("[0-9.]+ (s|min)( .*)?"))) << name << ": run_time '" << run_time << "'";
    std::smatch m;
    EXPECT_TRUE(std::regex_search(out, m, std::regex("(^|\n)" + std::regex_replace(name, std::regex("\\."), "\\.") +
                                                     " +(.*)\n")))
        << name << " is not listed: " << out;
    EXPECT_EQ(m[2].str(), description + " [" + run_time + "]") << out;
    EXPECT_EQ(m[2].str().find("issue"), std::string::npos) << "no issue numbers where users read: " << m[2].str();
  }
  // One line per file and one each for the built-in nccl-tests and validation, then the families (reproduce_families),
  // e.g. `nest` for `reproduce nest`.
  const std::size_t families = out.find("\nfamilies (");
  ASSERT_NE(families, std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.begin() + static_cast<long>(families), '\n'), files + 2) << out;
  EXPECT_TRUE(std::regex_search(out.substr(families),
                                std::regex("\nnest +nest-experiment1, nest-experiment1-contention, nest-experiment1-scale\n")))
      << out;
}

// `reproduce NAME` with no NAME.yaml but several NAME-*.yaml runs each of them in turn, each into
// its own folder, the flags applying to each; a name that is a file runs that file alone, even
// when it prefixes others. Tiny scenarios in a papers folder of the test's own ($PLACESIM_PAPERS).
TEST(Cli, ReproduceAFamilyRunsEachOfItsReproductions) {
  const fs::path dir = testutil::fresh_temp_dir("cli-reproduce-family");
  const fs::path papers = dir / "papers";
  fs::create_directories(papers);
  auto scenario = [&](const std::string& name) {
    write(papers / (name + ".yaml"), "description: the " + name + " test\ngraph: {builtin: fig3.1}\n"
                                     "cluster: {type: full-mesh, gpus: 2, bandwidth: 20GB/s}\n"
                                     "strategies: [single-device, round-robin]\nsimulation: {engine: evaluator}\n"
                                     "output: " + (dir / "out" / name).string() + "\n");
  };
  for (const char* name : {"fam-a", "fam-b", "solo", "solo-x"}) scenario(name);
  const std::string env = "PLACESIM_PAPERS=" + papers.string() + " ";
  std::string out;

  ASSERT_EQ(run_cli("reproduce --list", out, env), 0) << out;
  EXPECT_TRUE(contains(out, "\nfamilies (`placesim reproduce FAMILY` runs each of them in turn):\nfam     fam-a, fam-b\n"))
      << out;
  EXPECT_FALSE(contains(out, "\nsolo    solo, ")) << out;  // solo is a file: not a family too

  ASSERT_EQ(run_cli("reproduce fam --no-plots -j 1", out, env), 0) << out;
  EXPECT_TRUE(contains(out, "reproduce fam: 2 reproductions in turn: fam-a, fam-b\n")) << out;
  EXPECT_TRUE(contains(out, "reproduce fam: [1/2] fam-a\n")) << out;
  EXPECT_TRUE(contains(out, "reproduce fam: [2/2] fam-b\n")) << out;
  EXPECT_TRUE(contains(out, "# fam-b (2 of 2 in fam)\n")) << out;
  EXPECT_TRUE(contains(out, "reproduce fam-a: 2 points (2 run now, 0 kept from before, 0 failed)")) << out;
  EXPECT_TRUE(contains(out, "reproduce fam-b: 2 points (2 run now, 0 kept from before, 0 failed)")) << out;
  for (const char* name : {"fam-a", "fam-b"}) EXPECT_TRUE(fs::exists(dir / "out" / name / "results.jsonl")) << name;
  EXPECT_FALSE(fs::exists(dir / "out" / "solo")) << out;

  // Again: every point kept; --fresh runs every one of them again.
  ASSERT_EQ(run_cli("reproduce fam --no-plots -j 1", out, env), 0) << out;
  EXPECT_TRUE(contains(out, "reproduce fam-b: 2 points (0 run now, 2 kept from before, 0 failed)")) << out;
  ASSERT_EQ(run_cli("reproduce fam --no-plots -j 1 --fresh", out, env), 0) << out;
  EXPECT_TRUE(contains(out, "reproduce fam-a: 2 points (2 run now, 0 kept from before, 0 failed)")) << out;
  EXPECT_TRUE(contains(out, "reproduce fam-b: 2 points (2 run now, 0 kept from before, 0 failed)")) << out;

  // One --output: a folder per reproduction in it.
  ASSERT_EQ(run_cli("reproduce fam --no-plots -o " + (dir / "o").string(), out, env), 0) << out;
  for (const char* name : {"fam-a", "fam-b"}) EXPECT_TRUE(fs::exists(dir / "o" / name / "results.jsonl")) << name;

  // A file's own name runs that file alone.
  ASSERT_EQ(run_cli("reproduce solo --no-plots", out, env), 0) << out;
  EXPECT_TRUE(fs::exists(dir / "out" / "solo" / "results.jsonl")) << out;
  EXPECT_FALSE(fs::exists(dir / "out" / "solo-x")) << out;
  EXPECT_FALSE(contains(out, "reproductions in turn")) << out;

  // Neither a file nor a family: the error lists both.
  EXPECT_EQ(run_cli("reproduce fa", out, env), 2) << out;
  EXPECT_TRUE(contains(out, "error: command line: name: no reproduction 'fa' in " + papers.string() +
                                "; did you mean 'fam'? (there are: fam-a, fam-b, solo, solo-x; families, each run whole: fam)"))
      << out;

  // Bad input in a member stops the family, saying which finished; the error names the file.
  scenario("bad-a");
  write(papers / "bad-b.yaml", "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [round-robin]\n"
                               "strategys: [x]\n");
  EXPECT_EQ(run_cli("reproduce bad --no-plots", out, env), 2) << out;
  EXPECT_TRUE(contains(out, "reproduce bad: stopped at bad-b (2 of 2); finished before it: bad-a\n")) << out;
  EXPECT_TRUE(contains(out, "error: " + (papers / "bad-b.yaml").string())) << out;
  fs::remove_all(dir);
}

TEST(Cli, Item13ScenarioDescriptionIsOneLine) {
  const fs::path dir = testutil::fresh_temp_dir("cli-description");
  const std::string rest = "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [round-robin]\n";
  write(dir / "one.yaml", "description: >\n  what it\n  shows\n" + rest);
  EXPECT_EQ(load_scenario((dir / "one.yaml").string()).description, "what it shows");
  EXPECT_EQ(load_scenario_description((dir / "one.yaml").string()), "what it shows");
  write(dir / "two.yaml", "description: |\n  line one\n  line two\n" + rest);
  EXPECT_INPUT_ERROR(load_scenario((dir / "two.yaml").string()), "description (line 1)", "expected one line");
  fs::remove_all(dir);
}

TEST(Cli, Item13RunGivenAGraphSaysSo) {
  const fs::path dir = testutil::fresh_temp_dir("cli-graph-as-scenario");
  write(dir / "g.json", kTwoOperatorGraph);
  write(dir / "quickp.json", R"({"directed": true, "multigraph": false, "graph": {}, "nodes": [], "links": []})");
  write(dir / "msr.json", R"({"maxSizePerFPGA": 1e9, "maxFPGAs": 2, "nodes": [], "edges": []})");
  for (const auto& [file, format] : {std::pair{"g.json", "placesim"}, {"quickp.json", "quickp"}, {"msr.json", "msr"}}) {
    const std::string path = (dir / file).string();
    std::string out;
    EXPECT_EQ(run_cli("run " + path, out), 2) << out;
    EXPECT_TRUE(contains(out, "error: " + path + ": looks like a graph (" + format + " format), not a scenario")) << out;
    EXPECT_TRUE(contains(out, "`placesim simulate --graph " + path)) << out;
    EXPECT_TRUE(contains(out, "`graph: {file: " + path + "}`")) << out;
  }
  // Nor is a graph a cluster file.
  std::string out;
  EXPECT_EQ(run_cli("topology info " + (dir / "g.json").string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "looks like a graph (placesim format), not a scenario or cluster file")) << out;
  // A broken scenario is still judged as a scenario.
  write(dir / "s.yaml", "graph: {builtin: fig3.1}\nstrategies: [round-robin]\nnodes: 1\nlinks: 2\n");
  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string(), out), 2) << out;
  EXPECT_FALSE(contains(out, "looks like a graph")) << out;
  fs::remove_all(dir);
}

// An ONNX model where a graph file is expected (by its .onnx name, by its first byte, or by
// --format onnx) is named, with how to import it, instead of "malformed JSON" or "unknown graph
// format 'onnx'".
TEST(Cli, AnOnnxModelGivenAsAGraphSaysHowToImportIt) {
  const fs::path dir = testutil::fresh_temp_dir("cli-onnx-as-graph");
  // A ModelProto's start: ir_version 8 (field 1), producer_name "pytorch" (field 2).
  const std::string onnx_start = std::string("\x08\x08\x12\x07pytorch", 11);
  std::ofstream(dir / "model.onnx", std::ios::binary) << onnx_start;
  std::ofstream(dir / "model.bin", std::ios::binary) << onnx_start;
  write(dir / "g.json", kTwoOperatorGraph);
  const std::string onnx = (dir / "model.onnx").string(), bin = (dir / "model.bin").string(), json = (dir / "g.json").string();
  // By the file: "an ONNX model"; by --format onnx, whatever the file holds: the flag's mistake.
  auto how = [](const std::string& path, const std::string& field) {
    return std::string(field.empty() ? "an ONNX model, not a graph file" : "onnx is not a graph file format") +
           ": ONNX models are read with `placesim graph import " + path +
           " -o model.json` (then give model.json), or with a scenario's `graph: {onnx: " + path + "}`";
  };
  const std::string out_json = (dir / "out.json").string();
  for (const auto& [args, file, field] :
       {std::tuple<std::string, std::string, std::string>{"graph info " + onnx, onnx, ""},
        {"graph info " + bin, bin, ""},
        {"graph convert " + onnx + " " + out_json, onnx, ""},
        {"graph convert --format onnx " + onnx + " " + out_json, onnx, "--format: "},
        {"graph info --format onnx " + json, json, "--format: "},
        {"graph convert --format msr " + bin + " " + out_json, bin, ""}}) {
    std::string out;
    EXPECT_EQ(run_cli(args, out), 2) << args << "\n" << out;
    EXPECT_TRUE(contains(out, "error: " + file + ": " + field + how(file, field))) << args << "\n" << out;
    EXPECT_FALSE(contains(out, "malformed JSON")) << out;
    EXPECT_FALSE(contains(out, "unknown graph format")) << out;
  }
  EXPECT_FALSE(fs::exists(out_json));
  // A scenario's graph file too: an error of the scenario (exit 2, as for any graph that does not
  // load), saying why, before any point runs.
  write(dir / "s.yaml", "graph: {file: model.onnx}\ncluster: {type: full-mesh, gpus: 2, bandwidth: 10GB/s}\n"
                        "strategies: [round-robin]\noutput: " + (dir / "out").string() + "\n");
  std::string out;
  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "error: " + onnx + ": " + how(onnx, ""))) << out;
  EXPECT_FALSE(contains(out, "failed")) << out;
  fs::remove_all(dir);
}

TEST(Cli, EngineEstimateOnAGraphIsRefusedBeforePlanning) {
  // --engine estimate prices plans; a scenario placing a graph is refused, and before the
  // "planning N points" line (which said the run was under way).
  std::string out;
  EXPECT_EQ(run_cli(std::string("run ") + PLACESIM_TEST_SOURCE_DIR + "/scenarios/fig31.yaml --engine estimate -o " +
                        testutil::fresh_temp_dir("cli-estimate").string(),
                    out),
            2)
      << out;
  EXPECT_TRUE(contains(out, "error: command line: --engine: estimate prices a workload's parallel plans")) << out;
  EXPECT_FALSE(contains(out, "planning")) << out;
}

// Two servers of one GPU whose only NICs are allocated no bandwidth: gpu0 and gpu1 cannot reach
// each other. SimGrid's refusal was "internal error" (exit 1); the evaluator printed "inf s".
TEST(Cli, Item13SimulateAcrossUnreachableGpusNamesThem) {
  const fs::path dir = testutil::fresh_temp_dir("cli-unreachable");
  write(dir / "g.json", kTwoOperatorGraph);
  write(dir / "p.json", "[0, 1]");
  write(dir / "c.yaml",
        "type: multi-nic\nservers: 2\ngpus_per_server: 1\nnics_per_server: 1\nallocation: [['-', '-'], ['-', '-']]\n");
  for (const char* engine : {"both", "simgrid", "evaluator"}) {
    std::string out;
    EXPECT_EQ(run_cli(fmt::format("simulate --engine {} --graph {} --placement {} --cluster {}", engine,
                                  (dir / "g.json").string(), (dir / "p.json").string(), (dir / "c.yaml").string()),
                      out),
              2)
        << engine << ": " << out;
    EXPECT_TRUE(contains(out, "p.json: placement.b: tensor 'a' -> 'b' (1000 B) goes from gpu0 to gpu1, which cannot "
                              "reach each other"))
        << engine << ": " << out;
    EXPECT_FALSE(contains(out, "internal error")) << engine << ": " << out;
    EXPECT_FALSE(contains(out, "inf s")) << engine << ": " << out;
  }
  // The same GPU for both is fine.
  write(dir / "same.json", "[1, 1]");
  std::string out;
  EXPECT_EQ(run_cli("simulate --graph " + (dir / "g.json").string() + " --placement " + (dir / "same.json").string() +
                        " --cluster " + (dir / "c.yaml").string(),
                    out),
            0)
      << out;
  fs::remove_all(dir);
}

TEST(Cli, CollectivePrintsEachEngineBesideTheClosedForm) {
  // Ring all-reduce of 64 MB over 4 one-GPU servers with 20 GB/s NICs and no latency:
  // 2 (n-1) S/(nB) = 6 x 16 MB / 20 GB/s = 4.8 ms in every engine; busbw = algbw x 1.5.
  const fs::path dir = testutil::fresh_temp_dir("cli-collective");
  write(dir / "c.yaml", "type: non-blocking\nservers: 4\ngpus_per_server: 1\nnic_bandwidth: 20GB/s\n");
  const std::string cluster = " --cluster " + (dir / "c.yaml").string();
  std::string out;
  ASSERT_EQ(run_cli("collective --json --algorithm ring --bytes 64MB" + cluster, out), 0) << out;
  std::istringstream lines(out);
  std::set<std::string> engines;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    engines.insert(j["engine"].get<std::string>());
    EXPECT_NEAR(j["time_s"].get<double>(), 4.8e-3, 1e-6 * 4.8e-3) << line;
    EXPECT_NEAR(j["closed_form_s"].get<double>(), 4.8e-3, 1e-12) << line;
    EXPECT_NEAR(j["busbw_bytes_per_s"].get<double>(), 1.5 * 64e6 / 4.8e-3, 1e-3 * 64e6 / 4.8e-3) << line;
  }
  EXPECT_EQ(engines, (std::set<std::string>{"evaluator", "flow", "simgrid"}));
  // The table: one row per size, 1 MB to 4 MB.
  // The table: nccl-tests' columns (size, count, type), what ran, the closed form, per engine
  // time, algbw and busbw.
  ASSERT_EQ(run_cli("collective --algorithm ring --bytes 1MB:4MB --engine flow" + cluster, out), 0) << out;
  EXPECT_TRUE(contains(out, "all-reduce by ring, 4 GPUs")) << out;
  EXPECT_TRUE(contains(out, "collectives: ideal")) << out;
  EXPECT_TRUE(contains(out, "     4000000      1000000    float               ring       300.00 |     300.00    13.33    20.00")) << out;
  // auto picks per size and says what it ran; all-to-all runs direct.
  ASSERT_EQ(run_cli("collective --json --op all-to-all --bytes 1MB --engine flow" + cluster, out), 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out.substr(0, out.find('\n')))["algorithm"], "direct") << out;
  // What the cluster cannot run is refused with the reason.
  EXPECT_EQ(run_cli("collective --algorithm halving-doubling --gpus 3" + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "halving-doubling needs a power-of-two group")) << out;
  // A mistyped value gets the nearest valid one.
  EXPECT_EQ(run_cli("collective --op allreduce" + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "--op: expected one of all-reduce, reduce-scatter, all-gather, all-to-all, broadcast, reduce, got "
                            "'allreduce'; did you mean 'all-reduce'?"))
      << out;
  EXPECT_EQ(run_cli("collective --op all-to-all --algorithm ring" + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "all-to-all has no algorithm `ring`; it has: direct")) << out;
  EXPECT_EQ(run_cli("collective --gpus 8" + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "the cluster has 4 GPUs, 8 were asked for")) << out;
  EXPECT_EQ(run_cli("collective --bytes 4MB:1MB" + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "--bytes")) << out;
  // The ring runs step by step (auto); message by message it gives the same time and says its size.
  ASSERT_EQ(run_cli("collective --json --algorithm ring --bytes 64MB --engine flow --model messages" + cluster, out), 0) << out;
  const auto messages = nlohmann::json::parse(out.substr(0, out.find('\n')));
  EXPECT_EQ(messages["model"], "messages");
  EXPECT_GT(messages["operators"].get<int>(), 0);
  EXPECT_NEAR(messages["time_s"].get<double>(), 4.8e-3, 1e-12);
  ASSERT_EQ(run_cli("collective --bytes 64MB --engine flow" + cluster, out), 0) << out;
  EXPECT_TRUE(contains(out, "model: steps")) << out;
  // A tree's step view is its pipeline (lockstep): no faster than its messages.
  ASSERT_EQ(run_cli("collective --json --algorithm tree --bytes 64MB --engine flow --model steps" + cluster, out), 0) << out;
  const double tree_steps = nlohmann::json::parse(out.substr(0, out.find('\n')))["time_s"].get<double>();
  ASSERT_EQ(run_cli("collective --json --algorithm tree --bytes 64MB --engine flow --model messages" + cluster, out), 0) << out;
  EXPECT_GE(tree_steps, nlohmann::json::parse(out.substr(0, out.find('\n')))["time_s"].get<double>() * (1 - 1e-9));
  // Condensed: a flow per ring neighbour, the same time from fewer operators; a tree has no ring
  // phases to condense.
  ASSERT_EQ(run_cli("collective --json --algorithm ring --bytes 64MB --engine flow --model condensed" + cluster, out), 0) << out;
  const auto condensed = nlohmann::json::parse(out.substr(0, out.find('\n')));
  EXPECT_EQ(condensed["model"], "condensed");
  EXPECT_LT(condensed["operators"].get<int>(), messages["operators"].get<int>());
  EXPECT_NEAR(condensed["time_s"].get<double>(), 4.8e-3, 1e-12);
  EXPECT_EQ(run_cli("collective --algorithm tree --model condensed" + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "has none") && contains(out, "--model messages")) << out;
  fs::remove_all(dir);
}

TEST(Cli, PlanBuildsAModelOfTheZoo) {
  const fs::path dir = testutil::fresh_temp_dir("cli-plan-zoo");
  write(dir / "c.yaml", "type: nvlink-servers\ngpus: 8\ngpu_memory: 80GiB\n");
  const std::string cluster = " --cluster " + (dir / "c.yaml").string();
  std::string out;
  ASSERT_EQ(run_cli("plan --model gpt2 --tp 2 --pp 2 --dp 2 --micro-batches 4 --sequence 512 --engine flow" + cluster, out), 0)
      << out;
  EXPECT_TRUE(contains(out, "model zoo: GPT-2 small (124 M), micro-batch 1, 512 tokens")) << out;
  EXPECT_TRUE(contains(out, "flow ")) << out;
  // Llama 2 70B has 64 heads but 8 key-value heads: 16 ways is refused, naming the flag.
  EXPECT_EQ(run_cli("plan --model llama2-70b --tp 16" + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "--tp: llama2-70b cannot be split 16 ways")) << out;
  EXPECT_EQ(run_cli("plan --model gpt2 --sequence 4096" + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "--sequence: expected at most 1024")) << out;
  // One of --model, --model-file and --workload is required; the zoo's options need a model.
  EXPECT_EQ(run_cli("plan --mfu 0.4" + cluster, out), 2) << out;
  EXPECT_EQ(run_cli("plan" + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "expected one of --workload FILE, --model NAME or --model-file FILE")) << out;
  EXPECT_EQ(run_cli("plan --model gpt2 --mfu 1" + cluster, out), 0) << out;
  EXPECT_EQ(run_cli("plan --model gpt2 --gpu k80" + cluster, out), 2) << out;  // no tensor cores: no kernel model
  // Megatron overlaps the parameters' gathers only with the gradients' reductions.
  const std::string distributed = "plan --model gpt2 --dp 2 --distributed-optimizer --no-overlap-grad-reduce --engine flow";
  EXPECT_EQ(run_cli(distributed + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "--no-overlap-grad-reduce: Megatron overlaps the distributed optimizer's parameter gathers only")) << out;
  EXPECT_EQ(run_cli(distributed + " --no-overlap-param-gather" + cluster, out), 0) << out;
  // A model by its dimensions, with --json: one object, its measures per engine.
  write(dir / "m.yaml", "family: llama\nlayers: 2\nhidden: 512\nheads: 8\nkv_heads: 2\nffn_hidden: 1536\nvocab: 1000\nsequence: 256\n");
  ASSERT_EQ(run_cli("plan --model-file " + (dir / "m.yaml").string() + " --gpu a100 --pp 2 --global-batch 8 --engine flow --json" +
                        cluster,
                    out),
            0)
      << out;
  const auto object = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_GT(object["iteration_s"]["flow"].get<double>(), 0);
  EXPECT_GT(object["mfu"]["flow"].get<double>(), 0);
  EXPECT_LT(object["mfu"]["flow"].get<double>(), 1);
  EXPECT_EQ(object["global_batch"].get<long>(), 8);
  EXPECT_EQ(object["plan"]["micro_batches"].get<int>(), 8);
  EXPECT_DOUBLE_EQ(object["peak_flops"].get<double>(), 312e12);  // bf16 on the A100
  // --cp: each sequence over two GPUs; the global batch stays 8 sequences (dp 1), on 4 GPUs.
  ASSERT_EQ(run_cli("plan --model-file " + (dir / "m.yaml").string() + " --gpu a100 --pp 2 --cp 2 --global-batch 8 --engine flow --json" +
                        cluster,
                    out),
            0)
      << out;
  const auto with_cp = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_EQ(with_cp["gpus"].get<long>(), 4);
  EXPECT_EQ(with_cp["global_batch"].get<long>(), 8);
  EXPECT_EQ(with_cp["plan"]["cp"].get<int>(), 2);
  EXPECT_EQ(with_cp["plan"]["dp"].get<int>(), 1);
  EXPECT_EQ(with_cp["plan"]["micro_batches"].get<int>(), 8);
  // --stage-split even: Megatron-LM's layout, 6 blocks over 4 stages as 2, 2, 1, 1 (the embedding
  // with the first, the head with the last): first layers 0, 3, 5, 6, where balancing the stages'
  // compute (the default) gives 0, 2, 4, 6. More stages than blocks are refused, naming the flag.
  write(dir / "m6.yaml", "family: llama\nlayers: 6\nhidden: 512\nheads: 8\nvocab: 1000\nsequence: 256\n");
  const std::string six = "plan --model-file " + (dir / "m6.yaml").string() + " --gpu a100 --micro-batches 4 --engine evaluator";
  ASSERT_EQ(run_cli(six + " --pp 4 --stage-split even" + cluster, out), 0) << out;
  EXPECT_TRUE(contains(out, "first layers 0, 3, 5, 6\n")) << out;
  ASSERT_EQ(run_cli(six + " --pp 4" + cluster, out), 0) << out;
  EXPECT_TRUE(contains(out, "first layers 0, 2, 4, 6\n")) << out;
  EXPECT_EQ(run_cli(six + " --pp 7 --stage-split even" + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "--stage-split: megatron: 7 pipeline stages for the 6 blocks")) << out;
  EXPECT_EQ(run_cli("plan --model-file " + (dir / "m.yaml").string() + " --cp 3" + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "--cp: expected a width of at least 1 whose double divides the sequence (256 tokens")) << out;
  write(dir / "bad.yaml", "family: llama\nlayers: 2\nhidden: 500\nheads: 8\nvocab: 1000\nsequence: 256\n");
  EXPECT_EQ(run_cli("plan --model-file " + (dir / "bad.yaml").string() + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "bad.yaml: heads (line 4): expected a divisor of hidden (500), got 8")) << out;
  // --trace: the evaluator's timeline with a memory counter per GPU, which rises with the
  // forwards and ends at its least (every activation freed by the backwards), and the transfers
  // on the links they cross.
  const std::string trace = (dir / "t.json").string();
  ASSERT_EQ(run_cli("plan --model gpt2 --pp 2 --dp 2 --micro-batches 4 --engine evaluator --full-graph --trace " + trace + cluster, out), 0)
      << out;
  EXPECT_TRUE(contains(out, "memory peaks    stage 0 at ")) << out;
  // --stage-tp: each stage at its own width, the zoo's model built at every width asked for.
  ASSERT_EQ(run_cli("plan --model gpt2 --pp 2 --stage-tp 1,2 --micro-batches 4 --engine evaluator" + cluster, out), 0) << out;
  EXPECT_TRUE(contains(out, "plan            stage widths 1 + 2 (pp 2) x dp 1 = 3 GPUs")) << out;
  EXPECT_EQ(run_cli("plan --model gpt2 --pp 2 --stage-tp 2,2" + cluster, out), 2) << out;
  EXPECT_TRUE(contains(out, "--tp/--stage-tp/--pp/--dp/--cp/--ep/--virtual-stages/--sequence-parallel: tp (1) must be the first "
                            "stage's width in stage_tp (2)"))
      << out;
  std::ifstream in(trace);
  const auto j = nlohmann::json::parse(in);
  std::map<std::string, std::vector<double>> counters;
  for (const auto& e : j["traceEvents"])
    if (e.value("ph", "") == "C") counters[e["name"].get<std::string>()].push_back(e["args"]["GiB"].get<double>());
  EXPECT_EQ(counters.size(), 4u);
  // The transfers on link tracks: every slice begins and ends, never before it began.
  std::map<long, double> begun;
  std::size_t ended = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("cat", "") != "transfer") continue;
    if (e["ph"] == "b") begun[e["id"].get<long>()] = e["ts"].get<double>();
    if (e["ph"] == "e") {
      ASSERT_TRUE(begun.count(e["id"].get<long>()));
      EXPECT_GE(e["ts"].get<double>(), begun[e["id"].get<long>()]);
      ++ended;
    }
  }
  EXPECT_GT(ended, 0u);
  EXPECT_EQ(ended, begun.size());
  for (const auto& [name, values] : counters) {
    EXPECT_GT(*std::max_element(values.begin(), values.end()), values.back()) << name;
    EXPECT_DOUBLE_EQ(values.back(), *std::min_element(values.begin(), values.end())) << name;
  }
  fs::remove_all(dir);
}

// An infeasible point (no plan fits) is a result: placesim run exits 0. Mixed stage widths cannot
// be priced by NEST's estimate: --engine estimate refuses them before anything runs.
TEST(Cli, RunExitCodesForInfeasiblePointsAndEstimatesOfStageWidths) {
  const fs::path dir = testutil::fresh_temp_dir("cli-run-codes");
  write(dir / "tiny.yaml", "workload: {model: llama2-7b}\ncluster: {type: nvlink-servers, gpus: 8, gpu_memory: 1GiB}\n"
                           "strategies: [{name: nest, options: {micro_batches: 8}}]\nsimulation: {engine: evaluator}\n"
                           "output: " + (dir / "out1").string() + "\n");
  std::string out;
  EXPECT_EQ(run_cli("run " + (dir / "tiny.yaml").string(), out), 0) << out;
  EXPECT_TRUE(contains(out, "infeasible")) << out;
  write(dir / "widths.yaml", "workload: {model: gpt2}\ncluster: {type: nvlink-servers, gpus: 8, gpu_memory: 80GiB}\n"
                             "strategies: [{name: megatron, label: w, options: {pp: 2, stage_tp: [1, 2]}}]\n"
                             "simulation: {engine: evaluator}\noutput: " + (dir / "out2").string() + "\n");
  EXPECT_EQ(run_cli("run " + (dir / "widths.yaml").string() + " --engine estimate", out), 2) << out;
  EXPECT_TRUE(contains(out, "error: command line: --engine: estimate: w (strategies[0]): NEST's estimate prices one "
                            "tensor-parallel width"))
      << out;
  fs::remove_all(dir);
}

// A folder holding an earlier run's results is never emptied unasked: a second `run` without
// --resume or --fresh is refused (exit 2, naming both); --resume keeps the points, --fresh starts over.
TEST(Cli, RunRefusesToOverwriteEarlierResults) {
  const fs::path dir = testutil::fresh_temp_dir("cli-run-again");
  write(dir / "s.yaml", "graph: {model: bert-base, layers: 1, style: fused}\ncluster: {type: nvlink-servers, gpus: 2}\n"
                        "strategies: [round-robin, single-device]\nsimulation: {engine: evaluator, trace: false}\n"
                        "output: " + (dir / "out").string() + "\n");
  const std::string run = "run " + (dir / "s.yaml").string();
  std::string out;
  ASSERT_EQ(run_cli(run, out), 0) << out;
  EXPECT_EQ(run_cli(run, out), 2) << out;
  EXPECT_TRUE(contains(out, "results.jsonl: holds 2 finished points of an earlier run; --resume runs only the points "
                            "missing, --fresh deletes them and starts over"))
      << out;
  EXPECT_EQ(run_cli(run + " --resume", out), 0) << out;
  EXPECT_TRUE(contains(out, "2 already done")) << out;
  EXPECT_EQ(run_cli(run + " --fresh", out), 0) << out;
  EXPECT_TRUE(contains(out, "2 to run")) << out;
  EXPECT_EQ(run_cli(run + " --fresh --resume", out), 2) << out;
  fs::remove_all(dir);
}

// An earlier MPI run's shards count as results outside MPI too: refused without a flag, --resume
// asks for them to be merged first, --fresh removes them.
TEST(Cli, RunCountsAnEarlierMpiRunsShards) {
  const fs::path dir = testutil::fresh_temp_dir("cli-run-shards");
  write(dir / "s.yaml", "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\n"
                        "strategies: [round-robin, single-device]\nsimulation: {engine: evaluator, trace: false}\n");
  const std::string run = "run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string();
  std::string out;
  ASSERT_EQ(run_cli(run, out), 0) << out;
  fs::rename(dir / "out" / "results.jsonl", dir / "out" / "results.rank0.jsonl");
  EXPECT_EQ(run_cli(run, out), 2) << out;
  EXPECT_TRUE(contains(out, "holds 2 finished points of an earlier run")) << out;
  EXPECT_EQ(run_cli(run + " --resume", out), 2) << out;
  EXPECT_TRUE(contains(out, "results.rank0.jsonl: an MPI run's shard; `placesim merge ")) << out;
  EXPECT_EQ(run_cli(run + " --fresh", out), 0) << out;
  EXPECT_FALSE(fs::exists(dir / "out" / "results.rank0.jsonl"));
  EXPECT_TRUE(contains(out, "2 to run")) << out;
  fs::remove_all(dir);
}

// Ctrl-C: exit 130 saying where the finished points are and the command that runs the rest, the
// scenario's path quoted for the shell (this one has a space).
TEST(Cli, AnInterruptedRunSaysHowToContinue) {
  const fs::path dir = testutil::fresh_temp_dir("cli-run-interrupted");
  fs::create_directories(dir / "my runs");
  write(dir / "my runs" / "s.yaml", "graph: {builtin: synthetic, layers: 4}\ncluster: {type: full-mesh, gpus: 4}\n"
                                    "strategies: [{name: mcmc, options: {steps: 1000000000}}]\n"
                                    "simulation: {engine: evaluator, trace: false}\n");
  std::string out;
  const std::string scenario = "'" + (dir / "my runs" / "s.yaml").string() + "'";
  EXPECT_EQ(run_cli("run " + scenario + " -o " + (dir / "out").string(), out, "timeout --preserve-status -s INT 3 "), 130) << out;
  EXPECT_TRUE(contains(out, "interrupted: the finished points are in " + (dir / "out").string() + "/results.jsonl; "
                            "`placesim run " + scenario + " --resume -o " + (dir / "out").string() + "` runs the rest"))
      << out;
  fs::remove_all(dir);
}

TEST(Cli, PlanSaysStepTimeAndMemoryOrWhyItDoesNotFit) {
  const std::string workload = std::string(PLACESIM_TEST_SOURCE_DIR) + "/../shared/workloads/nest/bert.h100_spineLeaf.mbs1.json";
  if (!fs::exists(workload)) GTEST_SKIP() << workload << " is absent (CI has it)";
  const fs::path dir = testutil::fresh_temp_dir("cli-plan");
  write(dir / "c.yaml", "type: nvlink-servers\ngpus: 8\ngpu_memory: 80GiB\n");
  write(dir / "small.yaml", "type: nvlink-servers\ngpus: 8\ngpu_memory: 1GiB\n");
  const std::string args = " --workload " + workload + " --tp 2 --pp 2 --dp 2 --micro-batches 4 --cluster ";
  std::string out;
  ASSERT_EQ(run_cli("plan" + args + (dir / "c.yaml").string(), out), 0) << out;
  for (const char* line : {"tp 2 x pp 2 x dp 2 = 8 GPUs, 4 micro-batches, 1f1b, ZeRO 0", "memory stage 0 ", "evaluator ",
                           "flow ", "simgrid "})
    EXPECT_TRUE(contains(out, line)) << line << "\n" << out;
  // BERT-large's 1.3 GB of weights per stage and GPU, 8x with gradients and Adam's states: no 1 GiB GPU holds them.
  EXPECT_EQ(run_cli("plan" + args + (dir / "small.yaml").string(), out), 1) << out;
  EXPECT_TRUE(contains(out, "plan: infeasible: gpu0 (replica 0, stage 0, tensor rank 0) needs")) << out;
  // Said from the plan's layout, before its execution graph is built; each memory line says of what.
  EXPECT_FALSE(contains(out, "operators, ")) << out;
  EXPECT_TRUE(contains(out, " of 1 GiB per GPU: parameters ")) << out;
  EXPECT_EQ(run_cli("plan --workload " + workload + " --tp 3 --cluster " + (dir / "c.yaml").string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "has no tensor-parallel width 3; it has: 1, 2, 4, 8")) << out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace placesim

namespace placesim {
namespace {

// `reproduce nccl-tests`: every row of the calibration file beside placesim's, each within the
// tolerance docs/collectives.md states, in the table and in nccl-tests.csv.
TEST(Cli, ReproduceNcclTestsWritesEveryRowWithinTolerance) {
  if (!fs::exists(fs::path(PLACESIM_TEST_SOURCE_DIR) / ".." / "shared" / "validation" / "nccl-tests_nd-h100-v5_1x8.csv"))
    GTEST_SKIP() << "../shared/validation is absent: the nccl-tests measurements are not available";
  const fs::path dir = testutil::fresh_temp_dir("cli-nccl-tests");
  std::string out;
  ASSERT_EQ(run_cli("reproduce nccl-tests --no-plots -o " + dir.string(), out), 0) << out;
  EXPECT_TRUE(contains(out, "largest error")) << out;
  std::ifstream csv(dir / "nccl-tests.csv");
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "op,bytes,measured_us,simulated_us,error,measured_busbw_GBps,simulated_busbw_GBps,ran");
  int rows = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::stringstream in(line);
    for (std::string x; std::getline(in, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 8u) << line;
    EXPECT_LE(std::abs(std::stod(f[4])), std::stod(f[1]) >= (1 << 20) ? 0.10 : 0.25) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 42);
  ASSERT_EQ(run_cli("reproduce --list", out), 0) << out;
  EXPECT_TRUE(contains(out, "nccl-tests")) << out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace placesim

namespace placesim {
namespace {

// `simulation.trace: gzip` writes each point's timeline gzip'd, recorded under its .json.gz name;
// anything but true, false or gzip is refused naming the key.
TEST(Cli, RunWritesGzippedTimelinesWhenAsked) {
  const fs::path dir = testutil::fresh_temp_dir("cli-run-gzip");
  write(dir / "s.yaml", "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\n"
                        "strategies: [round-robin]\nsimulation: {engine: evaluator, trace: gzip}\n");
  std::string out;
  ASSERT_EQ(run_cli("run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string(), out), 0) << out;
  const fs::path gz = dir / "out" / "trace-round-robin.json.gz";
  ASSERT_TRUE(fs::exists(gz)) << out;
  EXPECT_FALSE(fs::exists(dir / "out" / "trace-round-robin.json"));
  const std::optional<std::string> text = testutil::read_gzip_file(gz);
  ASSERT_TRUE(text.has_value());
  EXPECT_TRUE(nlohmann::json::parse(*text).contains("traceEvents"));
  std::ifstream records(dir / "out" / "results.jsonl");
  std::string line;
  std::getline(records, line);
  EXPECT_EQ(nlohmann::json::parse(line)["trace_file"], "trace-round-robin.json.gz");
  write(dir / "bad.yaml", "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\n"
                          "strategies: [round-robin]\nsimulation: {engine: evaluator, trace: zip}\n");
  EXPECT_EQ(run_cli("run " + (dir / "bad.yaml").string() + " -o " + (dir / "out2").string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "expected true, false or gzip, got 'zip'")) << out;
  EXPECT_TRUE(contains(out, "simulation.trace")) << out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace placesim

namespace placesim {
namespace {

// `collective --nccl-tests` as nccl-tests' parsers read it: '#' headers, then per size the
// columns size, count, type, redop, root, then time, algbw, busbw and #wrong out of place and
// again in place, and the "# Avg bus bandwidth" footer (the mean of the busbw column).
TEST(Cli, CollectiveNcclTestsLayoutIsReadByNcclTestsColumns) {
  const fs::path dir = testutil::fresh_temp_dir("nccl_tests_layout");
  std::ofstream(dir / "c.yaml") << "cluster: {preset: dgx-h100, servers: 2}\n";
  std::string out;
  ASSERT_EQ(testutil::run_command(fmt::format("({} collective --cluster {} --bytes 1MiB:8MiB --nccl-tests 2>/dev/null)",
                                              PLACESIM_CLI_PATH, (dir / "c.yaml").string()),
                                  out),
            0)
      << out;
  std::istringstream lines(out);
  std::string line;
  std::vector<std::vector<std::string>> rows;
  double average = -1;
  bool saw_columns = false;
  while (std::getline(lines, line)) {
    if (line.rfind("#", 0) == 0) {
      if (line.find("size         count      type   redop    root     time   algbw   busbw #wrong") != std::string::npos)
        saw_columns = true;
      if (line.rfind("# Avg bus bandwidth", 0) == 0) average = std::stod(line.substr(line.find(':') + 1));
      continue;
    }
    std::istringstream fields(line);
    std::vector<std::string> row;
    for (std::string f; fields >> f;) row.push_back(f);
    if (!row.empty()) rows.push_back(row);
  }
  EXPECT_TRUE(saw_columns) << out;
  ASSERT_EQ(rows.size(), 4u) << out;  // 1, 2, 4, 8 MiB
  double sum = 0;
  for (const auto& r : rows) {
    ASSERT_EQ(r.size(), 13u) << out;
    EXPECT_EQ(r[2], "float");
    EXPECT_EQ(r[3], "sum");
    EXPECT_EQ(r[4], "-1");
    EXPECT_EQ(std::stoll(r[1]) * 4, std::stoll(r[0]));
    EXPECT_EQ(r[8], "0");   // #wrong, out of place
    EXPECT_EQ(r[12], "0");  // in place
    EXPECT_EQ(r[5], r[9]);  // the same simulation
    EXPECT_NEAR(std::stod(r[7]) / std::stod(r[6]), 2.0 * 15 / 16, 0.01);  // busbw = algbw x 2(n - 1)/n
    sum += std::stod(r[7]);
  }
  EXPECT_NEAR(average, sum / 4, 0.01) << out;
}

}  // namespace
}  // namespace placesim
