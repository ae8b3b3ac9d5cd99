#pragma once
// What the tests of the trainer's parts (models/train/step_runner.h,
// evaluator.h, checkpoint_keeper.h, run_start.h, job_start.h) share: a model
// small enough for the interpreter (transformer_test_inputs.h), its tensors from
// a seed, and a job of two ranks played by a stand-in for the second one.
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/param_init.h"
#include "engine/tensor/collectives.h"
#include "engine/tensor/tensor.h"
#include "models/transformer/config.h"
#include "transformer_test_inputs.h"

namespace kiln::test {

// The copy task's model at its smallest (vocabulary 11, d_model 16, one layer a side).
inline models::TransformerConfig copy_model() {
  models::TransformerConfig c = checkpoint_config(16);
  c.dropout = 0;
  return c;
}

// Every param and state `graph` declares, initialized from `seed`.
inline std::map<std::string, Tensor> seeded_tensors(const Graph& graph, uint64_t seed) {
  std::map<std::string, Tensor> tensors;
  for (Value v : graph.declarations())
    if (graph.value(v).kind != ValueKind::input)
      tensors.emplace(graph.value(v).name, initial_value(graph.value(v), seed));
  return tensors;
}

inline bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.type() == b.type() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// Rank `rank_` of a job of two, whose other rank adds `others` to every f32
// allreduce, gathers this rank's value but for the gathers `differing` numbers
// (0: the first) and, when this rank is 1, broadcasts `rank0_bytes`.
class TwoRankJob final : public Collectives {
 public:
  int rank_ = 0;
  std::vector<float> others;
  std::map<size_t, std::string> differing;
  std::string rank0_bytes;

  int rank() const override { return rank_; }
  int size() const override { return 2; }
  void allreduce(void* data, int64_t count, DType) override {
    auto* f = static_cast<float*>(data);
    for (int64_t i = 0; i < count; ++i) f[i] += others.at(static_cast<size_t>(i));
  }
  int64_t start_allreduce(void*, int64_t, DType) override { return 0; }
  bool test(int64_t) override { return true; }
  void wait(int64_t) override {}
  void broadcast(void* data, int64_t bytes) override {
    if (rank_ == 0) return;
    std::memcpy(data, rank0_bytes.data() + broadcast_offset_, static_cast<size_t>(bytes));
    broadcast_offset_ += static_cast<size_t>(bytes);
  }
  void barrier() override {}
  std::vector<std::string> allgather(const std::string& bytes) override {
    const auto it = differing.find(gathers_++);
    const std::string other = it != differing.end() ? it->second : bytes;
    return rank_ == 0 ? std::vector<std::string>{bytes, other} : std::vector<std::string>{other, bytes};
  }

 private:
  size_t broadcast_offset_ = 0, gathers_ = 0;
};

// Installs a job's collectives for a scope, and one process's again after it.
class InstalledCollectives {
 public:
  explicit InstalledCollectives(std::unique_ptr<Collectives> c) { set_collectives(std::move(c)); }
  ~InstalledCollectives() { set_collectives(nullptr); }
  InstalledCollectives(const InstalledCollectives&) = delete;
  InstalledCollectives& operator=(const InstalledCollectives&) = delete;
};

}  // namespace kiln::test
