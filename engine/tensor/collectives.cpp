#include "engine/tensor/collectives.h"

#include "engine/ir/error.h"

namespace kiln {
namespace {

// One rank: every collective is the identity.
class SingleProcess final : public Collectives {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce(void*, int64_t, DType) override {}
  int64_t start_allreduce(void*, int64_t, DType) override { return 0; }
  bool test(int64_t) override { return true; }
  void wait(int64_t) override {}
  void broadcast(void*, int64_t) override {}
  void barrier() override {}
  std::vector<std::string> allgather(const std::string& bytes) override { return {bytes}; }
};

std::unique_ptr<Collectives>& installed() {
  static std::unique_ptr<Collectives> c = std::make_unique<SingleProcess>();
  return c;
}

}  // namespace

Collectives& collectives() { return *installed(); }

void set_collectives(std::unique_ptr<Collectives> c) { installed() = c ? std::move(c) : std::make_unique<SingleProcess>(); }

void check_ranks_agree(const std::string& what, const std::string& value) {
  const std::vector<std::string> all = collectives().allgather(value);
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      throw Error("the ranks disagree on " + what + ": rank 0 has " + all[0] + ", rank " + std::to_string(r) +
                  " has " + all[r]);
}

}  // namespace kiln
