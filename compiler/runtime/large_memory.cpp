#include "compiler/runtime/large_memory.h"

#include <sys/mman.h>

#include <cstdlib>

namespace kiln::compiler {

void* allocate_large(size_t bytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  if (bytes < kHugePage) return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  // Only advice: where THP is off ("never"), the pages stay 4 KiB.
  if (p) madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

}  // namespace kiln::compiler
