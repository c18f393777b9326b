#pragma once
// What every placesim command line follows, whatever the command: one set of exit codes, numbers
// checked and described in words, unknown commands and options named with the nearest valid one,
// and a short usage when a command is missing.
#include <CLI/CLI.hpp>
#include <limits>
#include <string>

#include "sim/config/options.h"
#include "sim/core/names.h"  // shell_quoted

namespace placesim {

// The exit codes, the same for every command (README "Exit codes"; the footer of --help).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;    // some point failed (or placesim itself did: a bug to report)
inline constexpr int kExitBadInput = 2;  // bad input or environment: a file, a flag, a folder it cannot write
extern const char* const kExitCodesHelp;

// Checks for numeric flags that say what they expect in words and give back what they got:
// "expected a whole number from 1 to 1024, got 'two'" (CLI11's own say "Value two not in range").
CLI::Validator whole_number(long long min, long long max = std::numeric_limits<long long>::max());
CLI::Validator number_in(const Range& range);
// One of `names`, or "expected one of a, b, c, got 'x'; did you mean 'y'?" (CLI11's IsMember
// suggests nothing).
CLI::Validator one_of(std::vector<std::string> names);

// Walks the command words and option names of argv through `app`'s commands, as CLI11 will, before
// CLI11 parses them: CLI11 reports an unknown option only after checking the other arguments (a
// mistyped `--job 2` ends as "scenario: File does not exist: 2") and an unknown command as "A
// subcommand is required". Throws InputError ("command line") naming the unknown command or option
// and the nearest valid one. Returns the command that needs a subcommand and was given none
// (`placesim` alone, `placesim graph`), for a short usage, or nullptr.
const CLI::App* check_command_words(const CLI::App& app, int argc, const char* const* argv);

// "placesim graph": the command words that lead to `command`.
std::string command_path(const CLI::App& command);

// A few lines: how to call `command`, its subcommands with their descriptions, where to read more.
std::string short_usage(const CLI::App& command);

}  // namespace placesim
