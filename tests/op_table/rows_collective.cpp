// The allreduce row. With one rank (the test process) it is the identity, and
// the JIT runs it as the program's collective (copy into the results, start,
// wait) rather than as a kernel: this row checks that path against the
// interpreter's reference kernel. tests/mpi runs it on two ranks.
#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {


std::vector<Sample> allreduce_samples(Rng& rng) {
  std::vector<Sample> out;
  for (DType t : {DType::f32, DType::i32})
    for (int operands = 1; operands <= 3; ++operands) {
      std::vector<TensorType> types;
      for (int i = 0; i < operands; ++i) types.push_back({t, random_shape(rng)});
      out.push_back({random_operands(rng, types)});
    }
  out.push_back({random_operands(rng, {{DType::f32, {2, 3}}, {DType::i32, {4}}}), {}, "a bucket of two dtypes"});
  out.push_back({random_operands(rng, {{DType::f32, {0, 4}}, {DType::f32, {3}}}), {}, "size 0"});
  return out;
}

}  // namespace

std::vector<OpInfo> collective_rows() {
  return {{.name = "allreduce",
           .dtypes = {{DType::f32, DType::i32}},
           .samples = allreduce_samples,
           .tolerance = kExact,
           .no_fusion = "a collective is never in a kernel: the program starts it and waits for it",
           .grad_samples =
               [](Rng& rng) {
                 return std::vector<Sample>{{{uniform(rng, {2, 3})}}, {{uniform(rng, {}), uniform(rng, {4})}}};
               },
           .no_invalid = "every shape is valid (bool operands are refused: the generated cases)"}};
}

}  // namespace kiln::test
