// Converters of the ONNX shape, constant and indexing ops. Shapes are static in
// kiln, so Shape and Size become import-time constants, and every shape, axis
// list and slice bound an op takes as an input must be known at import time.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <numeric>

#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/identity.h"
#include "ops/shape_ops.h"
#include "tools/onnx_import/converters.h"

namespace kiln::onnx {

namespace {

using Node = ::onnx::NodeProto;
using Results = std::vector<Operand>;

int64_t axis_in(const Node& n, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    fail(n, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// An Identity of a graph value is a kiln `identity`, so its output keeps its
// ONNX name (a graph output often is one); of a constant, the constant.
Results identity(ImportContext& c, const Node& n) {
  const Operand& x = c.lookup(n.input(0));
  if (std::holds_alternative<Constant>(x)) return {x};
  return {ops::identity(c.b(), std::get<Value>(x))};
}

Results constant(ImportContext&, const Node& n) {
  using A = ::onnx::AttributeProto;
  if (n.attribute_size() != 1) fail(n, "needs exactly one value attribute");
  const A& a = n.attribute(0);
  if (a.name() == "value" && a.type() == A::TENSOR) return {constant_from_proto(a.t(), node_label(n))};
  if (a.name() == "value_float" && a.type() == A::FLOAT) return {Constant{.dtype = DType::f32, .reals = {a.f()}}};
  if (a.name() == "value_floats" && a.type() == A::FLOATS)
    return {Constant{.dtype = DType::f32, .shape = {a.floats_size()}, .reals = {a.floats().begin(), a.floats().end()}}};
  if (a.name() == "value_int" && a.type() == A::INT) return {Constant::integers({a.i()}, {})};
  if (a.name() == "value_ints" && a.type() == A::INTS)
    return {Constant::integers({a.ints().begin(), a.ints().end()}, {a.ints_size()})};
  fail(n, "attribute " + a.name() + " of type " + A::AttributeType_Name(a.type()) + " is not supported");
}

// A `fill`: folded when small, like any node of constants (fold.h), and an op of
// the graph when large, so a huge one is never made at import.
Results constant_of_shape(ImportContext& c, const Node& n) {
  Constant value{.dtype = DType::f32, .reals = {0.0f}};
  if (const auto* t = c.attr_tensor(n, "value")) value = constant_from_proto(*t, node_label(n));
  if (value.numel() != 1) fail(n, "attribute value must have one element");
  return {fill(c.b(), c.constant_ints(n, 0), value.element(0), node_label(n) + ": attribute value")};
}

// Shape (with opset 15's start and end, clamped as Slice's) and Size are constants.
Results shape(ImportContext& c, const Node& n) {
  const Shape s = c.type(n, 0).shape;
  const auto rank = static_cast<int64_t>(s.size());
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t begin = clamp(c.attr_int(n, "start", 0)), end = std::max(begin, clamp(c.attr_int(n, "end", rank)));
  return {Constant::integers({s.begin() + begin, s.begin() + end}, {end - begin})};
}

Results size(ImportContext& c, const Node& n) { return {Constant::integers({c.type(n, 0).numel()}, {})}; }

// 0 copies x's dim at that position (unless allowzero), -1 takes what is left.
Results reshape_op(ImportContext& c, const Node& n) {
  const Shape in = c.type(n, 0).shape;
  Shape out = c.constant_ints(n, 1);
  const bool allowzero = c.attr_int(n, "allowzero", 0) != 0;
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && !allowzero) {
      if (i >= in.size())
        fail(n, "shape entry " + std::to_string(i) + " is 0, but the input has rank " + std::to_string(in.size()));
      out[i] = in[i];
    }
    if (out[i] == -1) {
      if (inferred >= 0) fail(n, "more than one -1 in the shape " + shape_str(c.constant_ints(n, 1)));
      inferred = static_cast<int64_t>(i);
    } else if (out[i] < 0) {
      fail(n, "negative dim in the shape " + shape_str(c.constant_ints(n, 1)));
    } else if (__builtin_mul_overflow(known, out[i], &known)) {
      fail(n, "the shape " + shape_str(c.constant_ints(n, 1)) + " has too many elements");
    }
  }
  const int64_t total = numel(in);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      fail(n, "cannot reshape " + shape_str(in) + " to " + shape_str(c.constant_ints(n, 1)));
    out[static_cast<size_t>(inferred)] = total / known;
  }
  if (numel(out) != total) fail(n, "cannot reshape " + shape_str(in) + " to " + shape_str(out));
  return {reshape(c, c.value(n, 0), out)};
}

Results flatten(ImportContext& c, const Node& n) {
  const Shape in = c.type(n, 0).shape;
  const auto rank = static_cast<int64_t>(in.size());
  // axis is in [-rank, rank]: rank + 1 places to split, a negative one counted from the end
  const int64_t given = c.attr_int(n, "axis", 1);
  if (given < -rank || given > rank)
    fail(n, "axis " + std::to_string(given) + " is out of range for rank " + std::to_string(rank));
  const auto axis = static_cast<size_t>(given < 0 ? given + rank : given);
  const int64_t outer = dims_product(in, 0, axis);
  return {reshape(c, c.value(n, 0), {outer, numel(in) / std::max<int64_t>(outer, 1)})};
}

// Axes from the second input (opset 13 on) or the attribute.
Results unsqueeze(ImportContext& c, const Node& n) {
  const Shape in = c.type(n, 0).shape;
  std::vector<int64_t> axes = c.ints_from_input_or_attr(n, 1, "axes", {});
  const auto rank = static_cast<int64_t>(in.size() + axes.size());
  for (int64_t& a : axes) a = axis_in(n, a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) fail(n, "an axis is repeated");
  Shape out;
  auto next = in.begin();
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(std::binary_search(axes.begin(), axes.end(), i) ? 1 : *next++);
  return {reshape(c, c.value(n, 0), out)};
}

Results squeeze(ImportContext& c, const Node& n) {
  const Shape in = c.type(n, 0).shape;
  const auto rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = c.ints_from_input_or_attr(n, 1, "axes", {});
  for (int64_t& a : axes) {
    a = axis_in(n, a, rank);
    if (in[static_cast<size_t>(a)] != 1)
      fail(n, "cannot squeeze axis " + std::to_string(a) + " of shape " + shape_str(in));
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    const bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!(axes.empty() ? in[static_cast<size_t>(i)] == 1 : listed)) out.push_back(in[static_cast<size_t>(i)]);
  }
  return {reshape(c, c.value(n, 0), out)};
}

