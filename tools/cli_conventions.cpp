#include "cli_conventions.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <vector>

#include "sim/core/errors.h"
#include "sim/config/yaml_fields.h"

namespace placesim {

const char* const kExitCodesHelp =
    "Exit codes:\n"
    "  0  everything ran\n"
    "  1  some point failed (its reason is in the results), or placesim itself did (internal error: a bug to report)\n"
    "  2  bad input or environment (a file, a flag, a folder that cannot be written), said in one line naming it";

CLI::Validator whole_number(long long min, long long max) {
  const std::string description =
      max == std::numeric_limits<long long>::max() ? fmt::format("N >= {}", min) : fmt::format("{}..{}", min, max);
  return CLI::Validator([min, max](std::string& text) { return whole_number_problem(text, min, max); }, description);
}

CLI::Validator number_in(const Range& range) {
  return CLI::Validator([range](std::string& text) { return number_problem(text, range); }, range.describe());
}

CLI::Validator one_of(std::vector<std::string> names) {
  const std::string description = fmt::format("{{{}}}", fmt::join(names, ","));
  return CLI::Validator(
      [names](std::string& text) -> std::string {
        if (std::find(names.begin(), names.end(), text) != names.end()) return "";
        const std::string hint = nearest_word(text, names);
        return fmt::format("expected one of {}, got '{}'{}", fmt::join(names, ", "), text,
                           hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint));
      },
      description);
}

std::string command_path(const CLI::App& command) {
  std::string path = command.get_name();
  for (const CLI::App* parent = command.get_parent(); parent; parent = parent->get_parent())
    path = parent->get_name() + " " + path;
  return path;
}

namespace {

std::vector<const CLI::App*> subcommands_of(const CLI::App& command) {
  return command.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); });
}

bool takes_positionals(const CLI::App& command) {
  return !command.get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
}

// The commands under `root` (itself included) that have an option named `name`.
void commands_with_option(const CLI::App& root, const std::string& name, std::vector<std::string>& out) {
  if (root.get_option_no_throw(name)) out.push_back(command_path(root));
  for (const CLI::App* sub : subcommands_of(root)) commands_with_option(*sub, name, out);
}

[[noreturn]] void throw_unknown_option(const CLI::App& root, const CLI::App& command, const std::string& name) {
  std::vector<std::string> names;
  for (const CLI::Option* o : command.get_options()) {
    if (o->get_group().empty()) continue;  // hidden test hooks are never suggested
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
  }
  const std::string hint = nearest_word(name, names);
  std::vector<std::string> elsewhere;
  commands_with_option(root, name, elsewhere);
  // Options the name begins (--micro-batch: --micro-batch-size and --micro-batches): each, with
  // the start of its help, since the nearest by spelling may not be the one meant.
  std::vector<std::string> begun;
  if (name.size() > 3)
    for (const CLI::Option* o : command.get_options()) {
      if (o->get_group().empty()) continue;
      for (const auto& l : o->get_lnames()) {
        if (("--" + l).rfind(name, 0) != 0 || "--" + l == name) continue;
        std::string help = o->get_description();
        // A help that starts by naming what it applies to ("--model: sequences per ...") says it later.
        if (help.rfind("--", 0) == 0 && help.find(": ") != std::string::npos && help.find(": ") < help.find(' '))
          help = help.substr(help.find(": ") + 2);
        help = help.substr(0, std::min({help.find(';'), help.find(" ("), help.find(". "), std::size_t{60}}));
        begun.push_back(fmt::format("'--{}' ({})", l, help));
      }
    }
  std::string what = fmt::format("unknown option '{}'", name);
  if (!elsewhere.empty())
    what += fmt::format(" here: it is an option of '{}', and goes after that command", fmt::join(elsewhere, "', '"));
  else if (begun.size() >= 2)
    what += fmt::format("; did you mean {}? ('{} --help' lists its options)", fmt::join(begun, " or "), command_path(command));
  else if (!hint.empty())
    what += fmt::format("; did you mean '{}'? ('{} --help' lists its options)", hint, command_path(command));
  else
    what += fmt::format(" ('{} --help' lists its options)", command_path(command));
  throw InputError("command line", command_path(command), what);
}

[[noreturn]] void throw_unknown_command(const CLI::App& command, const std::string& word) {
  std::vector<std::string> names;
  for (const CLI::App* sub : subcommands_of(command)) names.push_back(sub->get_name());
  const std::string hint = word == "help" ? "--help" : nearest_word(word, names);
  throw InputError("command line", command_path(command),
                   fmt::format("unknown command '{}'{} (commands: {})", word,
                               hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint), fmt::join(names, ", ")));
}

}  // namespace

const CLI::App* check_command_words(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* command = &app;
  bool list_values = false;     // the words after an option taking a list are its values
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return nullptr;  // the rest are positional
    // Like CLI11: "-" and negative numbers ("-1") are values, not options.
    const bool is_long = arg.size() > 2 && arg.starts_with("--");
    const bool is_short = !is_long && arg.size() > 1 && arg[0] == '-' && arg[1] != '-' &&
                          !(arg[1] >= '0' && arg[1] <= '9') && arg[1] != '.';
    if (is_long || is_short) {
      const std::size_t equals = arg.find('=');
      const std::string name = is_long ? arg.substr(0, equals) : arg.substr(0, 2);
      const CLI::Option* option = command->get_option_no_throw(name);
      if (!option) throw_unknown_option(app, *command, name);
      if (option == command->get_help_ptr() || option == command->get_version_ptr()) return nullptr;  // CLI11 answers
      const int values = option->get_items_expected_max();
      const bool value_attached = is_long ? equals != std::string::npos : arg.size() > 2;
      list_values = values > 1;
      if (values >= 1 && !value_attached && i + 1 == argc)  // CLI11: "--jobs: 1 required INT:1..1024 missing"
        throw InputError("command line", name,
                         fmt::format("expected a value after it ('{} --help' says what it takes)", command_path(*command)));
      if (values == 1 && !value_attached) ++i;  // the next word is this option's value, whatever it looks like
      continue;
    }
    if (list_values) continue;
    const std::vector<const CLI::App*> subs = subcommands_of(*command);
    const auto sub = std::find_if(subs.begin(), subs.end(), [&](const CLI::App* s) { return s->check_name(arg); });
    if (sub != subs.end()) {
      command = *sub;
      continue;
    }
    if (takes_positionals(*command)) continue;
    if (!subs.empty()) throw_unknown_command(*command, arg);
    throw InputError("command line", command_path(*command),
                     fmt::format("unexpected argument '{}': this command takes none ('{} --help' lists its options)", arg,
                                 command_path(*command)));
  }
  return command->get_require_subcommand_min() > 0 ? command : nullptr;
}

std::string short_usage(const CLI::App& command) {
  const std::string path = command_path(command);
  std::string out = fmt::format("usage: {} <command> [options]\n", path);
  std::size_t width = 0;
  for (const CLI::App* sub : subcommands_of(command)) width = std::max(width, sub->get_name().size());
  for (const CLI::App* sub : subcommands_of(command))
    out += fmt::format("  {:<{}}  {}\n", sub->get_name(), width, sub->get_description());
  const CLI::App* root = &command;
  while (root->get_parent()) root = root->get_parent();
  out += fmt::format("'{} <command> --help' lists a command's options; '{} --help' also says the exit codes.\n", path,
                     root->get_name());
  return out;
}

}  // namespace placesim
