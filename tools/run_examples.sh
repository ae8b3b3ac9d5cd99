#!/usr/bin/env bash
# Builds the kiln command and installs it with the Python module (on the PATH:
# /usr/local, or KILN_PREFIX), then checks and runs every examples/NAME.kir, binding
# each examples/inputs/NAME/INPUT.npy to INPUT (outputs go to out/NAME/), and
# trains a small Transformer on the copy task briefly (checkpoint in out/copy/,
# replaced on every run) and shows a greedy translation, and finally runs the
# Python example (examples/python/).
# Usage: tools/run_examples.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
ninja -C "$build" -j"$(nproc)" kiln kiln-import kiln_python

# kiln on the PATH and `import kiln` in python3, from any directory: the
# commands and the module into /usr/local (KILN_PREFIX to choose another).
prefix=${KILN_PREFIX:-/usr/local}
if [[ -w "$prefix" || ! -e "$prefix" && -w "$(dirname "$prefix")" ]]; then
  cmake --install "$build" --component tool --prefix "$prefix"
else
  echo "not installing: $prefix is not writable (run as root, or set KILN_PREFIX); use $build/kiln"
fi

shopt -s nullglob
for kir in examples/*.kir; do
  name=$(basename "$kir" .kir)
  echo "== $kir"
  "$build/kiln" check "$kir" >/dev/null
  inputs=()
  for npy in "examples/inputs/$name"/*.npy; do
    inputs+=(--input "$(basename "$npy" .npy)=$npy")
  done
  "$build/kiln" run "$kir" "${inputs[@]}" --output-dir "out/$name"
done

echo "== the Transformer on the copy task (about 15 seconds on 2 cores)"
rm -rf out/copy
"$build/kiln" train --task copy --steps 400 --d-model 64 --heads 4 --d-ff 256 --layers 2 --dropout 0 --warmup 100 \
  --checkpoint out/copy
echo "== kiln translate --checkpoint out/copy \"1 2 3 4 5 6 7 8 9 10\""
"$build/kiln" translate --checkpoint out/copy "1 2 3 4 5 6 7 8 9 10"

echo "== examples/python/mlp.py: an MLP built, differentiated, compiled and trained from Python"
PYTHONPATH="$build/python" /usr/bin/python3 examples/python/mlp.py
