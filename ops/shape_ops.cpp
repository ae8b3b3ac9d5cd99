#include "ops/shape_ops.h"

#include <algorithm>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xstrided_view.hpp>

#include "ops/constant.h"
#include "ops/families.h"
#include "ops/grad_util.h"
#include "ops/op_helpers.h"

namespace kiln::ops {

Value reshape(Builder& b, Value x, Shape shape) { return b.emit1("reshape", {x}, {{"shape", std::move(shape)}}); }
Value transpose(Builder& b, Value x, std::vector<int64_t> perm) {
  return b.emit1("transpose", {x}, {{"perm", std::move(perm)}});
}
Value broadcast(Builder& b, Value x, Shape shape) { return b.emit1("broadcast", {x}, {{"shape", std::move(shape)}}); }
Value slice(Builder& b, Value x, std::vector<int64_t> axes, std::vector<int64_t> starts, std::vector<int64_t> ends) {
  return b.emit1("slice", {x}, {{"axes", std::move(axes)}, {"starts", std::move(starts)}, {"ends", std::move(ends)}});
}
Value concat(Builder& b, const std::vector<Value>& xs, int64_t axis) { return b.emit1("concat", xs, {{"axis", axis}}); }

namespace {

// Calls f(x, out) with x the operand's array and out the result tensor, for whatever dtype x has.
template <class F>
void with_array(const KernelArgs& a, F&& f) {
  dispatch_dtype(a.in[0]->dtype(), [&](auto t) { f(a.in[0]->as<decltype(t)>(), *a.out[0]); });
}

// ---- reshape ----

Shape reshape_result(const TensorType& x, const Shape& target) {
  int wildcards = 0;
  Shape known_dims;
  for (int64_t d : target) {
    if (d == -1) {
      ++wildcards;
    } else if (d < 0) {
      throw Error(std::string("shape ").append(shape_str(target)).append(" may only use -1 as a negative dim"));
    } else {
      known_dims.push_back(d);
    }
  }
  const int64_t known = numel(known_dims);
  if (wildcards > 1) throw Error(std::string("shape ").append(shape_str(target)).append(" has more than one -1"));
  Shape out = target;
  if (wildcards == 1) {
    if (known == 0 || x.numel() % known != 0)
      throw Error(std::string("cannot reshape ")
                      .append(std::to_string(x.numel()))
                      .append(" elements into shape ")
                      .append(shape_str(target)));
    std::replace(out.begin(), out.end(), int64_t{-1}, x.numel() / known);
  } else if (known != x.numel()) {
    throw Error(std::string("cannot reshape ")
                    .append(std::to_string(x.numel()))
                    .append(" elements into shape ")
                    .append(shape_str(target))
                    .append(" (")
                    .append(std::to_string(known))
                    .append(" elements)"));
  }
  return out;
}

OpDef reshape_def() {
  return OpDef{.name = "reshape",
               .summary = "same elements (row-major) under a new shape; one dim may be -1",
               .min_operands = 1,
               .max_operands = 1,
               .attrs = {required_attr("shape", AttrKind::ints)},
               .infer =
                   [](const std::vector<TensorType>& in, const Attrs& attrs) {
                     return std::vector<TensorType>{{in[0].dtype, reshape_result(in[0], attrs.get_ints("shape"))}};
                   },
               .reference =
                   [](const KernelArgs& a) {
                     const auto shape = xt_shape(a.out[0]->shape());  // -1 already resolved by inference
                     with_array(a, [&](const auto& x, Tensor& out) { store(out, xt::reshape_view(x, shape)); });
                   },
               .gradient =
                   [](Builder& b, const Node& node, const std::vector<Value>& dy) {
                     return std::vector<Value>{reshape(b, dy[0], b.type(node.operands[0]).shape)};
                   },
               .moves_elements = true,
               .lowering = Lowering::elemental};
}

// ---- transpose ----

void check_permutation(const std::vector<int64_t>& perm, int64_t rank) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  bool ok = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    ok = ok && p >= 0 && p < rank && !seen[static_cast<size_t>(p)];
    if (ok) seen[static_cast<size_t>(p)] = true;
  }
  if (!ok) {
    throw Error(std::string("perm ")
                    .append(shape_str(perm))
                    .append(" is not a permutation of the operand's ")
                    .append(std::to_string(rank))
                    .append(" axes"));
  }
}

