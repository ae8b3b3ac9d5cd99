// The libFuzzer entry of one fuzz target (KILN_FUZZ=ON builds one binary per
// target, naming its function in KILN_FUZZ_TARGET). An escaping exception aborts,
// which libFuzzer reports as a crash and saves the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_targets.h"
#include "ops/register_all.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln::register_all_ops();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::KILN_FUZZ_TARGET(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
