// Rows of flash_attention and flash_attention_backward (ops/attention.cpp).
//
// Forward tolerance {2e-4, 2e-4}: the reference computes in double, the kernel in
// f32 with its fast exp (1.5 ulp). A score q . k * scale sums d <= 64 products of
// values up to 4 in magnitude, scale 1/sqrt(d): its f32 error is about sqrt(d) *
// 16 * 2^-24 * scale ~ 1e-6 absolute, which exp turns into the same relative
// error of the weights; outputs are sums of weights times values up to 4, and
// the gradients sums of up to 64 such terms (measured: under 3e-5).
#include <cmath>
#include <limits>

#include "ops/op_test_util.h"
#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {

constexpr Tolerance kAttention{2e-4, 2e-4};
const std::vector<DType> kFloatOrBf16 = {DType::f32, DType::bf16};

struct Sizes {
  Shape batch;
  int64_t t = 0, s = 0, d = 0, dv = 0;
  bool mask_per_row = false;  // [.., T, S] mask, else a padding mask [.., 1, S]
  int64_t heads = 0;          // q, k, v packed [.., T, heads*d] ({heads}), else per head
};

// Sequence lengths and head sizes off the vector widths, batch dims of rank 0
// to 2, masks broadcast over heads (and over rows for padding masks).
Sizes random_sizes(Rng& rng) {
  const std::vector<int64_t> lengths = {1, 3, 16, 17, 33};
  Sizes z;
  for (int64_t rank = rng.uniform(0, 2); rank > 0; --rank) z.batch.push_back(rng.uniform(1, 3));
  z.t = rng.pick(lengths);
  z.s = rng.pick(lengths);
  z.d = rng.pick(std::vector<int64_t>{1, 8, 19, 64});
  z.dv = rng.pick(std::vector<int64_t>{1, 5, 16, 33});
  z.mask_per_row = rng.coin();
  if (rng.coin(0.4)) z.heads = rng.uniform(2, 3);
  return z;
}

// q, k, v within [-4, 4]; a mask dropping a third of the keys, and in masks of
// several rows all of row 0 (a row with nothing to attend to).
Sample attention_sample(Rng& rng, const Sizes& z) {
  Shape scores_batch = z.batch;  // the mask broadcasts over the heads too
  if (z.heads) scores_batch.push_back(z.heads);
  Shape mask_shape = scores_batch.empty() ? Shape{} : Shape{scores_batch[0]};
  if (!scores_batch.empty()) mask_shape.resize(scores_batch.size(), 1);
  mask_shape = concat_shapes(mask_shape, {z.mask_per_row ? z.t : 1, z.s});
  const int64_t h = z.heads ? z.heads : 1;
  Sample sample{random_operands(rng,
                                {{DType::f32, concat_shapes(z.batch, {z.t, h * z.d})},
                                 {DType::f32, concat_shapes(z.batch, {z.s, h * z.d})},
                                 {DType::f32, concat_shapes(z.batch, {z.s, h * z.dv})},
                                 {DType::f32, mask_shape}},
                                Values::moderate),
                {{"scale", 1.0 / std::sqrt(static_cast<double>(z.d))}, {"heads", z.heads}}};
  Tensor::F32& mask = sample.operands[3].f32();
  for (float& m : mask) m = rng.coin(0.33) ? -std::numeric_limits<float>::infinity() : 0.0f;
  const size_t s = mask.shape().back(), rows = mask.shape()[mask.dimension() - 2];
  if (rows > 1)
    for (size_t first = 0; first < mask.size(); first += rows * s)
      for (size_t j = 0; j < s; ++j) mask.data()[first + j] = -std::numeric_limits<float>::infinity();
  return sample;
}

// `sample` with operands `which` rounded to bf16 (--precision bf16 keeps q, k,
// v and the backward's o so).
Sample in_bf16(Sample sample, const std::vector<size_t>& which) {
  for (size_t i : which)
    sample.operands[i] = Tensor(Tensor::BF16(xt::cast<bfloat16>(sample.operands[i].f32())));
  sample.note += sample.note.empty() ? "bf16" : ", bf16";
  return sample;
}