OpDef transpose_def() {
  return OpDef{.name = "transpose",
               .summary = "permutes axes: result dim i is operand dim perm[i]",
               .min_operands = 1,
               .max_operands = 1,
               .attrs = {required_attr("perm", AttrKind::ints)},
               .infer =
                   [](const std::vector<TensorType>& in, const Attrs& attrs) {
                     const auto& perm = attrs.get_ints("perm");
                     check_permutation(perm, in[0].rank());
                     Shape out;
                     for (int64_t p : perm) out.push_back(in[0].shape[static_cast<size_t>(p)]);
                     return std::vector<TensorType>{{in[0].dtype, out}};
                   },
               .reference =
                   [](const KernelArgs& a) {
                     const auto perm = xt_axes(a.attrs.get_ints("perm"));
                     with_array(a, [&](const auto& x, Tensor& out) { store(out, xt::transpose(x, perm)); });
                   },
               .gradient =
                   [](Builder& b, const Node& node, const std::vector<Value>& dy) {
                     const auto& perm = node.attrs.get_ints("perm");
                     std::vector<int64_t> inverse(perm.size());
                     for (size_t i = 0; i < perm.size(); ++i)
                       inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
                     return std::vector<Value>{transpose(b, dy[0], std::move(inverse))};
                   },
               .moves_elements = true,
               .lowering = Lowering::elemental};
}

// ---- broadcast ----

OpDef broadcast_def() {
  return OpDef{
      .name = "broadcast",
      .summary = "np.broadcast_to(x, shape)",
      .min_operands = 1,
      .max_operands = 1,
      .attrs = {required_attr("shape", AttrKind::ints)},
      .infer =
          [](const std::vector<TensorType>& in, const Attrs& attrs) {
            const Shape& target = attrs.get_ints("shape");
            check_dims_nonnegative(target, "shape");
            const Shape& x = in[0].shape;
            bool ok = x.size() <= target.size();
            for (size_t i = 0; ok && i < x.size(); ++i) {
              const int64_t dx = x[x.size() - 1 - i];
              ok = dx == 1 || dx == target[target.size() - 1 - i];
            }
            if (!ok)
              throw Error(
                  std::string("cannot broadcast shape ").append(shape_str(x)).append(" to ").append(shape_str(target)));
            return std::vector<TensorType>{{in[0].dtype, target}};
          },
      .reference =
          [](const KernelArgs& a) {
            const auto shape = xt_shape(a.attrs.get_ints("shape"));
            with_array(a, [&](const auto& x, Tensor& out) { store(out, xt::broadcast(x, shape)); });
          },
      .gradient =
          [](Builder& b, const Node& node, const std::vector<Value>& dy) {
            const Shape& shape = b.type(node.operands[0]).shape;
            return std::vector<Value>{sum_to_shape(b, dy[0], shape)};
          },
      .moves_elements = true,
      .lowering = Lowering::elemental};
}

// ---- slice ----

// The [start, end) range of every axis of `shape` that the slice attributes select.
std::vector<std::pair<int64_t, int64_t>> slice_ranges(const Shape& shape, const Attrs& attrs) {
  const auto& axes = attrs.get_ints("axes");
  const auto& starts = attrs.get_ints("starts");
  const auto& ends = attrs.get_ints("ends");
  if (axes.size() != starts.size() || axes.size() != ends.size()) {
    throw Error(std::string("axes, starts and ends must have equal lengths, got ")
                    .append(std::to_string(axes.size()))
                    .append(", ")
                    .append(std::to_string(starts.size()))
                    .append(" and ")
                    .append(std::to_string(ends.size())));
  }
  const int64_t rank = static_cast<int64_t>(shape.size());
  normalize_axes(axes, rank, false);  // rejects out-of-range and repeated axes
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t dim : shape) ranges.emplace_back(0, dim);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = normalize_axis(axes[i], rank);
    const int64_t dim = shape[static_cast<size_t>(axis)];
    const auto clamp = [dim](int64_t v) { return std::clamp(v < 0 ? v + dim : v, int64_t{0}, dim); };
    const int64_t start = clamp(starts[i]), end = clamp(ends[i]);
    if (end <= start) {
      throw Error(std::string("slice [")
                      .append(std::to_string(starts[i]))
                      .append(":")
                      .append(std::to_string(ends[i]))
                      .append("] of axis ")
                      .append(std::to_string(axis))
                      .append(" (dim ")
                      .append(std::to_string(dim))
                      .append(") is empty"));
    }
    ranges[static_cast<size_t>(axis)] = {start, end};
  }
  return ranges;
}

// dx is dy put back in place with zeros around it: for each sliced axis, dy is
// concatenated between zero blocks (fill) of the cut-off lengths. Built from concat
// and fill rather than a new pad op: both exist and concat's rule is slice, so
// grad of grad needs nothing new, and each step is a plain elemental op for fusion.
std::vector<Value> slice_gradient(Builder& b, const Node& node, const std::vector<Value>& dy) {
  const Shape& shape = b.type(node.operands[0]).shape;
  const auto ranges = slice_ranges(shape, node.attrs);
  Value dx = dy[0];
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    const auto [start, end] = ranges[axis];
    const int64_t dim = shape[axis];
    if (start == 0 && end == dim) continue;
    Shape block = b.type(dx).shape;
    std::vector<Value> parts;
    if (start > 0) {
      block[axis] = start;
      parts.push_back(fill(b, block, 0.0, b.type(dx).dtype));
    }
    parts.push_back(dx);
    if (end < dim) {
      block[axis] = dim - end;
      parts.push_back(fill(b, block, 0.0, b.type(dx).dtype));
    }
    dx = concat(b, parts, static_cast<int64_t>(axis));
  }
  return {dx};
}

