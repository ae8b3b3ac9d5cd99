#!/usr/bin/env bash
# Builds the kiln command, then checks and runs every examples/NAME.kir, binding
# each examples/inputs/NAME/INPUT.npy to INPUT; outputs go to out/NAME/.
# Usage: tools/run_examples.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
ninja -C "$build" -j"$(nproc)" kiln

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
