#pragma once
// What `placesim --version` prints: the version, the commit it was built from, and which optional
// parts this build has.
#include <string>

namespace placesim {

std::string version_text();

}  // namespace placesim
