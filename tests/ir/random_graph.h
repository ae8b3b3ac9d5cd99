#pragma once
// A seeded generator of valid graphs built with the Builder from a mix of real
// ops (elementwise, compare/select, cast, reductions, reshape, transpose,
// broadcast, slice, concat, matmul, softmax, layer_norm, dropout, fill, iota), random
// shapes (scalars and size-1 dims included) and awkward float attributes. Used by
// the .kir round-trip and fuzz tests, and meant for differential tests of the JIT
// against the interpreter. The graph is valid by construction: the generator
// never relies on the Builder rejecting a try.
#include <cstdint>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln::test {

// splitmix64: small, fast and the same sequence on every platform and standard
// library (unlike std::uniform_int_distribution).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  int64_t uniform(int64_t lo, int64_t hi);  // inclusive on both ends
  bool coin(double p = 0.5);
  template <class T>
  const T& pick(const std::vector<T>& items) {
    return items[static_cast<size_t>(uniform(0, static_cast<int64_t>(items.size()) - 1))];
  }

 private:
  uint64_t state_;
};

// A dim that exercises vector loops: 1, small odd sizes, and sizes just off
// multiples of the vector widths (15, 17, 33, ...).
int64_t vector_dim(Rng& rng);
// Shapes of such dims, rank 0 (scalars) included.
Shape random_shape(Rng& rng, int max_rank = 3);
// A shape that broadcasts to `s`: some leading axes dropped, some dims set to 1.
Shape broadcast_partner(Rng& rng, const Shape& s);

struct RandomGraphOptions {
  int steps = 12;       // ops to emit (assigns come on top)
  int max_rank = 3;     // of declarations and generated shapes; at least 2 (matmul)
  int64_t max_dim = 4;  // of declarations and generated shapes
  int64_t max_numel = 4096;
};

// The same seed and options give the same graph.
Graph random_graph(uint64_t seed, const RandomGraphOptions& options = {});

}  // namespace kiln::test
