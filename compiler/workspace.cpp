#include "compiler/workspace.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "compiler/runtime/large_memory.h"
#include "engine/ir/error.h"
#include "engine/tensor/memory_check.h"

namespace kiln::compiler {

void Workspace::Free::operator()(std::byte* p) const { std::free(p); }

std::byte* Workspace::reserve(int64_t bytes) {
  if (bytes <= size_ && data_) return data_.get();
  constexpr const char* kWhat = "the workspace of the program's temporaries";
  const uint64_t lines = (static_cast<uint64_t>(std::max<int64_t>(bytes, 1)) + 63) / 64;
  const auto rounded = static_cast<size_t>(checked_bytes(lines, 64, kWhat));
  data_.reset(static_cast<std::byte*>(allocate_large(rounded)));
  if (!data_) throw Error(std::string("cannot allocate ") + std::to_string(rounded) + " bytes for " + kWhat);
  size_ = static_cast<int64_t>(rounded);
  return data_.get();
}

}  // namespace kiln::compiler
