#pragma once
// Training batches as a file another trainer can read (tools/bench/'s PyTorch
// peer trains on exactly the batches kiln does): JSON Lines, one batch a line,
//   {"src": [[ids...], ...], "tgt_in": [[...], ...], "tgt_out": [[...], ...], "rows": R}
// the i32 tensors of models/tasks/task.h's Batch as nested lists of subword ids
// (padded, filler rows included; `rows` real examples first).
#include <string>
#include <vector>

#include "models/tasks/task.h"

namespace kiln::models {

// The batches as the file's text.
std::string batch_file_text(const std::vector<Batch>& batches);
// Writes the batches atomically (the file is whole or untouched).
void write_batch_file(const std::string& path, const std::vector<Batch>& batches);

// kiln::Error naming the file and line for anything that is not such a batch.
// `pad_id` counts each batch's tokens.
std::vector<Batch> read_batch_file(const std::string& path, int32_t pad_id);

}  // namespace kiln::models
