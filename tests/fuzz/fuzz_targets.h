#pragma once
// The fuzz targets: one function per input format kiln reads, each taking the
// bytes of one input. The same functions run under libFuzzer (libfuzzer/, built
// with KILN_FUZZ=ON) and in the test_fuzz suite, which replays every corpus file.
//
// A target returns `accepted` or `rejected` (a kiln::Error: the expected outcome
// for bad input). Anything else is a bug and escapes: another exception, a
// FuzzFailure for a broken promise (a parsed graph that does not verify or
// round-trip, say), a crash or a sanitizer report.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::fuzz {

enum class Outcome { accepted, rejected };

struct FuzzFailure : std::logic_error {
  using std::logic_error::logic_error;
};

Outcome fuzz_kir(std::string_view bytes);
Outcome fuzz_npy(std::string_view bytes);
Outcome fuzz_safetensors(std::string_view bytes);
Outcome fuzz_checkpoint_meta(std::string_view bytes);
Outcome fuzz_kernel_cache(std::string_view bytes);
Outcome fuzz_onnx(std::string_view bytes);
Outcome fuzz_python_graph(std::string_view bytes);

struct Target {
  const char* name;  // also the folder of its corpus: corpus/NAME/
  Outcome (*run)(std::string_view bytes);
};

// The targets test_fuzz replays.
inline const std::vector<Target>& targets() {
  static const std::vector<Target> all = {{"kir", fuzz_kir},
                                          {"npy", fuzz_npy},
                                          {"safetensors", fuzz_safetensors},
                                          {"checkpoint_meta", fuzz_checkpoint_meta},
                                          {"kernel_cache", fuzz_kernel_cache},
                                          {"python_graph", fuzz_python_graph}};
  return all;
}

// The onnx target is replayed by test_onnx instead: ONNX's protobuf cannot share
// a process with the models' sentencepiece, which test_fuzz links (tools/cmd_import.h).
inline Target onnx_target() { return {"onnx", fuzz_onnx}; }

}  // namespace kiln::fuzz
