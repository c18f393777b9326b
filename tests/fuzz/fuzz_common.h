#pragma once
// Shared by the libFuzzer targets of tests/fuzz (built with -DPLACESIM_FUZZ=ON, run with
// tools/fuzz.sh). For bad input placesim's contract is one InputError (sim/core/errors.h) that names the
// file and the field; a crash, a sanitizer report or any other exception that escapes is a finding.
// finding() prints what broke the contract and aborts, which libFuzzer records as a crash and
// saves the input that caused it.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

#include "sim/core/errors.h"

namespace placesim::fuzz {

[[noreturn]] inline void finding(std::string_view what) {
  std::fprintf(stderr, "placesim fuzz finding: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

// Runs `body`; an InputError is the expected outcome for a bad input, anything else escaping is a
// finding.
template <class Body>
int run_one(Body&& body) {
  try {
    body();
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    finding(std::string("an exception other than InputError escaped: ") + e.what());
  } catch (...) {
    finding("an exception of unknown type escaped");
  }
  return 0;
}

// A scratch file of this process (the loaders that read paths are fuzzed through it), removed at
// exit with its folder.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& name) {
    dir_ = std::filesystem::temp_directory_path() / ("placesim-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / name).string();
  }
  ~ScratchFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& write(const std::uint8_t* data, std::size_t size) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) finding("cannot write the scratch file " + path_);
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace placesim::fuzz