Results transpose(ImportContext& c, const Node& n) {
  const auto rank = static_cast<int64_t>(c.type(n, 0).shape.size());
  std::vector<int64_t> reversed(static_cast<size_t>(rank));
  std::iota(reversed.rbegin(), reversed.rend(), int64_t{0});
  const std::vector<int64_t> perm = c.attr_ints(n, "perm", reversed);
  return {ops::transpose(c.b(), c.value(n, 0), perm)};
}

// A 1-D constant's elements [begin, end): shape arithmetic may be empty (the
// prefix of a shape before axis 0), which kiln's tensors never are.
Constant elements_of(const Constant& k, int64_t begin, int64_t end) {
  Constant out{.dtype = k.dtype, .shape = {end - begin}};
  if (k.dtype == DType::f32) out.reals.assign(k.reals.begin() + begin, k.reals.begin() + end);
  else out.ints.assign(k.ints.begin() + begin, k.ints.begin() + end);
  return out;
}

bool all_constant_vectors(const ImportContext& c, const Node& n) {
  for (int i = 0; i < n.input_size(); ++i)
    if (!c.is_constant(n, i) || c.constant(n, i).shape.size() != 1) return false;
  return n.input_size() > 0;
}

Results concat(ImportContext& c, const Node& n) {
  if (!c.attr(n, "axis")) fail(n, "attribute 'axis' is missing");
  if (all_constant_vectors(c, n)) {  // shape arithmetic: joined here, empty parts too
    Constant out = elements_of(c.constant(n, 0), 0, 0);
    for (int i = 0; i < n.input_size(); ++i) {
      const Constant& k = c.constant(n, i);
      if (k.dtype != out.dtype) fail(n, "inputs of different dtypes");
      out.reals.insert(out.reals.end(), k.reals.begin(), k.reals.end());
      out.ints.insert(out.ints.end(), k.ints.begin(), k.ints.end());
      out.shape[0] += k.shape[0];
    }
    return {out};
  }
  std::vector<Value> xs;
  for (int i = 0; i < n.input_size(); ++i) xs.push_back(c.value(n, i));
  if (xs.size() == 1) return {xs[0]};
  return {ops::concat(c.b(), xs, c.attr_int(n, "axis", 0))};
}

