#include "models/train/update_parts.h"

#include <algorithm>
#include <xtensor/xview.hpp>

#include "engine/ir/error.h"

namespace kiln::models {
namespace {

// Rows [from, to) of `t` as `rows` rows; those past `to` are `pad` but for a `bos` at position 0.
Tensor rows_of(const Tensor& t, int64_t from, int64_t to, int64_t rows, int32_t pad, int32_t bos) {
  const Tensor::I32& all = t.i32();
  const auto width = all.shape()[1];
  Tensor::I32 part = xt::full_like(Tensor::I32::from_shape({static_cast<size_t>(rows), width}), pad);
  const auto real = static_cast<size_t>(std::max<int64_t>(0, to - from));
  if (real > 0)
    xt::view(part, xt::range(0, real), xt::all()) =
        xt::view(all, xt::range(static_cast<size_t>(from), static_cast<size_t>(from) + real), xt::all());
  for (size_t r = real; r < static_cast<size_t>(rows); ++r) part(r, 0) = bos;
  return Tensor(std::move(part));
}

int64_t tokens_of(const Tensor& tgt_out, int32_t pad) {
  int64_t n = 0;
  for (int32_t id : tgt_out.i32()) n += id != pad;
  return n;
}

}  // namespace

std::vector<UpdatePart> cut_update(const Batch& whole, int64_t parts, int64_t first, int64_t count, int32_t pad,
                                   int32_t bos) {
  if (parts < 1 || first < 0 || count < 1 || first + count > parts)
    throw Error("cut_update: parts " + std::to_string(first) + ".." + std::to_string(first + count - 1) + " of " +
                std::to_string(parts));
  const int64_t rows = whole.src.shape().at(0);
  const int64_t per_part = (rows + parts - 1) / parts;
  std::vector<UpdatePart> out;
  for (int64_t p = first; p < first + count; ++p) {
    const int64_t from = std::min(rows, p * per_part), to = std::min(rows, from + per_part);
    UpdatePart part;
    part.first_example = p * per_part;
    part.batch.src = rows_of(whole.src, from, to, per_part, pad, bos);
    part.batch.tgt_in = rows_of(whole.tgt_in, from, to, per_part, pad, bos);
    part.batch.tgt_out = rows_of(whole.tgt_out, from, to, per_part, pad, pad);
    part.batch.rows = std::clamp<int64_t>(whole.rows - from, 0, to - from);
    part.batch.tgt_tokens = tokens_of(part.batch.tgt_out, pad);
    part.batch.src_tokens = tokens_of(rows_of(whole.src, from, to, to - from, pad, bos), pad);
    part.weight = static_cast<double>(part.batch.tgt_tokens) / static_cast<double>(std::max<int64_t>(whole.tgt_tokens, 1));
    out.push_back(std::move(part));
  }
  return out;
}

}  // namespace kiln::models
