#include "compiler/schedule/arena_allocator.h"

#include <iterator>

namespace kiln::compiler {

int64_t ArenaAllocator::allocate(int64_t bytes) {
  auto fit = by_size_.lower_bound({bytes, 0});
  if (fit != by_size_.end()) {
    const auto [free_bytes, offset] = *fit;
    erase_free(by_offset_.find(offset));
    if (free_bytes > bytes) insert_free(offset + bytes, free_bytes - bytes);
    return offset;
  }
  // Nothing fits. Growing a free range that touches the end wastes less than starting fresh after it.
  if (!by_offset_.empty()) {
    const auto last = std::prev(by_offset_.end());
    if (last->first + last->second == end_) {
      const int64_t offset = last->first;
      erase_free(last);
      end_ = offset + bytes;
      return offset;
    }
  }
  const int64_t offset = end_;
  end_ += bytes;
  return offset;
}

void ArenaAllocator::release(int64_t offset, int64_t bytes) {
  auto next = by_offset_.lower_bound(offset);
  if (next != by_offset_.end() && offset + bytes == next->first) {
    bytes += next->second;
    erase_free(next);
  }
  auto after = by_offset_.lower_bound(offset);
  if (after != by_offset_.begin()) {
    const auto prev = std::prev(after);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      bytes += prev->second;
      erase_free(prev);
    }
  }
  insert_free(offset, bytes);
}

void ArenaAllocator::insert_free(int64_t offset, int64_t bytes) {
  by_offset_.emplace(offset, bytes);
  by_size_.emplace(bytes, offset);
}

void ArenaAllocator::erase_free(std::map<int64_t, int64_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  by_offset_.erase(it);
}

}  // namespace kiln::compiler
