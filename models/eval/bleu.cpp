#include "models/eval/bleu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>

#include "models/eval/utf8.h"

namespace kiln::models {
namespace {

bool is_digit(std::string_view c) { return c.size() == 1 && c[0] >= '0' && c[0] <= '9'; }
bool is_period_or_comma(std::string_view c) { return c == "." || c == ","; }

// The first regex's class [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII punctuation and symbols
// except the apostrophe, comma, hyphen and period.
bool is_split_symbol(std::string_view c) {
  if (c.size() != 1) return false;
  const char x = c[0];
  return (x >= '{' && x <= '~') || (x >= '[' && x <= '`') || (x >= ' ' && x <= '&') || (x >= '(' && x <= '+') ||
         (x >= ':' && x <= '@') || x == '/';
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  std::string out;
  size_t at = 0;
  for (size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size())
    out.append(s, at, hit - at).append(to);
  return out.append(s, at);
}

using Chars = std::vector<std::string_view>;

// re.sub of a two-character pattern (first, second): scans left to right, and each
// match is rewritten by `emit` and skipped whole, as Python's re.sub does.
template <class First, class Second, class Emit>
std::string substitute_pairs(const std::string& s, First first, Second second, Emit emit) {
  const Chars cs = characters(s);
  std::string out;
  for (size_t i = 0; i < cs.size();) {
    if (i + 1 < cs.size() && first(cs[i]) && second(cs[i + 1])) {
      emit(out, cs[i], cs[i + 1]);
      i += 2;
    } else {
      out += cs[i++];
    }
  }
  return out;
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t start = std::string_view::npos, at = 0;
  for (std::string_view c : characters(line)) {
    if (is_space(c)) {
      if (start != std::string_view::npos) words.push_back(line.substr(start, at - start));
      start = std::string_view::npos;
    } else if (start == std::string_view::npos) {
      start = at;
    }
    at += c.size();
  }
  if (start != std::string_view::npos) words.push_back(line.substr(start));
  return words;
}

constexpr int kOrder = 4;

struct Stats {
  int64_t hyp_len = 0, ref_len = 0;
  int64_t correct[kOrder] = {}, total[kOrder] = {};
};

using NgramCounts = std::map<std::vector<std::string_view>, int64_t>;

NgramCounts ngram_counts(const std::vector<std::string_view>& words) {
  NgramCounts counts;
  for (size_t n = 1; n <= kOrder; ++n)
    for (size_t i = 0; i + n <= words.size(); ++i) ++counts[{words.begin() + i, words.begin() + i + n}];
  return counts;
}

// sacreBLEU's _get_closest_ref_len: the reference length nearest the hypothesis's, the shorter on a tie.
int64_t closest_ref_len(int64_t hyp_len, const std::vector<int64_t>& ref_lens) {
  int64_t best = ref_lens.front();
  for (int64_t len : ref_lens) {
    const int64_t diff = std::llabs(hyp_len - len), best_diff = std::llabs(hyp_len - best);
    if (diff < best_diff || (diff == best_diff && len < best)) best = len;
  }
  return best;
}

// hyp and refs already rstripped.
void add_segment(Stats& stats, const std::string& hyp, const std::vector<std::string>& refs) {
  const std::string hyp_tokens = tokenize_13a(hyp);
  const auto hyp_words = split_words(hyp_tokens);
  std::vector<std::string> ref_tokens;  // owns the text the n-grams below point into
  for (const std::string& ref : refs) ref_tokens.push_back(tokenize_13a(ref));
  NgramCounts max_ref_counts;
  std::vector<int64_t> ref_lens;
  for (const std::string& tokens : ref_tokens) {
    const auto words = split_words(tokens);
    ref_lens.push_back(static_cast<int64_t>(words.size()));
    for (const auto& [ngram, count] : ngram_counts(words))
      max_ref_counts[ngram] = std::max(max_ref_counts[ngram], count);
  }
  stats.hyp_len += static_cast<int64_t>(hyp_words.size());
  stats.ref_len += closest_ref_len(static_cast<int64_t>(hyp_words.size()), ref_lens);
  for (const auto& [ngram, count] : ngram_counts(hyp_words)) {
    const size_t n = ngram.size() - 1;
    stats.total[n] += count;
    if (const auto it = max_ref_counts.find(ngram); it != max_ref_counts.end())
      stats.correct[n] += std::min(count, it->second);
  }
}

// Python's str.rstrip(): trailing whitespace removed.
std::string rstrip(const std::string& line) {
  size_t end = 0, at = 0;
  for (std::string_view c : characters(line)) {
    at += c.size();
    if (!is_space(c)) end = at;
  }
  return line.substr(0, end);
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

std::string tokenize_13a(const std::string& line) {
  // Language-independent part (mteval-v13a): markup and SGML entities.
  std::string s = line;
  for (const auto& [from, to] : {std::pair<std::string_view, std::string_view>{"<skipped>", ""},
                                 {"-\n", ""},
                                 {"\n", " "},
                                 {"&quot;", "\""},
                                 {"&amp;", "&"},
                                 {"&lt;", "<"},
                                 {"&gt;", ">"}})
    s = replace_all(std::move(s), from, to);
  s = " " + s + " ";

  // Symbols apart; periods and commas apart unless next to a digit on that side;
  // a dash after a digit apart.
  std::string spaced;
  for (std::string_view c : characters(s)) {
    if (is_split_symbol(c))
      spaced.append(" ").append(c).append(" ");
    else
      spaced.append(c);
  }
  const auto not_digit = [](std::string_view c) { return !is_digit(c); };
  s = substitute_pairs(spaced, not_digit, is_period_or_comma,
                       [](std::string& out, auto a, auto b) { out.append(a).append(" ").append(b).append(" "); });
  s = substitute_pairs(s, is_period_or_comma, not_digit,
                       [](std::string& out, auto a, auto b) { out.append(" ").append(a).append(" ").append(b); });
  s = substitute_pairs(
      s, is_digit, [](std::string_view c) { return c == "-"; },
      [](std::string& out, auto a, auto b) { out.append(a).append(" ").append(b).append(" "); });

  std::string out;
  for (std::string_view w : split_words(s)) out.append(out.empty() ? "" : " ").append(w);
  return out;
}

Bleu corpus_bleu(const std::vector<std::string>& hyps, const ReferenceStreams& refs) {
  check_reference_streams("BLEU", hyps.size(), refs);
  Stats st;
  std::vector<std::string> segment_refs(refs.size());
  for (size_t i = 0; i < hyps.size(); ++i) {
    for (size_t k = 0; k < refs.size(); ++k) segment_refs[k] = rstrip(refs[k][i]);
    add_segment(st, rstrip(hyps[i]), segment_refs);
  }

  Bleu b;
  b.hyp_len = st.hyp_len;
  b.ref_len = st.ref_len;
  b.ratio = st.ref_len > 0 ? double(st.hyp_len) / double(st.ref_len) : 0.0;
  b.brevity_penalty = st.hyp_len >= st.ref_len ? 1.0
                      : st.hyp_len > 0         ? std::exp(1.0 - double(st.ref_len) / double(st.hyp_len))
                                               : 0.0;
  bool any_match = false;
  for (int64_t c : st.correct) any_match |= c > 0;
  if (!any_match) return b;  // score 0, precisions 0 (sacreBLEU's early stop)

  // 'exp' smoothing: the k-th order without matches gets precision 1 / (2^k * total).
  double smooth = 1, log_sum = 0;
  for (int n = 0; n < kOrder; ++n) {
    if (st.total[n] == 0) {  // no n-grams this long: the score is 0 (log 0)
      log_sum = -INFINITY;
      break;
    }
    if (st.correct[n] == 0) {
      smooth *= 2;
      b.precisions[n] = 100.0 / (smooth * double(st.total[n]));
    } else {
      b.precisions[n] = 100.0 * double(st.correct[n]) / double(st.total[n]);
    }
    log_sum += std::log(b.precisions[n]);
  }
  b.score = b.brevity_penalty * std::exp(log_sum / kOrder);
  return b;
}

std::string bleu_str(const Bleu& b) {
  std::string s = "BLEU = " + format("%.2f", b.score) + " ";
  for (int n = 0; n < kOrder; ++n) s += format("%.1f", b.precisions[n]) + (n + 1 < kOrder ? "/" : "");
  s += " (BP = " + format("%.3f", b.brevity_penalty) + " ratio = " + format("%.3f", b.ratio) +
       " hyp_len = " + std::to_string(b.hyp_len) + " ref_len = " + std::to_string(b.ref_len) + ")";
  return s;
}

std::string bleu_signature(size_t nrefs) {
  return "nrefs:" + std::to_string(nrefs) + "|case:mixed|eff:no|tok:13a|smooth:exp|version:kiln";
}

}  // namespace kiln::models
