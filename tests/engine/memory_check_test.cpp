// The memory checks see every limit on the process, not only the machine's
// memory: an address-space limit (ulimit -v, here set in-process) and a control
// group's memory limit (here read from a directory laid out as /sys/fs/cgroup).
#include "engine/tensor/memory_check.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "address_space_limit.h"
#include "check_error.h"
#include "cli/temp_dir.h"
#include "engine/tensor/cgroup_memory.h"
#include "engine/tensor/tensor.h"

using namespace kiln;

namespace {

// ROOT/GROUP/FILE holding `text`, as the kernel shows a cgroup's limit.
void write_limit(const TempDir& root, const std::string& group, const std::string& file, const std::string& text) {
  const std::filesystem::path dir = root.path() / group;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / file) << text << '\n';
}

}  // namespace

TEST_CASE("a cgroup v2 memory.max of the process's group or a group above it is its limit; max is none") {
  TempDir root;
  const std::string self = "0::/user.slice/session-1.scope\n";
  CHECK_FALSE(cgroup_memory_limit(self, root.path().string()));  // no files: no limit

  write_limit(root, "user.slice/session-1.scope", "memory.max", "max");
  CHECK_FALSE(cgroup_memory_limit(self, root.path().string()));

  write_limit(root, "user.slice", "memory.max", "2147483648");
  auto limit = cgroup_memory_limit(self, root.path().string());
  REQUIRE(limit);
  CHECK(limit->bytes == 2147483648u);
  CHECK(limit->file == root.file("user.slice/memory.max"));

  write_limit(root, "user.slice/session-1.scope", "memory.max", "1073741824");  // the smaller wins
  limit = cgroup_memory_limit(self, root.path().string());
  REQUIRE(limit);
  CHECK(limit->bytes == 1073741824u);
  CHECK(limit->file == root.file("user.slice/session-1.scope/memory.max"));

  write_limit(root, "user.slice", "memory.max", "garbage");  // unreadable: none, the other still counts
  CHECK(cgroup_memory_limit(self, root.path().string())->bytes == 1073741824u);
}

TEST_CASE("cgroup v1's memory.limit_in_bytes counts for the memory controller's line only; v2 in the hybrid layout") {
  TempDir root;
  write_limit(root, "memory/docker/abc", "memory.limit_in_bytes", "536870912");
  write_limit(root, "cpu/docker/abc", "memory.limit_in_bytes", "1");  // not the memory controller's
  const std::string v1 = "5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n";
  auto limit = cgroup_memory_limit(v1, root.path().string());
  REQUIRE(limit);
  CHECK(limit->bytes == 536870912u);
  CHECK(limit->file == root.file("memory/docker/abc/memory.limit_in_bytes"));
  CHECK_FALSE(cgroup_memory_limit("4:cpu:/docker/abc\n", root.path().string()));

  write_limit(root, "unified/app", "memory.max", "268435456");
  limit = cgroup_memory_limit("0::/app\n", root.path().string());
  REQUIRE(limit);
  CHECK(limit->bytes == 268435456u);
}

TEST_CASE("under an address-space limit, sizes are checked against what it leaves and the message names it") {
  if (!kAddressSpaceLimitWorks) return;  // see address_space_limit.h
  const uint64_t gib = uint64_t{1} << 30;
  const AddressSpaceLimit limit(256 << 20);
  const std::string ulimit = "(ulimit -v " + std::to_string(limit.bytes() / 1024) + ")";
  const MemoryLimit now = memory_limit();
  CHECK(now.bytes <= uint64_t{256 << 20});
  CHECK(now.bytes > uint64_t{200 << 20});
  CHECK_MESSAGE(now.what.find("left under the address-space limit of") != std::string::npos, now.what);
  CHECK_MESSAGE(now.what.find(ulimit) != std::string::npos, now.what);

  CHECK(checked_bytes(16 << 20, 4, "a small tensor") == uint64_t{64 << 20});
  check_error([&] { checked_bytes(gib, 1, "a gibibyte"); },
              {"a gibibyte needs 1073741824 bytes (1.0 GiB), more than the ", "address-space limit", ulimit});
  check_error([&] { Tensor::zeros({DType::f32, {1 << 28}}); },
              {"f32[268435456] needs 1073741824 bytes (1.0 GiB), more than", ulimit});
  CHECK(out_of_memory_message().find(ulimit) != std::string::npos);
}

TEST_CASE("without a limit set on the process, the machine's memory is the limit") {
  rlimit as{};
  getrlimit(RLIMIT_AS, &as);
  if (as.rlim_cur != RLIM_INFINITY || cgroup_memory_limit()) return;  // another limit is in force here
  CHECK(memory_limit().what.find("this machine's") == 0);
  check_error([&] { checked_bytes(uint64_t{1} << 50, 4, "a huge tensor"); },
              {"a huge tensor needs 4503599627370496 bytes (4194304.0 GiB), more than this machine's"});
  check_error([&] { checked_bytes(uint64_t{1} << 62, 4, "an impossible tensor"); },
              {"an impossible tensor needs more than 2^64 bytes"});
}
