#include "ops/dropout.h"

#include "engine/tensor/philox.h"
#include "ops/families.h"
#include "ops/op_helpers.h"

namespace kiln::ops {

Value dropout(Builder& b, Value x, Value key, double rate, int64_t seed) {
  return b.emit1("dropout", {x, key}, {{"rate", rate}, {"seed", seed}});
}

namespace {

std::vector<TensorType> dropout_infer(const std::vector<TensorType>& in, const Attrs& attrs) {
  check_dtype(in[0], kFloat, operand_role(0));
  check_dtype(in[1], {DType::i32}, "key");
  check_rank(in[1], 0, "key");
  const double rate = attrs.get_float("rate");
  if (!(rate >= 0.0 && rate < 1.0))  // also rejects NaN
    throw Error(std::string("rate must be in [0, 1), got ").append(attr_str(rate)));
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
  philox::Counter words{};
  for (size_t i = 0; i < x.size(); ++i) {
    if (i % 4 == 0) words = philox::dropout_words(key, step, i / 4);
    y.data()[i] = words[i % 4] >= threshold ? x.data()[i] * scale : 0.0f;
  }
}

// The mask depends only on seed, key and element index, so dropout of dy with the
// same attributes and key applies exactly the forward's mask and scale.
std::vector<Value> dropout_gradient(Builder& b, const Node& node, const std::vector<Value>& dy) {
  const Value key = node.operands[1];
  return {dropout(b, dy[0], key, node.attrs.get_float("rate"), node.attrs.get_int("seed")), Value{}};
}

}  // namespace

void register_dropout(OpRegistry& r) {
  r.add(OpDef{
      .name = "dropout",
      .summary = "zeroes elements with probability rate (Philox mask from seed and key), scales the rest by 1/(1-rate)",
      .min_operands = 2,
      .max_operands = 2,
      .attrs = {required_attr("rate", AttrKind::real), optional_attr("seed", int64_t{0})},
      .infer = dropout_infer,
      .reference = dropout_reference,
      .gradient = dropout_gradient});
}

}  // namespace kiln::ops
