#include "models/eval/bleu.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <string_view>

#include "engine/ir/error.h"

namespace kiln::models {
namespace {

// sacreBLEU works on Python str (code points); the text is split into its UTF-8
// sequences so that "any character but a digit" means one whole character here too.
// A byte that starts no valid sequence counts as one character.
std::vector<std::string_view> characters(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    size_t len = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 1;
    if (i + len > s.size()) len = 1;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) len = 1;
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

uint32_t code_point(std::string_view c) {
  const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(c[i])); };
  switch (c.size()) {
    case 2: return (b(0) & 0x1f) << 6 | (b(1) & 0x3f);
    case 3: return (b(0) & 0x0f) << 12 | (b(1) & 0x3f) << 6 | (b(2) & 0x3f);
    case 4: return (b(0) & 0x07) << 18 | (b(1) & 0x3f) << 12 | (b(2) & 0x3f) << 6 | (b(3) & 0x3f);
    default: return b(0);
  }
}

// Python's str.isspace(), which str.split() and str.rstrip() use.
bool is_space(std::string_view c) {
  const uint32_t u = code_point(c);
  return (u >= 0x09 && u <= 0x0d) || (u >= 0x1c && u <= 0x20) || u == 0x85 || u == 0xa0 || u == 0x1680 ||
         (u >= 0x2000 && u <= 0x200a) || u == 0x2028 || u == 0x2029 || u == 0x202f || u == 0x205f || u == 0x3000;
}

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

std::map<std::vector<std::string_view>, int64_t> ngram_counts(const std::vector<std::string_view>& words) {
  std::map<std::vector<std::string_view>, int64_t> counts;
  for (size_t n = 1; n <= kOrder; ++n)
    for (size_t i = 0; i + n <= words.size(); ++i) ++counts[{words.begin() + i, words.begin() + i + n}];
  return counts;
}

void add_segment(Stats& stats, const std::string& hyp, const std::string& ref) {
  const std::string hyp_tokens = tokenize_13a(hyp), ref_tokens = tokenize_13a(ref);
  const auto hyp_words = split_words(hyp_tokens), ref_words = split_words(ref_tokens);
  stats.hyp_len += static_cast<int64_t>(hyp_words.size());
  stats.ref_len += static_cast<int64_t>(ref_words.size());
  const auto ref_counts = ngram_counts(ref_words);
  for (const auto& [ngram, count] : ngram_counts(hyp_words)) {
    const size_t n = ngram.size() - 1;
    stats.total[n] += count;
    if (const auto it = ref_counts.find(ngram); it != ref_counts.end()) stats.correct[n] += std::min(count, it->second);
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

Bleu corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  if (hyps.size() != refs.size())
    throw Error("BLEU: " + std::to_string(hyps.size()) + " hypotheses but " + std::to_string(refs.size()) +
                " references");
  Stats st;
  for (size_t i = 0; i < hyps.size(); ++i) add_segment(st, rstrip(hyps[i]), rstrip(refs[i]));

  Bleu b;
  b.hyp_len = st.hyp_len;
  b.ref_len = st.ref_len;
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
  const double ratio = b.ref_len > 0 ? double(b.hyp_len) / double(b.ref_len) : 0.0;
  s += " (BP = " + format("%.3f", b.brevity_penalty) + " ratio = " + format("%.3f", ratio) +
       " hyp_len = " + std::to_string(b.hyp_len) + " ref_len = " + std::to_string(b.ref_len) + ")";
  return s;
}

std::string bleu_signature() { return "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:kiln"; }

}  // namespace kiln::models