// `sample` with {causal=1}.
Sample causal(Sample sample) {
  sample.attrs.set("causal", int64_t{1});
  sample.note += sample.note.empty() ? "causal" : ", causal";
  return sample;
}

std::vector<Sample> forward_samples(Rng& rng) {
  std::vector<Sample> out;
  for (int i = 0; i < 8; ++i) out.push_back(attention_sample(rng, random_sizes(rng)));
  out.push_back(attention_sample(rng, {{2, 4}, 33, 33, 64, 64, true}));
  out.back().note = "large";
  out.push_back(attention_sample(rng, {{2}, 17, 19, 16, 8, true, 4}));
  out.back().note = "packed heads";
  for (int i = 0; i < 3; ++i) out.push_back(in_bf16(attention_sample(rng, random_sizes(rng)), {0, 1, 2}));
  Sample packed = attention_sample(rng, {{2}, 17, 19, 16, 8, true, 4});
  packed.note = "packed heads";
  out.push_back(in_bf16(std::move(packed), {0, 1, 2}));
  // Causal ones, and more keys than the row kernel takes (the blocked kernels).
  for (int i = 0; i < 3; ++i) out.push_back(causal(attention_sample(rng, random_sizes(rng))));
  out.push_back(causal(attention_sample(rng, {{2}, 5, 3, 8, 8, false, 2})));  // rows 0, 1 see no key
  out.push_back(in_bf16(causal(attention_sample(rng, random_sizes(rng))), {0, 1, 2}));
  out.push_back(attention_sample(rng, {{1}, 9, 300, 16, 8, false, 2}));
  out.back().note = "300 keys";
  out.push_back(causal(attention_sample(rng, {{1}, 140, 150, 8, 5, true, 2})));
  out.back().note = "150 keys, causal";
  out.push_back(in_bf16(causal(attention_sample(rng, {{2}, 40, 70, 16, 8, false})), {0, 1, 2}));
  return out;
}

// The forward's operands, its results o and lse from the reference, and a random do.
std::vector<Sample> backward_samples(Rng& rng) {
  std::vector<Sample> out;
  for (Sample& s : forward_samples(rng)) {
    const std::vector<Tensor> o_lse = run_op("flash_attention", s.operands, s.attrs);
    s.operands.insert(s.operands.end(), o_lse.begin(), o_lse.end());
    s.operands.push_back(random_tensor(rng, o_lse[0].type(), Values::moderate));
    // bf16 q, k, v with o kept in bf16 as well, as bf16-saves keeps them.
    if (s.operands[0].dtype() == DType::bf16) s = in_bf16(std::move(s), {4});
    out.push_back(std::move(s));
  }
  return out;
}

// A batch with a padding mask, a plain [T, S] mask, two heads packed, and
// causal ones (T < S, and T == S with a scalar mask); masks finite (-1e9) so
// that differences stay finite.
std::vector<Sample> grad_samples(Rng& rng) {
  struct Case {
    Shape q, k, v, mask;
    int64_t heads = 0;
    bool causal = false;
  };
  std::vector<Sample> out;
  for (const Case& c : std::vector<Case>{{{2, 3, 4}, {2, 5, 4}, {2, 5, 3}, {2, 1, 5}},
                                         {{4, 2}, {4, 2}, {4, 3}, {4, 4}},
                                         {{2, 3, 4}, {2, 5, 4}, {2, 5, 6}, {2, 1, 1, 5}, 2},
                                         {{2, 3, 4}, {2, 5, 4}, {2, 5, 3}, {2, 1, 5}, 0, true},
                                         {{5, 4}, {5, 4}, {5, 4}, {}, 2, true}}) {
    Tensor mask = uniform(rng, c.mask);
    for (float& m : mask.f32()) m = m < -0.6f && !c.mask.empty() ? -1e9f : 0.0f;
    out.push_back({{uniform(rng, c.q, -2.0f, 2.0f), uniform(rng, c.k, -2.0f, 2.0f), uniform(rng, c.v), mask},
                   {{"scale", 0.6}, {"heads", c.heads}, {"causal", int64_t{c.causal}}}});
  }
  return out;
}


}  // namespace

