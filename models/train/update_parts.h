#pragma once
// An update's batch cut into parts by rows. --update-freq N and the ranks of a
// data-parallel job both train on parts of one batch of batch-tokens x N x
// ranks tokens: every part has ceil(rows / parts) rows (filler rows, which
// hold no target token, complete the last ones), rank r trains on parts
// r*N .. r*N+N-1, and each part's gradient weighs its share of the whole
// batch's target tokens. So however the batch is cut, the update is the whole
// batch's (models/transformer/transformer.h: dropout keyed by the part's first
// row draws the whole batch's masks).
#include <cstdint>
#include <vector>

#include "models/tasks/task.h"

namespace kiln::models {

struct UpdatePart {
  Batch batch;
  int64_t first_example = 0;  // its first row in the whole batch
  double weight = 0;          // its target tokens / the whole batch's
};

// Parts first .. first+count-1 of `parts` parts of `whole`. Filler rows get `bos`
// as their first source and target-input token and `pad` elsewhere, as the
// batcher's do (models/tasks/batching.h).
std::vector<UpdatePart> cut_update(const Batch& whole, int64_t parts, int64_t first, int64_t count, int32_t pad,
                                   int32_t bos);

}  // namespace kiln::models
