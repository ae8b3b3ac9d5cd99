#include "ops/collective.h"

#include "engine/tensor/collectives.h"
#include "engine/tensor/tensor.h"
#include "ops/families.h"
#include "ops/op_helpers.h"

namespace kiln::ops {

std::vector<Value> allreduce(Builder& b, const std::vector<Value>& xs) { return b.emit("allreduce", xs); }
Value allreduce(Builder& b, Value x) { return b.emit1("allreduce", {x}); }

namespace {

std::vector<TensorType> allreduce_infer(const std::vector<TensorType>& in, const Attrs&) {
  for (size_t i = 0; i < in.size(); ++i) check_dtype(in[i], {DType::f32, DType::i32}, operand_role(i));
  return in;
}

// Blocking, operand by operand: the interpreter runs nodes one at a time.
void allreduce_reference(const KernelArgs& args) {
  for (size_t i = 0; i < args.in.size(); ++i) {
    *args.out[i] = *args.in[i];
    collectives().allreduce(args.out[i]->data(), args.out[i]->numel(), args.out[i]->dtype());
  }
}

// Every rank's loss depends on every rank's x through the sum, so x's gradient
// is the sum of the ranks' result gradients.
std::vector<Value> allreduce_gradient(Builder& b, const Node&, const std::vector<Value>& dy) {
  std::vector<Value> present, dx(dy.size());
  for (Value g : dy)
    if (g.valid()) present.push_back(g);
  if (present.empty()) return dx;
  const std::vector<Value> sums = allreduce(b, present);
  for (size_t i = 0, j = 0; i < dy.size(); ++i)
    if (dy[i].valid()) dx[i] = sums[j++];
  return dx;
}

}  // namespace

void register_collectives(OpRegistry& r) {
  r.add(OpDef{.name = "allreduce",
              .summary = "the sum of each operand over every rank of a data-parallel job (one rank: identity)",
              .min_operands = 1,
              .max_operands = -1,
              .infer = allreduce_infer,
              .reference = allreduce_reference,
              .gradient = allreduce_gradient,
              .collective = true});
}

}  // namespace kiln::ops
