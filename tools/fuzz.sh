#!/usr/bin/env bash
# Fuzzes one libFuzzer target of tests/fuzz, built with -DPLACESIM_FUZZ=ON (README, "Fuzzing").
#   tools/fuzz.sh <build dir> <target> [libFuzzer flags...]
#   e.g. tools/fuzz.sh build-asan fuzz_graph -max_total_time=60
# Seeds: the target's handwritten inputs (tests/fuzz/seeds/<name>) and the real files, staged into
# <build dir>/fuzz/<name>/seeds (the build tree, never the checkout): the scenarios and the YAML
# and JSON examples of the docs, and the graphs of ../shared/graphs (QuickP, msr-fiddle) when that
# folder is beside the checkout. New inputs go to <build dir>/fuzz/<name>/corpus, kept between
# runs; a crash is saved as <build dir>/fuzz/<name>/crash-* and makes this script fail.
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# < 2)); then
  echo "usage: tools/fuzz.sh <build dir> <target> [libFuzzer flags...]" >&2
  exit 2
fi
build=$1 target=$2
shift 2
name=${target#fuzz_}
exe=$build/$target
if [ ! -x "$exe" ]; then
  echo "fuzz: no $exe: configure $build with CC=clang CXX=clang++ -DPLACESIM_FUZZ=ON and build it" >&2
  exit 2
fi
work=$build/fuzz/$name
seeds=$work/seeds
rm -rf "$seeds"
mkdir -p "$seeds" "$work/corpus"
cp tests/fuzz/seeds/"$name"/* "$seeds/"

# seed <file>...: copies each file that exists, named after its path.
seed() {
  local f
  for f in "$@"; do
    if [ -f "$f" ]; then cp "$f" "$seeds/$(printf '%s' "$f" | tr '/' '_' | sed 's/^[._]*//')"; fi
  done
}
# fenced <language> <markdown>...: the ```<language> blocks of the docs, one seed each.
fenced() {
  local language=$1 md
  shift
  for md in "$@"; do
    awk -v lang="$language" -v out="$seeds/$(basename "$md" .md)-" '
      /^```/ { if (inside) { inside = 0; close(file); next } if ($0 == "```" lang) { inside = 1; file = out (++n) "." lang; next } }
      inside { print > file }' "$md"
  done
}
shared=../shared/graphs
case $name in
  graph)
    fenced json docs/*.md
    if [ -d "$shared" ]; then
      # The larger graphs (alexnet, vgg: 1 to 2.5 MB) are left out: libFuzzer caps inputs at 1 MB,
      # and a cut graph is only a JSON syntax error.
      while IFS= read -r f; do seed "$f"; done < <(find "$shared/quickp" "$shared/msr-fiddle" -name '*.json' -size -1000k | sort)
    else
      echo "fuzz: warning: no $shared beside the checkout; fuzzing from the handwritten graph seeds only" >&2
    fi
    ;;
  scenario)
    seed scenarios/*.yaml scenarios/papers/*.yaml
    fenced yaml README.md docs/*.md scenarios/README.md
    ;;
esac

dict=tests/fuzz/$name.dict
flags=(-artifact_prefix="$work/" -print_final_stats=1 -timeout=60)
if [ -f "$dict" ]; then flags+=(-dict="$dict"); fi
echo "fuzz: $target with $(ls "$seeds" | wc -l) seeds, $(ls "$work/corpus" | wc -l) inputs in $work/corpus" >&2
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
exec "$exe" "${flags[@]}" "$@" "$work/corpus" "$seeds"
