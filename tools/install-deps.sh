#!/usr/bin/env bash
# Installs every Debian 12 package placesim needs to build, test and benchmark.
# Safe to run again: apt-get skips what is installed.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev  # clang 14 and its libFuzzer/sanitizer runtimes: the sanitizer+fuzz tree (.ci/run)
  libsimgrid-dev            # the discrete-event engine (pkg-config: simgrid)
  libboost-graph-dev        # weakly connected components and graph algorithms
  libmetis-dev              # METIS k-way partitioning baseline
  libtbb-dev                # oneTBB: `refine:` evaluates candidate moves in parallel (placement/refine)
  libbenchmark-dev          # Google Benchmark (bench/)
  libgtest-dev              # GoogleTest (tests/)
  coinor-libcbc-dev coinor-libclp-dev  # open MILP/LP solvers (pkg-config: cbc, clp)
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev
  openmpi-bin libopenmpi-dev  # `placesim run --mpi` (mpirun) across ranks and machines
  python3-matplotlib        # plots of `placesim report` (tools/plot_results.py)
  graphviz                  # dot: draws the file `placesim topology info --dot` writes
  libtorch-dev              # LibTorch: Placeto's policy network (optional: CMake skips it when absent)
  libonnx-dev               # ONNX models in (sim/models/onnx_import.cpp): parsing and shape inference
  protobuf-compiler libprotobuf-dev  # Chakra execution traces (sim/io/chakra): protoc and the runtime
  zlib1g-dev                # gzip'd timelines (`--trace FILE.json.gz`, sim/io/trace.cpp), which Perfetto opens
  python3-protobuf          # the tests read the Chakra traces back with Python's protobuf
  python3-torch python3-torchvision  # tools/export_onnx.py: PyTorch and torchvision models to ONNX; the learned-placement example
  pybind11-dev python3-dev  # the Python module placesim (python/, docs/python.md), for /usr/bin/python3
  python3-numpy python3-pandas python3-yaml  # what the module returns (arrays, frames) and reads (strategies' args)
  python3-pytest            # the module's tests (python/tests, run by ctest)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
