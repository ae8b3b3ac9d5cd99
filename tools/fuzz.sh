#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang-19 (KILN_FUZZ=ON, in
# build-fuzz) and fuzzes one of them.
#
#   tools/fuzz.sh TARGET MINUTES   runs TARGET for MINUTES on its corpus, one job;
#                                  prints the executions, coverage (cov), features
#                                  (ft), corpus size and crashes at the end
#   tools/fuzz.sh TARGET merge     merges what the runs found into the committed
#                                  corpus, minimized to a small set that covers every
#                                  edge (-set_cover_merge=1 -use_counters=0, the
#                                  set-cover form of -merge=1); crash-* files stay
#
# TARGET: kir, npy, safetensors, checkpoint_meta, kernel_cache, onnx or python_graph.
# Inputs a run finds go to build-fuzz/found-TARGET (the committed corpus
# tests/fuzz/corpus/TARGET is only read); a crash is saved as
# build-fuzz/crash-TARGET-*. Extra arguments go to libFuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# < 2)); then
  sed -n '2,16p' "$0"
  exit 2
fi
target=$1 what=$2
shift 2
build=build-fuzz
corpus=tests/fuzz/corpus/$target
found=$build/found-$target
[[ -d $corpus ]] || { echo "fuzz.sh: no target '$target' (no $corpus)" >&2; exit 2; }

launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B $build -G Ninja -DKILN_FUZZ=ON -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  "${launcher[@]}" > /dev/null
ninja -C $build "fuzz_$target"
mkdir -p "$found"
fuzzer=$build/fuzz_$target

if [[ $what == merge ]]; then
  merged=$(mktemp -d)
  "$fuzzer" -set_cover_merge=1 -use_counters=0 "$merged" "$corpus" "$found" "$@" 2>&1 | tail -n 1
  cp "$corpus"/crash-* "$merged"/ 2> /dev/null || true  # regressions stay, covered or not
  rm -f "$corpus"/*
  cp "$merged"/* "$corpus"/
  rm -rf "$merged"
  echo "$corpus: $(ls "$corpus" | wc -l) files, $(du -sh "$corpus" | cut -f1)"
  exit 0
fi

log=$build/fuzz-$target.log
status=0
"$fuzzer" "$found" "$corpus" -max_total_time=$((what * 60)) -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$build/crash-$target-" "$@" > "$log" 2>&1 || status=$?
grep -a -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::number_of_executed_units|^stat::peak_rss_mb' "$log" || true
crashes=$(find "$build" -maxdepth 1 -name "crash-$target-*" | wc -l)
echo "fuzz_$target: exit $status, $crashes crash file(s) in $build; the full log is $log"
exit $status
