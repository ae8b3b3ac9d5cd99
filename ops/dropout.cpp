#include "ops/dropout.h"

#include "engine/tensor/philox.h"
#include "ops/families.h"
#include "ops/op_helpers.h"

namespace kiln::ops {

Value dropout(Builder& b, Value x, Value key, double rate, int64_t seed) {
  return b.emit1("dropout", {x, key}, {{"rate", rate}, {"seed", seed}});
}

Value dropout(Builder& b, Value x, Value key, Value first_example, int64_t examples, double rate, int64_t seed) {
  return b.emit1("dropout", {x, key, first_example}, {{"rate", rate}, {"seed", seed}, {"examples", examples}});
}

int64_t dropout_elements_per_example(const TensorType& x, const Attrs& attrs) {
  return x.numel() / attrs.get_int("examples");
}

namespace {

std::vector<TensorType> dropout_infer(const std::vector<TensorType>& in, const Attrs& attrs) {
  check_dtype(in[0], kFloat, operand_role(0));
  check_dtype(in[1], {DType::i32}, "key");
  check_rank(in[1], 0, "key");
  const double rate = attrs.get_float("rate");
  if (!(rate >= 0.0 && rate < 1.0))  // also rejects NaN
    throw Error(std::string("rate must be in [0, 1), got ").append(attr_str(rate)));
  const int64_t examples = attrs.get_int("examples");
  if (in.size() == 3) {
    check_dtype(in[2], {DType::i32}, "first_example");
    check_rank(in[2], 0, "first_example");
    if (examples < 1 || in[0].numel() % examples != 0)
      throw Error("examples must be >= 1 and divide x's " + std::to_string(in[0].numel()) + " elements, got " +
                  std::to_string(examples));
  } else if (examples != 0) {
    throw Error("examples is the count of x's examples, for a first_example operand; without one it must be 0");
  }
  return {in[0]};
}

void dropout_reference(const KernelArgs& args) {
  const double rate = args.attrs.get_float("rate");
  const philox::Key key = philox::dropout_key(args.attrs.get_int("seed"));
  const int32_t step = args.in[1]->i32()();
  const uint64_t threshold = philox::dropout_threshold(rate);
  const float scale = philox::dropout_scale(rate);
  const Tensor::F32& x = args.in[0]->f32();
  Tensor::F32& y = args.out[0]->f32();
  // The whole batch's index of element 0 (the first example's first element).
  const uint64_t first = args.in.size() < 3 ? 0
                                            : static_cast<uint64_t>(args.in[2]->i32()()) *
                                                  static_cast<uint64_t>(dropout_elements_per_example(args.in[0]->type(), args.attrs));
  philox::Counter words{};  // one Philox call gives the draws of 4 consecutive elements
  for (size_t i = 0; i < x.size(); ++i) {
    const uint64_t at = first + i;
    if (i == 0 || at % 4 == 0) words = philox::dropout_words(key, step, at / 4);
    y.data()[i] = words[at % 4] >= threshold ? x.data()[i] * scale : 0.0f;
  }
}

// The mask depends only on seed, key and element index, so dropout of dy with the
// same attributes and key applies exactly the forward's mask and scale.
std::vector<Value> dropout_gradient(Builder& b, const Node& node, const std::vector<Value>& dy) {
  std::vector<Value> operands = node.operands;
  operands[0] = dy[0];
  std::vector<Value> dx(node.operands.size());
  dx[0] = b.emit1("dropout", operands, node.attrs);
  return dx;
}

}  // namespace

void register_dropout(OpRegistry& r) {
  r.add(OpDef{
      .name = "dropout",
      .summary = "zeroes elements with probability rate (Philox mask from seed, key and, for a part of a batch, its "
                 "first example), scales the rest by 1/(1-rate)",
      .min_operands = 2,
      .max_operands = 3,
      .attrs = {required_attr("rate", AttrKind::real), optional_attr("seed", int64_t{0}),
                optional_attr("examples", int64_t{0})},
      .infer = dropout_infer,
      .reference = dropout_reference,
      .gradient = dropout_gradient,
      .elementwise = true,
      .random = true,
      .lowering = Lowering::elemental});
}

}  // namespace kiln::ops
