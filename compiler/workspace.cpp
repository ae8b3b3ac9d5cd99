#include "compiler/workspace.h"

#include <cstdlib>
#include <algorithm>
#include <new>

namespace kiln::compiler {

void Workspace::Free::operator()(std::byte* p) const { std::free(p); }

std::byte* Workspace::reserve(int64_t bytes) {
  if (bytes <= size_ && data_) return data_.get();
  const auto rounded = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
  data_.reset(static_cast<std::byte*>(std::aligned_alloc(64, rounded)));
  if (!data_) throw std::bad_alloc();
  size_ = static_cast<int64_t>(rounded);
  return data_.get();
}

}  // namespace kiln::compiler
