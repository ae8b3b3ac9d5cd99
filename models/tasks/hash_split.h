#pragma once
// A deterministic train/dev/test split by a hash of a key (the German side of a pair),
// so every pair with the same key lands in the same split, whatever else the data holds.
#include <cstdint>
#include <string_view>

#include "engine/fnv1a.h"
#include "models/tasks/task.h"

namespace kiln::models {

// fnv1a_64(key) % 1000 below dev_permille: dev; below dev_permille + test_permille: test; else train.
Split split_of(std::string_view key, int64_t dev_permille, int64_t test_permille);

}  // namespace kiln::models
