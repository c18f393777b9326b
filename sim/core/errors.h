#pragma once
// One error type for every bad input: it names the file, the field and what was expected, so the
// CLI can print it as one line and exit non-zero instead of crashing.
#include <stdexcept>
#include <string>

namespace placesim {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string field, const std::string& what)
      : std::runtime_error(format(file, field, what)), file_(std::move(file)), field_(std::move(field)), reason_(what) {}
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  // What was wrong, without the file and the field.
  const std::string& reason() const { return reason_; }

 private:
  static std::string format(const std::string& file, const std::string& field, const std::string& what) {
    std::string out = file.empty() ? std::string("<input>") : file;
    if (!field.empty()) out += ": " + field;
    return out + ": " + what;
  }
  std::string file_, field_, reason_;
};

// A file placesim must write cannot be written (a folder it may not write to, a full disk). That
// is the user's environment rather than their input, but it ends a command the same way: one line
// naming the path, exit code 2. A run stops at the first one instead of recording every later
// point as failed (which --resume would then skip).
class OutputError : public InputError {
 public:
  OutputError(std::string file, const std::string& what) : InputError(std::move(file), "", what) {}
};

}  // namespace placesim
