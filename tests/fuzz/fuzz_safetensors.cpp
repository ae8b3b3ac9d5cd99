// The safetensors reader: an input is read (every tensor and the metadata) or
// rejected, and what is read accounts for every byte of the file.
#include <sstream>

#include "engine/ir/error.h"
#include "engine/safetensors.h"
#include "fuzz/fuzz_targets.h"

namespace kiln::fuzz {

Outcome fuzz_safetensors(std::string_view bytes) {
  SafetensorsFile f;
  try {
    std::istringstream in{std::string(bytes)};
    f = read_safetensors(in, "fuzz.safetensors");
  } catch (const Error&) {
    return Outcome::rejected;
  }
  // The 8-byte header length, the header, then the tensors' data with nothing left over.
  uint64_t size = 8;
  for (int i = 7; i >= 0; --i) size += uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  for (const auto& [name, t] : f.tensors) size += t.nbytes();
  if (size != bytes.size()) throw FuzzFailure("the tensors read do not account for every byte of the file");
  return Outcome::accepted;
}

}  // namespace kiln::fuzz
