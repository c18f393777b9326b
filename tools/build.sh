#!/usr/bin/env bash
# Configures and builds placesim in ./build (Release). Used by the README's commands and CI.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)"
