#pragma once
// Best-fit allocation of byte ranges in one growing arena: free ranges are kept
// ordered by offset (to coalesce neighbours) and by size (to find the smallest
// that fits), so each call is O(log n).
#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace kiln::compiler {

class ArenaAllocator {
 public:
  // The offset of a new range of `bytes` (> 0): the smallest free range that fits (lowest offset on ties), else
  // the free range that ends the arena grown to fit, else fresh space at the end.
  int64_t allocate(int64_t bytes);
  // Returns [offset, offset + bytes) to the free list, merged with free neighbours.
  void release(int64_t offset, int64_t bytes);
  // The arena's size: the highest end of any range ever allocated.
  int64_t size() const { return end_; }

 private:
  void insert_free(int64_t offset, int64_t bytes);
  void erase_free(std::map<int64_t, int64_t>::iterator it);

  std::map<int64_t, int64_t> by_offset_;           // offset -> bytes
  std::set<std::pair<int64_t, int64_t>> by_size_;  // (bytes, offset)
  int64_t end_ = 0;
};

}  // namespace kiln::compiler
