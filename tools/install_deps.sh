#!/usr/bin/env bash
# Installs the Debian 12 packages kiln builds with, if any is missing (needs root
# then), and the two npm folders' packages as their package-lock.json pins them
# (the dump page's Graphviz, its browser test's driver). Nothing else is downloaded.
# Usage: tools/install_deps.sh [--bench] [--bible]
set -euo pipefail

# clang-19 and libclang-rt-19-dev: libFuzzer and its sanitizers, for tools/fuzz.sh;
# graphviz: `kiln dot FILE | dot -Tsvg`; libonnx-dev: `kiln import`; python3-torch and
# python3-onnx: its tests export models from PyTorch (they skip without them); pybind11-dev,
# python3-dev, python3-numpy, python3-pytest: the Python module and its tests (tools/python/); openmpi-bin and
# libopenmpi-dev: data-parallel training (mpirun -np N kiln train) and its tests (tests/mpi/); nodejs and
# chromium: the dump page's Graphviz (npm, embedded in kiln) and its test in the browser (tests/browser/).
packages=(cmake ninja-build g++ llvm-19-dev libzstd-dev libxtensor-dev libxsimd-dev doctest-dev libcli11-dev
          nlohmann-json3-dev pkg-config libsentencepiece-dev trans-de-en clang-19 libclang-rt-19-dev graphviz
          libonnx-dev libprotobuf-dev python3-torch python3-onnx pybind11-dev python3-dev python3-numpy python3-pytest
          openmpi-bin libopenmpi-dev nodejs chromium)
# --bench: also what the comparisons with other libraries need (tools/bench/ and
# `kiln bench --op matmul`): OpenBLAS (which PyTorch and the GEMM comparison use), and oneDNN.
if [[ " $* " == *" --bench "* ]]; then
  packages+=(libopenblas0-pthread libdnnl-dev)
fi
# --bible: mod2imp and the two SWORD Bibles that tools/bible/make_corpus.py exports.
if [[ " $* " == *" --bible "* ]]; then
  packages+=(libsword-utils sword-text-sparv sword-text-web)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi
# npm comes with some builds of nodejs (NodeSource's) and is Debian's package npm otherwise.
if ! command -v npm > /dev/null; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y npm
fi
# The npm packages, as their package-lock.json pins them: Graphviz as WebAssembly
# for the dump page (compiler/report/page) and puppeteer-core for its browser test.
for dir in compiler/report/page tests/browser; do
  (cd "$(dirname "$0")/../$dir" && npm ci --no-audit --no-fund --loglevel=error)
done
