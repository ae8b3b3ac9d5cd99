#pragma once
// The arena a program's temporaries live in (the memory plan's offsets). One
// workspace can serve several executables that never run at the same time (a
// trainer's bucket shapes, a decoder's lengths): it grows to the largest arena
// asked of it, so they share one allocation instead of one each.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace kiln::compiler {

class Workspace {
 public:
  // At least `bytes` bytes, 64-byte aligned; the pointer stays valid until a
  // larger size is asked for. kiln::Error naming the bytes if they exceed the
  // machine's memory or cannot be allocated.
  std::byte* reserve(int64_t bytes);
  int64_t size() const { return size_; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;
  int64_t size_ = 0;
};

}  // namespace kiln::compiler
