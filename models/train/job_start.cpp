#include "models/train/job_start.h"

#include <cstdio>
#include <string_view>

#include "engine/fnv1a.h"
#include "engine/ir/read_file.h"
#include "engine/tensor/collectives.h"

namespace kiln::models {
namespace {

// A short printable digest of bytes.
std::string digest_text(std::string_view bytes) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(fnv1a_64(bytes)));
  return text;
}

std::string batch_digest(const Batch& b) {
  std::string bytes;
  for (const Tensor* t : {&b.src, &b.tgt_in, &b.tgt_out})
    bytes.append(static_cast<const char*>(t->data()), t->nbytes());
  return digest_text(bytes);
}

// The kiln binary is read whole to compare the ranks' (tens of MB).
constexpr size_t kMaxBinaryBytes = size_t{1} << 30;

}  // namespace

void start_ranks_together(const std::string& settings, const Task& task, BatchStream& batches,
                          std::map<std::string, Tensor>& tensors) {
  check_ranks_agree("the training settings (flags, recipe and checkpoint resolved)", digest_text(settings));
  check_ranks_agree("the kiln binary (its bytes)",
                    digest_text(read_file("/proc/self/exe", kMaxBinaryBytes, "kiln binary")));
  const TrainEpoch& epoch = batches.epoch();
  check_ranks_agree("the task's data (vocabulary and the epoch's first batch)",
                    std::to_string(task.vocab_size()) + " words, " + std::to_string(epoch.size()) +
                        " batches, the first " + (epoch.size() ? batch_digest(epoch.batch(0)) : "none"));
  for (auto& [name, t] : tensors) collectives().broadcast(t.data(), static_cast<int64_t>(t.nbytes()));
}

}  // namespace kiln::models
