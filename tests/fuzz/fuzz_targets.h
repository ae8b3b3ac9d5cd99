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

struct Target {
  const char* name;  // also the folder of its corpus: corpus/NAME/
  Outcome (*run)(std::string_view bytes);
};

inline const std::vector<Target>& targets() {
  static const std::vector<Target> all = {{"kir", fuzz_kir},
                                          {"npy", fuzz_npy},
                                          {"safetensors", fuzz_safetensors},
                                          {"checkpoint_meta", fuzz_checkpoint_meta},
                                          {"kernel_cache", fuzz_kernel_cache}};
  return all;
}

}  // namespace kiln::fuzz
