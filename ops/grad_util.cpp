#include "ops/grad_util.h"

namespace kiln::ops {

Value sum_to_shape(Builder& b, Value g, const Shape& shape) {
  const Shape& from = b.type(g).shape;
  if (from == shape) return g;
  const size_t lead = from.size() - shape.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && from[i] != 1)) axes.push_back(static_cast<int64_t>(i));
  Value s = axes.empty() ? g : b.emit1("sum", {g}, {{"axes", axes}, {"keepdims", true}});
  return b.type(s).shape == shape ? s : b.emit1("reshape", {s}, {{"shape", shape}});
}

}  // namespace kiln::ops
