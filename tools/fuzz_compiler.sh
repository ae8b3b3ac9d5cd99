#!/usr/bin/env bash
# Differential fuzzing of the compiler for a time budget (tools/README.md): runs
# the `compiler fuzz driver` case of the built test_jit, which shrinks each
# mismatch and saves it as a .kir regression.
# Usage: tools/fuzz_compiler.sh [--minutes N] [--seed S] [--save DIR] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=10
seed=$(date +%s)
save=$PWD/tests/jit/fuzz_regressions
build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --minutes) minutes=${2:?--minutes wants a number}; shift 2 ;;
    --seed) seed=${2:?--seed wants a number}; shift 2 ;;
    --save) save=${2:?--save wants a directory}; shift 2 ;;
    --build) build=${2:?--build wants a directory}; shift 2 ;;
    *) echo "fuzz_compiler.sh: unknown argument '$1' (usage: --minutes N --seed S --save DIR --build DIR)" >&2; exit 2 ;;
  esac
done
[[ $minutes =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "fuzz_compiler.sh: --minutes wants a positive number, got '$minutes'" >&2; exit 2; }
[[ $seed =~ ^[0-9]+$ ]] || { echo "fuzz_compiler.sh: --seed wants a non-negative integer, got '$seed'" >&2; exit 2; }
[[ -x $build/test_jit ]] || { echo "fuzz_compiler.sh: no $build/test_jit: build first (ninja -C $build test_jit)" >&2; exit 2; }
mkdir -p "$save"
echo "fuzz_compiler.sh: $minutes min from seed $seed, saving to $save"
KILN_FUZZ_MINUTES=$minutes KILN_FUZZ_SEED=$seed KILN_FUZZ_SAVE=$(cd "$save" && pwd) \
  exec "$build/test_jit" --no-intro --no-skip -tc='compiler fuzz driver'