OpDef slice_def() {
  return OpDef{.name = "slice",
               .summary = "x[starts:ends] along axes (step 1, Python bounds); empty results are rejected",
               .min_operands = 1,
               .max_operands = 1,
               .attrs = {required_attr("axes", AttrKind::ints), required_attr("starts", AttrKind::ints),
                         required_attr("ends", AttrKind::ints)},
               .infer =
                   [](const std::vector<TensorType>& in, const Attrs& attrs) {
                     Shape out;
                     for (const auto& [start, end] : slice_ranges(in[0].shape, attrs)) out.push_back(end - start);
                     return std::vector<TensorType>{{in[0].dtype, out}};
                   },
               .reference =
                   [](const KernelArgs& a) {
                     xt::xstrided_slice_vector sv;
                     for (const auto& [start, end] : slice_ranges(a.in[0]->shape(), a.attrs))
                       sv.push_back(xt::range(start, end));
                     with_array(a, [&](const auto& x, Tensor& out) { store(out, xt::strided_view(x, sv)); });
                   },
               .gradient = slice_gradient,
               .moves_elements = true,
               .lowering = Lowering::elemental};
}

// ---- concat ----

// Each operand's gradient is its stretch of dy along the axis (zeros for an
// operand of length 0 there, which slice cannot produce).
std::vector<Value> concat_gradient(Builder& b, const Node& node, const std::vector<Value>& dy) {
  const int64_t axis = normalize_axis(node.attrs.get_int("axis"), b.type(dy[0]).rank());
  const int64_t total = b.type(dy[0]).shape[static_cast<size_t>(axis)];
  std::vector<Value> dxs;
  int64_t offset = 0;
  for (Value x : node.operands) {
    const TensorType& t = b.type(x);
    const int64_t len = t.shape[static_cast<size_t>(axis)];
    if (len == total)
      dxs.push_back(dy[0]);
    else if (len == 0)
      dxs.push_back(fill(b, t.shape, 0.0, t.dtype));
    else
      dxs.push_back(slice(b, dy[0], {axis}, {offset}, {offset + len}));
    offset += len;
  }
  return dxs;
}

OpDef concat_def() {
  return OpDef{.name = "concat",
               .summary = "np.concatenate(operands, axis)",
               .min_operands = 1,
               .max_operands = -1,
               .attrs = {required_attr("axis", AttrKind::integer)},
               .infer =
                   [](const std::vector<TensorType>& in, const Attrs& attrs) {
                     check_min_rank(in[0], 1, operand_role(0));
                     const int64_t axis = normalize_axis(attrs.get_int("axis"), in[0].rank());
                     const auto outside_axis = [axis](Shape s) {  // the shape with the concat axis blanked out
                       if (static_cast<int64_t>(s.size()) > axis) s[static_cast<size_t>(axis)] = 0;
                       return s;
                     };
                     const Shape common = outside_axis(in[0].shape);
                     Shape out = common;
                     for (size_t i = 0; i < in.size(); ++i) {
                       check_same_dtype(in[0], in[i]);
                       if (outside_axis(in[i].shape) != common) {
                         throw Error(operand_role(i)
                                         .append(" has shape ")
                                         .append(shape_str(in[i].shape))
                                         .append(", which differs from operand 0's ")
                                         .append(shape_str(in[0].shape))
                                         .append(" outside axis ")
                                         .append(std::to_string(axis)));
                       }
                       int64_t& len = out[static_cast<size_t>(axis)];
                       if (__builtin_add_overflow(len, in[i].shape[static_cast<size_t>(axis)], &len))
                         throw Error("the concatenated length along axis " + std::to_string(axis) + " overflows int64");
                     }
                     numel(out);  // throws if the element count overflows
                     return std::vector<TensorType>{{in[0].dtype, out}};
                   },
               .reference =
                   [](const KernelArgs& a) {
                     const int64_t rank = a.out[0]->type().rank();
                     const auto axis = static_cast<size_t>(normalize_axis(a.attrs.get_int("axis"), rank));
                     dispatch_dtype(a.out[0]->dtype(), [&](auto t) {
                       auto& out = a.out[0]->as<decltype(t)>();
                       xt::xstrided_slice_vector sv(static_cast<size_t>(rank), xt::all());
                       int64_t offset = 0;
                       for (const Tensor* x : a.in) {
                         const int64_t len = x->shape()[axis];
                         sv[axis] = xt::range(offset, offset + len);
                         xt::noalias(xt::strided_view(out, sv)) = x->as<decltype(t)>();
                         offset += len;
                       }
                     });
                   },
               .gradient = concat_gradient,
               .lowering = Lowering::elemental};
}

}  // namespace

void register_shape_ops(OpRegistry& r) {
  r.add(reshape_def());
  r.add(transpose_def());
  r.add(broadcast_def());
  r.add(slice_def());
  r.add(concat_def());
}

}  // namespace kiln::ops