std::vector<OpInfo> attention_rows() {
  GradCheckOptions constant_mask;
  constant_mask.constant = {3};
  return {{.name = "flash_attention",
           .dtypes = {kFloatOrBf16, kFloatOrBf16, kFloatOrBf16, kFloat},
           .samples = forward_samples,
           .tolerance = kAttention,
           .no_fusion = "one kernel of its own: fusion takes no producers or consumers into it",
           .grad_samples = grad_samples,
           .grad_options = constant_mask,
           .grad_results = {0},  // lse has no gradient rule: it feeds only the backward op
           .no_grad_of_grad = "its gradient is flash_attention_backward, which has no rule: it recomputes the "
                              "weights and keeps no [T, S] tensor, so nothing differentiates through it",
           .invalid = {{{{DType::f32, {3, 4}}, {DType::f32, {5, 3}}, {DType::f32, {5, 2}}, {DType::f32, {3, 5}}},
                        {{"scale", 1.0}}},
                       {{{DType::f32, {3, 4}}, {DType::f32, {5, 4}}, {DType::f32, {6, 2}}, {DType::f32, {3, 5}}},
                        {{"scale", 1.0}}},
                       {{{DType::f32, {3, 4}}, {DType::f32, {5, 4}}, {DType::f32, {5, 2}}, {DType::f32, {2, 5}}},
                        {{"scale", 1.0}}},
                       {{{DType::f32, {4}}, {DType::f32, {4}}, {DType::f32, {4}}, {DType::f32, {}}},
                        {{"scale", 1.0}}},
                       // 5 columns do not split into 2 heads
                       {{{DType::f32, {3, 5}}, {DType::f32, {4, 5}}, {DType::f32, {4, 4}}, {DType::f32, {3, 4}}},
                        {{"scale", 1.0}, {"heads", 2}}},
                       // q, k and v of two dtypes
                       {{{DType::bf16, {3, 4}}, {DType::f32, {5, 4}}, {DType::bf16, {5, 2}}, {DType::f32, {3, 5}}},
                        {{"scale", 1.0}}},
                       // causal is 0 or 1
                       {{{DType::f32, {3, 4}}, {DType::f32, {5, 4}}, {DType::f32, {5, 2}}, {DType::f32, {}}},
                        {{"scale", 1.0}, {"causal", 2}}}}},
          {.name = "flash_attention_backward",
           .dtypes = {kFloatOrBf16, kFloatOrBf16, kFloatOrBf16, kFloat, kFloatOrBf16, kFloat, kFloat},
           .samples = backward_samples,
           .tolerance = kAttention,
           .no_fusion = "one kernel of its own: fusion takes no producers or consumers into it",
           .no_gradient = "the backward op of flash_attention: its weights are recomputed, nothing is kept to "
                          "differentiate it again",
           .invalid = {{{{DType::f32, {3, 4}}, {DType::f32, {5, 4}}, {DType::f32, {5, 2}}, {DType::f32, {3, 5}},
                         {DType::f32, {3, 3}}, {DType::f32, {3}}, {DType::f32, {3, 2}}},
                        {{"scale", 1.0}}},
                       {{{DType::f32, {3, 4}}, {DType::f32, {5, 4}}, {DType::f32, {5, 2}}, {DType::f32, {3, 5}},
                         {DType::f32, {3, 2}}, {DType::f32, {5}}, {DType::f32, {3, 2}}},
                        {{"scale", 1.0}}}}}};
}

}  // namespace kiln::test
