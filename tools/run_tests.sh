#!/usr/bin/env bash
# Builds everything and runs the whole test suite with CTest.
# Usage: tools/run_tests.sh [BUILD_DIR [CMAKE_ARGS...]]   (default: build)
# e.g.   tools/run_tests.sh build-sanitize -DKILN_SANITIZE=ON
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true

cmake -S . -B "$build" -G Ninja "$@"
ninja -C "$build" -j"$(nproc)"
ctest --test-dir "$build" -j"$(nproc)" --output-on-failure
