#pragma once
// Memory for large buffers that kernels stream through (the workspace's arena,
// kiln_scratch): 2 MiB aligned and advised to be backed by transparent huge
// pages (MADV_HUGEPAGE; Debian's default THP mode is "madvise"), so a kernel
// that walks a buffer with a large stride, as the GEMM does when it packs a
// transposed operand (rows 32 KB apart in the fused loss's blocks of logits),
// takes a TLB entry per 2 MiB instead of per 4 KiB. Smaller buffers get
// ordinary 64-byte aligned memory.
#include <cstddef>

namespace kiln::compiler {

// At least `bytes` (rounded up), or nullptr; release with std::free.
void* allocate_large(size_t bytes);

}  // namespace kiln::compiler
