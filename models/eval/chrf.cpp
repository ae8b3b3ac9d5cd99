#include "models/eval/chrf.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "models/eval/utf8.h"

namespace kiln::models {
namespace {

constexpr int kCharOrder = 6;

// sacreBLEU's statistics of one n-gram order: hypothesis n-grams (0 when the
// reference has none of this order), reference n-grams, clipped matches.
struct OrderStats {
  int64_t hyp = 0, ref = 0, match = 0;
};
using Stats = std::array<OrderStats, kCharOrder>;

using NgramCounts = std::array<std::unordered_map<std::string_view, int64_t>, kCharOrder>;

// A line's characters with the whitespace left out (sacreBLEU's ''.join(line.split())),
// and the byte where each one starts, then the end.
struct Squeezed {
  std::string bytes;
  std::vector<size_t> starts;
};

Squeezed without_whitespace(std::string_view line) {
  Squeezed s;
  for (std::string_view c : characters(line)) {
    if (is_space(c)) continue;
    s.starts.push_back(s.bytes.size());
    s.bytes.append(c);
  }
  s.starts.push_back(s.bytes.size());
  return s;
}

// The n-grams of every order, as views into `text` (which must outlive them).
NgramCounts ngram_counts(const Squeezed& text) {
  NgramCounts counts;
  const std::string_view bytes = text.bytes;
  const size_t chars = text.starts.size() - 1;
  for (size_t n = 1; n <= kCharOrder; ++n)
    for (size_t i = 0; i + n <= chars; ++i)
      ++counts[n - 1][bytes.substr(text.starts[i], text.starts[i + n] - text.starts[i])];
  return counts;
}

// sacreBLEU's CHRF._get_match_statistics for every order.
Stats match_statistics(const NgramCounts& hyp, const NgramCounts& ref) {
  Stats stats;
  for (int n = 0; n < kCharOrder; ++n) {
    int64_t hyp_count = 0, ref_count = 0, match = 0;
    for (const auto& [ngram, count] : hyp[n]) {
      hyp_count += count;
      if (const auto it = ref[n].find(ngram); it != ref[n].end()) match += std::min(count, it->second);
    }
    for (const auto& entry : ref[n]) ref_count += entry.second;
    stats[n] = {ref[n].empty() ? 0 : hyp_count, ref_count, match};
  }
  return stats;
}

// sacreBLEU's CHRF._compute_f_score, operation for operation.
double f_score(const Stats& stats, const ChrfOptions& opts) {
  constexpr double kEps = 1e-16;
  const double factor = opts.beta * opts.beta;
  double score = 0, avg_prec = 0, avg_rec = 0;
  int effective_order = 0;
  for (const OrderStats& s : stats) {
    const double prec = s.hyp > 0 ? double(s.match) / double(s.hyp) : kEps;
    const double rec = s.ref > 0 ? double(s.match) / double(s.ref) : kEps;
    const double denom = factor * prec + rec;
    score += denom > 0 ? (1 + factor) * prec * rec / denom : kEps;
    if (s.hyp > 0 && s.ref > 0) {
      avg_prec += prec;
      avg_rec += rec;
      ++effective_order;
    }
  }
  if (opts.eps_smoothing) return 100 * score / kCharOrder;
  if (effective_order == 0) return 0;
  avg_prec /= effective_order;
  avg_rec /= effective_order;
  if (avg_prec + avg_rec == 0) return 0;
  return 100 * ((1 + factor) * avg_prec * avg_rec / (factor * avg_prec + avg_rec));
}

void add(Stats& total, const Stats& s) {
  for (int n = 0; n < kCharOrder; ++n) {
    total[n].hyp += s[n].hyp;
    total[n].ref += s[n].ref;
    total[n].match += s[n].match;
  }
}

}  // namespace

Chrf corpus_chrf(const std::vector<std::string>& hyps, const ReferenceStreams& refs, const ChrfOptions& opts) {
  check_reference_streams("chrF", hyps.size(), refs);
  Stats total{};
  for (size_t i = 0; i < hyps.size(); ++i) {
    const Squeezed hyp = without_whitespace(hyps[i]);
    const NgramCounts hyp_ngrams = ngram_counts(hyp);
    Stats best{};
    double best_score = -1;
    for (const std::vector<std::string>& stream : refs) {
      const Squeezed ref = without_whitespace(stream[i]);
      const Stats stats = match_statistics(hyp_ngrams, ngram_counts(ref));
      if (const double f = f_score(stats, opts); f > best_score) {
        best_score = f;
        best = stats;
      }
    }
    add(total, best);
  }
  return {f_score(total, opts), opts};
}

std::string chrf_str(const Chrf& c) {
  char score[32];
  std::snprintf(score, sizeof score, "%.2f", c.score);
  return "chrF" + std::to_string(c.options.beta) + " = " + score;
}

std::string chrf_signature(size_t nrefs, const ChrfOptions& opts) {
  return "nrefs:" + std::to_string(nrefs) + "|case:mixed|eff:" + (opts.eps_smoothing ? "no" : "yes") +
         "|nc:" + std::to_string(kCharOrder) + "|nw:0|space:no|version:kiln";
}

}  // namespace kiln::models
