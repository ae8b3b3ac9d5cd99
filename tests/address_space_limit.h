#pragma once
// A lower address-space limit (RLIMIT_AS, ulimit -v) for this process while one
// of these lives: `headroom` bytes beyond what it has mapped now.
//
// ASan reserves terabytes of address space up front, so the sanitizer build
// cannot live under such a limit: tests check kAddressSpaceLimitWorks and skip.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSpaceLimitWorks = false;
#else
constexpr bool kAddressSpaceLimitWorks = true;
#endif

class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(uint64_t headroom) {
    ::getrlimit(RLIMIT_AS, &previous_);
    uint64_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    rlimit limit = previous_;
    limit.rlim_cur = pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) + headroom;
    ::setrlimit(RLIMIT_AS, &limit);
  }
  ~AddressSpaceLimit() { ::setrlimit(RLIMIT_AS, &previous_); }
  AddressSpaceLimit(const AddressSpaceLimit&) = delete;
  AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;

  rlim_t bytes() const {
    rlimit now{};
    ::getrlimit(RLIMIT_AS, &now);
    return now.rlim_cur;
  }

 private:
  rlimit previous_{};
};