// Bounds from inputs (opset 10 on) or attributes, normalized here as ONNX says
// (negative counts from the end, then clamped to [0, dim]); kiln's slice has step 1.
Results slice(ImportContext& c, const Node& n) {
  const Shape in = c.type(n, 0).shape;
  const auto rank = static_cast<int64_t>(in.size());
  const bool from_inputs = c.opset() >= 10;
  std::vector<int64_t> starts = from_inputs ? c.constant_ints(n, 1) : c.attr_ints(n, "starts", {});
  std::vector<int64_t> ends = from_inputs ? c.constant_ints(n, 2) : c.attr_ints(n, "ends", {});
  std::vector<int64_t> default_axes(starts.size());
  std::iota(default_axes.begin(), default_axes.end(), int64_t{0});
  std::vector<int64_t> axes = !from_inputs       ? c.attr_ints(n, "axes", default_axes)
                              : c.has_input(n, 3) ? c.constant_ints(n, 3)
                                                  : default_axes;
  const std::vector<int64_t> steps =
      from_inputs && c.has_input(n, 4) ? c.constant_ints(n, 4) : std::vector<int64_t>(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(n, "starts, ends, axes and steps differ in length");
  for (size_t i = 0; i < starts.size(); ++i) {
    if (steps[i] != 1) fail(n, "step " + std::to_string(steps[i]) + ": kiln's slice takes step 1 only");
    axes[i] = axis_in(n, axes[i], rank);
    const int64_t dim = in[static_cast<size_t>(axes[i])];
    auto clamp = [dim](int64_t v) { return std::clamp(v < 0 ? v + dim : v, int64_t{0}, dim); };
    starts[i] = clamp(starts[i]);
    ends[i] = std::max(starts[i], clamp(ends[i]));
  }
  if (rank == 1 && starts.size() == 1 && c.is_constant(n, 0))  // shape arithmetic, which may be empty
    return {elements_of(c.constant(n, 0), starts[0], ends[0])};
  return {ops::slice(c.b(), c.value(n, 0), axes, starts, ends)};
}

// np.take(data, indices, axis); indices may be negative (from the end).
Results gather(ImportContext& c, const Node& n) {
  const Shape in = c.type(n, 0).shape;
  const int64_t axis = axis_in(n, c.attr_int(n, "axis", 0), static_cast<int64_t>(in.size()));
  Value indices;
  if (c.is_constant(n, 1)) {
    Constant idx = c.constant(n, 1);
    if (idx.dtype != DType::i32) fail(n, "indices must be integers");
    const int64_t dim = in[static_cast<size_t>(axis)];
    for (int64_t& i : idx.ints) {
      if (i < -dim || i >= dim)
        fail(n, "index " + std::to_string(i) + " is out of range for a dim of " + std::to_string(dim));
      if (i < 0) i += dim;
    }
    indices = c.materialize(idx, n.input(1));
  } else {  // indices in [-dim, 0) count from the end, as ONNX allows: idx < 0 ? idx + dim : idx
    indices = c.value(n, 1);
    Builder& b = c.b();
    const DType dtype = b.type(indices).dtype;
    const Value dim = ops::fill(b, {}, static_cast<double>(in[static_cast<size_t>(axis)]), dtype);
    const Value negative = ops::less(b, indices, ops::fill(b, {}, 0.0, dtype));
    indices = ops::select(b, negative, ops::add(b, indices, dim), indices);
  }
  return {ops::gather(c.b(), c.value(n, 0), indices, axis)};
}

// Expand broadcasts both ways: the result has the broadcast of x's shape and `shape`.
Results expand(ImportContext& c, const Node& n) {
  const Shape in = c.type(n, 0).shape;
  const Shape out = broadcast_shapes(in, c.constant_ints(n, 1));
  const Value x = c.value(n, 0);
  if (out == in) return {x};
  return {ops::broadcast(c.b(), x, out)};
}

}  // namespace

std::vector<OpConverter> shape_converters() {
  return {
      {"Identity", identity},
      {"Constant", constant, {"value", "value_float", "value_floats", "value_int", "value_ints"}},
      {"ConstantOfShape", constant_of_shape, {"value"}},
      {"Shape", shape, {"start", "end"}},
      {"Size", size},
      {"Reshape", reshape_op, {"allowzero"}},
      {"Flatten", flatten, {"axis"}},
      {"Unsqueeze", unsqueeze, {"axes"}},
      {"Squeeze", squeeze, {"axes"}},
      {"Transpose", transpose, {"perm"}},
      {"Concat", concat, {"axis"}},
      {"Slice", slice, {"starts", "ends", "axes"}},
      {"Gather", gather, {"axis"}},
      {"Expand", expand},
  };
}

}  // namespace kiln::onnx
