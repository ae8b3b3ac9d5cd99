#include "ops/loss.h"

#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xview.hpp>

#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/families.h"
#include "ops/normalization.h"
#include "ops/op_helpers.h"
#include "ops/reduction.h"
#include "ops/shape_ops.h"

namespace kiln::ops {

Value cross_entropy(Builder& b, Value logits, Value labels, double smoothing, int64_t ignore_index) {
  return b.emit1("cross_entropy", {logits, labels}, {{"smoothing", smoothing}, {"ignore_index", ignore_index}});
}

namespace {

std::vector<TensorType> cross_entropy_infer(const std::vector<TensorType>& in, const Attrs& attrs) {
  const TensorType &logits = in[0], &labels = in[1];
  check_dtype(logits, kFloat, "logits");
  check_min_rank(logits, 1, "logits");
  check_dtype(labels, {DType::i32}, "labels");
  if (logits.shape.back() < 1) throw Error("logits must have at least one class in the last axis");
  const Shape positions(logits.shape.begin(), logits.shape.end() - 1);
  if (labels.shape != positions)
    throw Error(std::string("labels must have the logits' shape without the last axis, ")
                    .append(shape_str(positions))
                    .append(", got ")
                    .append(shape_str(labels.shape)));
  const double smoothing = attrs.get_float("smoothing");
  if (!(smoothing >= 0.0 && smoothing <= 1.0))  // also rejects NaN
    throw Error(std::string("smoothing must be in [0, 1], got ").append(attr_str(smoothing)));
  return {{DType::f32, {}}};
}

void cross_entropy_reference(const KernelArgs& args) {
  const double smoothing = args.attrs.get_float("smoothing");
  const int64_t ignore_index = args.attrs.get_int("ignore_index");
  const Tensor::F32& logits = args.in[0]->f32();
  const Tensor::I32& labels = args.in[1]->i32();
  const size_t classes = logits.shape().back();
  const size_t positions = labels.size();
  // Stable log_softmax per row: shift by the row max before exp. The keep_dims
  // reductions are evaluated into arrays first: xtensor 0.24 broadcasts a lazy
  // keep_dims reducer wrongly inside a larger expression.
  Tensor::F32 rows = logits;
  rows.reshape({positions, classes});
  const Tensor::F32 row_max = xt::amax(rows, {1}, xt::keep_dims);
  const Tensor::F32 shifted = rows - row_max;
  // Sums in double: an f32 accumulator drops terms below 2^-24 of its total.
  const xt::xarray<double> sum_exp = xt::sum<double>(xt::exp(shifted), {1}, xt::keep_dims);
  const Tensor::F32 log_sum_exp = xt::cast<float>(xt::log(sum_exp));
  const Tensor::F32 logp = shifted - log_sum_exp;
  const xt::xarray<double> logp_sum = xt::sum<double>(logp, {1});
  double total = 0.0;
  int64_t kept = 0;
  for (size_t p = 0; p < positions; ++p) {
    const int32_t label = labels.data()[p];
    if (label == ignore_index) continue;
    if (label < 0 || static_cast<size_t>(label) >= classes) {
      throw Error(std::string("cross_entropy: label ")
                      .append(std::to_string(label))
                      .append(" (at flat position ")
                      .append(std::to_string(p))
                      .append(") is out of range [0, ")
                      .append(std::to_string(classes))
                      .append(") and is not ignore_index ")
                      .append(std::to_string(ignore_index)));
    }
    total += -(1.0 - smoothing) * logp(p, static_cast<size_t>(label)) -
             smoothing / static_cast<double>(classes) * logp_sum(p);
    ++kept;
  }
  args.out[0]->f32()() = kept ? static_cast<float>(total / static_cast<double>(kept)) : 0.0f;
}

// d logits = dy * (softmax(logits) - target) * keep / count per position, with
// target = (1 - s) * onehot(label) + s / V, keep = 1 where label != ignore_index
// (else 0) and count = max(sum(keep), 1), the forward's divisor. Labels outside
// [0, V) need no care here: the forward raises an error first.
std::vector<Value> cross_entropy_gradient(Builder& b, const Node& node, const std::vector<Value>& dy) {
  const Value logits = node.operands[0], labels = node.operands[1];
  const Shape& shape = b.type(logits).shape;
  const auto classes = static_cast<double>(shape.back());
  const double smoothing = node.attrs.get_float("smoothing");
  const auto ignore_index = static_cast<double>(node.attrs.get_int("ignore_index"));

  Shape column = b.type(labels).shape;  // labels as [..., 1], to broadcast over the classes
  column.push_back(1);
  const Value label = reshape(b, labels, column);
  const Value class_index = iota(b, shape, static_cast<int64_t>(shape.size()) - 1);
  Value target = cast(b, equal(b, class_index, label), DType::f32);
  if (smoothing != 0.0) target = add(b, mul(b, target, fill(b, {}, 1.0 - smoothing)), fill(b, {}, smoothing / classes));
  const Value keep = cast(b, not_equal(b, label, fill(b, {}, ignore_index, DType::i32)), DType::f32);
  const Value count = maximum(b, sum(b, keep), fill(b, {}, 1.0));
  const Value per_position = mul(b, sub(b, softmax(b, logits), target), keep);
  return {mul(b, per_position, div(b, dy[0], count)), Value{}};
}

}  // namespace

void register_loss(OpRegistry& r) {
  r.add(OpDef{
      .name = "cross_entropy",
      .summary = "mean softmax cross-entropy of logits [...,V] and i32 labels, with label smoothing and ignore_index",
      .min_operands = 2,
      .max_operands = 2,
      .attrs = {optional_attr("smoothing", 0.0), optional_attr("ignore_index", int64_t{-100})},
      .infer = cross_entropy_infer,
      .reference = cross_entropy_reference,
      .gradient = cross_entropy_gradient,
      .lowering = Lowering::fuses_producers});
}

}  // namespace kiln::ops
