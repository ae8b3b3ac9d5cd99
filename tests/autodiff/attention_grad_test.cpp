// flash_attention's gradient rule (its backward op) against finite differences
// for q, k and v; the mask is a constant.
#include <doctest/doctest.h>

#include "gradcheck.h"
#include "ops/attention.h"

using namespace kiln;

TEST_CASE("flash_attention's gradients match finite differences for q, k and v") {
  struct Case {
    Shape q, k, v, mask;
  };
  const std::vector<Case> cases = {{{2, 3, 4}, {2, 5, 4}, {2, 5, 3}, {2, 1, 5}}, {{4, 2}, {4, 2}, {4, 3}, {4, 4}}};
  uint64_t seed = 40;
  for (const Case& c : cases) {
    INFO("q ", shape_str(c.q));
    seed += 10;
    Tensor mask = test::random_tensor(c.mask, seed + 3);
    for (float& m : mask.f32()) m = m < -0.6f ? -1e9f : 0.0f;  // finite, so differences stay finite
    const std::vector<Tensor> values = {test::random_tensor(c.q, seed, -2.0f, 2.0f),
                                        test::random_tensor(c.k, seed + 1, -2.0f, 2.0f),
                                        test::random_tensor(c.v, seed + 2), mask};
    test::GradCheckOptions opts;
    opts.constant = {3};
    test::check_gradients(
        [](Builder& b, const std::vector<Value>& in) { return ops::flash_attention(b, in[0], in[1], in[2], in[3], 0.6).first; },
        values, opts);
  }
}

