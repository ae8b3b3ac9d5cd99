#include "models/lm/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace kiln::models {

int32_t Sampler::next(const float* log_probs, int64_t vocab) {
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  // Most likely first; ties by id, so the order is the same everywhere.
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return log_probs[a] > log_probs[b]; });
  if (opts_.temperature == 0) return order[0];
  size_t keep = order.size();
  if (opts_.top_k > 0) keep = std::min(keep, static_cast<size_t>(opts_.top_k));
  // Tempered weights relative to the best, in double.
  std::vector<double> w(keep);
  for (size_t i = 0; i < keep; ++i)
    w[i] = std::exp((static_cast<double>(log_probs[order[i]]) - log_probs[order[0]]) / opts_.temperature);
  if (opts_.top_p < 1) {
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    double mass = 0;
    size_t n = 0;
    while (n < keep && mass < opts_.top_p * total) mass += w[n++];
    keep = std::max<size_t>(n, 1);
    w.resize(keep);
  }
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  const double u = static_cast<double>(rng_.next() >> 11) * 0x1.0p-53 * total;  // uniform in [0, total)
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += w[i];
    if (u < acc) return order[i];
  }
  return order[keep - 1];
}

}  // namespace kiln::models
