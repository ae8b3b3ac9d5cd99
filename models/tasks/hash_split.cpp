#include "models/tasks/hash_split.h"

namespace kiln::models {

Split split_of(std::string_view key, int64_t dev_permille, int64_t test_permille) {
  const auto bucket = static_cast<int64_t>(fnv1a_64(key) % 1000);
  if (bucket < dev_permille) return Split::dev;
  if (bucket < dev_permille + test_permille) return Split::test;
  return Split::train;
}

}  // namespace kiln::models
