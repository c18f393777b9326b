#!/usr/bin/env bash
# Configures and builds placesim (Release) in ./build, or in $PLACESIM_BUILD_DIR. Arguments are
# passed on to cmake's configure step (e.g. -DPLACESIM_WERROR=ON). Used by the README's commands
# and CI.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${PLACESIM_BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" > /dev/null
cmake --build "$build_dir" -j "$(nproc)"
