#pragma once
// One error type for every bad input: it names the file, the field and what was expected, so the
// CLI can print it as one line and exit non-zero instead of crashing.
#include <stdexcept>
#include <string>

namespace placesim {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string field, const std::string& what)
      : std::runtime_error(format(file, field, what)), file_(std::move(file)), field_(std::move(field)) {}
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }

 private:
  static std::string format(const std::string& file, const std::string& field, const std::string& what) {
    std::string out = file.empty() ? std::string("<input>") : file;
    if (!field.empty()) out += ": " + field;
    return out + ": " + what;
  }
  std::string file_, field_;
};

}  // namespace placesim
