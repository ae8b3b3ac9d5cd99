// flash-attention: attention written out plainly,
//
//   %s = matmul(%q, %k) {transpose_b=true}     [..., T, S]
//   %z = mul(%s, %c)                           %c a one-element fill (or div by one); optional
//   %m = add(%z, %mask)                        %mask broadcast to [..., T, S]; optional
//   %p = softmax(%m)                           over the last axis
//   %o = matmul(%p, %v)
//
// becomes %o = flash_attention(%q, %k, %v, %mask) {scale=c}, which never writes
// the [..., T, S] scores (as the builder's own attention does): an imported or
// hand-written model gets the same kernel. As PyTorch exports attention, q may
// be scaled before the product (%s = matmul(div(%q, %c), %kt)) and k^T read as
// stored (%kt = transpose(%k) {perm=[1,2,0]} of [S, B*H, d]): k is then the
// transpose that puts its rows last, a node of its own. When q, k and v are each a head
// split of a projection, transpose(reshape(x [.., T, H*d] -> [.., T, H, d])) to
// [.., H, T, d], and %o's one reader is the head merge back, flash_attention
// reads the projections and writes the merged result itself ({heads=H}), and
// the four copy kernels go too. The chain's values must be read by
// nothing else (a training graph's backward reads the weights %p, so there the
// model builds flash_attention itself and autodiff takes its gradient rule);
// the scores it leaves unread go in dce. One remark per softmax-weighted
// matmul: rewritten, or why not. A row with nothing to attend to (all -inf)
// gives zeros, as flash_attention defines it, where the softmax gave nan.
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <utility>

#include "compiler/passes/constants.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {
namespace {

Shape leading(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// The pattern ending at a matmul, once matched.
struct Attention {
  Value q, k, v, mask;  // mask invalid: none
  double scale = 1.0;
  // Not empty: the scores' matmul read k^T as stored (PyTorch's exports:
  // k^T = transpose(x) {perm=[1,2,0]} of x [S, B*H, d]); k is then
  // transpose(k, k_perm), a node of its own.
  std::vector<int64_t> k_perm;
  // Packed heads: q, k and v are the projections, `merged` the head merge's
  // reshape (node index) that the result stands for, `merge_transpose` its
  // transpose (which goes).
  int64_t heads = 0;
  size_t merged = 0, merge_transpose = 0;
};

// The permutation that swaps axes r-3 and r-2 of a rank-r tensor, [.., T, H, c] <-> [.., H, T, c].
bool swaps_rows_and_heads(const std::vector<int64_t>& perm) {
  const size_t r = perm.size();
  if (r < 3) return false;
  for (size_t i = 0; i < r; ++i) {
    const size_t want = i == r - 3 ? r - 2 : i == r - 2 ? r - 3 : i;
    if (perm[i] != static_cast<int64_t>(want)) return false;
  }
  return true;
}

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), reads_(g.num_values(), 0), reader_(g.num_values(), 0) {
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (Value v : g.nodes()[i].operands) {
        ++reads_[static_cast<size_t>(v.id)];
        reader_[static_cast<size_t>(v.id)] = i;
      }
    for (Value v : g.outputs()) ++reads_[static_cast<size_t>(v.id)];
  }

  // The attention whose output is `o`'s result, or why not (empty: not a
  // softmax-weighted matmul at all, nothing to remark).
  std::optional<Attention> match(const Node& o, std::string& why) const {
    if (o.op() != "matmul" || !is_result(o.operands[0]) || producer(o.operands[0]).op() != "softmax") return {};
    const Node& softmax = producer(o.operands[0]);
    if (o.attrs.get_bool("transpose_a") || o.attrs.get_bool("transpose_b"))
      return fail(why, "the weights' matmul reads its operands transposed");
    const int64_t rank = static_cast<int64_t>(g_.type(softmax.results[0]).shape.size());
    if (const int64_t axis = softmax.attrs.get_int("axis"); axis != -1 && axis != rank - 1)
      return fail(why, "the softmax is not over the last axis");
    if (!read_once(softmax.results[0])) return fail(why, "%" + name(softmax.results[0]) + " is read elsewhere too");
    Attention a;
    a.v = o.operands[1];
    Value x = softmax.operands[0];
    // add(z, mask) or add(mask, z): z is the side a mul, div or matmul makes.
    if (is_result(x) && producer(x).op() == "add") {
      if (!read_once(x)) return fail(why, "%" + name(x) + " is read elsewhere too");
      const Node& add = producer(x);
      const bool first_is_scores = is_scores(add.operands[0]);
      a.mask = add.operands[first_is_scores ? 1 : 0];
      x = add.operands[first_is_scores ? 0 : 1];
    }
    if (is_result(x) && (producer(x).op() == "mul" || producer(x).op() == "div")) {
      if (!read_once(x)) return fail(why, "%" + name(x) + " is read elsewhere too");
      const std::optional<std::pair<Value, double>> s = scaled(x);
      if (!s) return fail(why, "%" + name(x) + " scales by a value that is not a one-element constant");
      x = s->first;
      a.scale = s->second;
    }
    if (!is_result(x) || producer(x).op() != "matmul")
      return fail(why, "its input is not q k^T (a matmul), scaled and masked");
    if (!read_once(x)) return fail(why, "%" + name(x) + " is read elsewhere too");
    const Node& scores = producer(x);
    if (scores.attrs.get_bool("transpose_a")) return fail(why, "the scores' matmul %" + name(x) + " reads q transposed");
    // The mask and scale must not widen the scores (add and mul would broadcast them).
    if (!(g_.type(softmax.operands[0]) == g_.type(x)))
      return fail(why, "the mask or scale broadcasts the scores to another shape");
    a.q = scores.operands[0];
    a.k = scores.operands[1];
    if (!scores.attrs.get_bool("transpose_b")) key_from_transposed(a);
    // q scaled before the product (PyTorch's exports: q / sqrt(d)).
    if (const std::optional<std::pair<Value, double>> s = scaled(a.q);
        s && read_once(a.q) && g_.type(s->first) == g_.type(a.q)) {
      a.q = s->first;
      a.scale *= s->second;
    }
    for (Value v : {a.q, a.k, a.v})
      if (g_.type(v).dtype != DType::f32) return fail(why, "%" + name(v) + " is not f32");
    const Shape &q = g_.type(a.q).shape, &v = g_.type(a.v).shape;
    Shape k = g_.type(a.k).shape;  // as flash_attention reads it
    if (!a.k_perm.empty())
      for (size_t i = 0; i < k.size(); ++i) k[i] = g_.type(a.k).shape[static_cast<size_t>(a.k_perm[i])];
    if (leading(k) != leading(q) || leading(v) != leading(q))
      return fail(why, "q, k and v differ in their batch dims (flash_attention broadcasts none)");
    if (a.mask.valid() && g_.type(a.mask).dtype != DType::f32) return fail(why, "the mask is not f32");
    if (a.k_perm.empty()) fold_heads(o, a);
    return a;
  }

 private:
  // x = mul(y, c), mul(c, y) or div(y, c), c a one-element constant: y and the
  // factor (c, or 1 / c).
  std::optional<std::pair<Value, double>> scaled(Value x) const {
    if (!is_result(x) || (producer(x).op() != "mul" && producer(x).op() != "div")) return {};
    const Node& n = producer(x);
    const bool div = n.op() == "div";
    const size_t c = !div && scalar(n.operands[0]) ? 0 : 1;
    const std::optional<double> value = scalar(n.operands[c]);
    if (!value) return {};
    return std::pair{n.operands[1 - c], div ? 1.0 / *value : *value};
  }

  // The scores' matmul reads k^T as stored: k is k^T with its last two axes
  // swapped, through the transpose that made k^T when there is one.
  void key_from_transposed(Attention& a) const {
    const size_t r = g_.type(a.k).shape.size();
    std::vector<int64_t> swap(r);
    for (size_t i = 0; i < r; ++i) swap[i] = static_cast<int64_t>(i);
    std::swap(swap[r - 2], swap[r - 1]);
    a.k_perm = swap;
    if (!is_result(a.k) || producer(a.k).op() != "transpose") return;
    const std::vector<int64_t> perm = producer(a.k).attrs.get_ints("perm");
    for (size_t i = 0; i < r; ++i) a.k_perm[i] = perm[static_cast<size_t>(swap[i])];
    a.k = producer(a.k).operands[0];
  }

  // x = transpose(reshape(p [.., T, H*c] -> [.., T, H, c]), rows and heads
  // swapped): p and H, else H = 0.
  std::pair<Value, int64_t> head_split(Value x) const {
    if (!is_result(x) || producer(x).op() != "transpose" || !swaps_rows_and_heads(producer(x).attrs.get_ints("perm")))
      return {Value(), 0};
    const Value y = producer(x).operands[0];
    if (!is_result(y) || producer(y).op() != "reshape") return {Value(), 0};
    const Value p = producer(y).operands[0];
    const Shape &split = g_.type(y).shape, &packed = g_.type(p).shape;
    const size_t r = split.size();
    Shape want(split.begin(), split.end() - 2);
    want.push_back(split[r - 2] * split[r - 1]);
    if (packed != want) return {Value(), 0};
    return {p, split[r - 2]};
  }

  // Folds the head split of q, k and v and the merge of the result into {heads}
  // when all four are there, alike.
  void fold_heads(const Node& o, Attention& a) const {
    const auto [q, hq] = head_split(a.q);
    const auto [k, hk] = head_split(a.k);
    const auto [v, hv] = head_split(a.v);
    if (hq == 0 || hq != hk || hq != hv || !read_once(o.results[0])) return;
    const size_t merge = reader_of(o.results[0]);
    const Node& transpose = g_.nodes()[merge];
    if (transpose.op() != "transpose" || !swaps_rows_and_heads(transpose.attrs.get_ints("perm")) ||
        !read_once(transpose.results[0]))
      return;
    const size_t merged = reader_of(transpose.results[0]);
    const Node& reshape = g_.nodes()[merged];
    const Shape& split = g_.type(transpose.results[0]).shape;
    Shape packed(split.begin(), split.end() - 2);
    packed.push_back(split[split.size() - 2] * split.back());
    if (reshape.op() != "reshape" || g_.type(reshape.results[0]).shape != packed) return;
    a.q = q;
    a.k = k;
    a.v = v;
    a.heads = hq;
    a.merge_transpose = merge;
    a.merged = merged;
  }

  // The index of a node reading v (the one, when v is read once).
  size_t reader_of(Value v) const { return reader_[static_cast<size_t>(v.id)]; }

  static std::optional<Attention> fail(std::string& why, std::string reason) {
    why = std::move(reason);
    return {};
  }
  bool is_result(Value v) const { return g_.value(v).kind == ValueKind::result; }
  const Node& producer(Value v) const { return g_.producer(v); }
  const std::string& name(Value v) const { return g_.name_of(v); }
  bool read_once(Value v) const { return reads_[static_cast<size_t>(v.id)] == 1; }
  // Made by a matmul, maybe scaled: the scores' side of the mask's add.
  bool is_scores(Value v) const {
    if (!is_result(v)) return false;
    const Node& n = producer(v);
    if (n.op() == "matmul") return true;
    if (n.op() != "mul" && n.op() != "div") return false;
    for (Value x : n.operands)
      if (is_result(x) && producer(x).op() == "matmul") return true;
    return false;
  }
  std::optional<double> scalar(Value v) const {
    if (g_.type(v).numel() != 1 || g_.type(v).dtype != DType::f32) return {};
    return splat_value(g_, v);
  }

  const Graph& g_;
  std::vector<int> reads_;
  std::vector<size_t> reader_;  // by value id: a node reading it
};

}  // namespace

Graph rewrite_flash_attention(const Graph& g, std::ostream* remarks) {
  const Matcher matcher(g);
  GraphRewriter rw(g);
  std::map<size_t, Value> merged;  // a head merge's reshape -> the packed result it stands for
  std::set<size_t> gone;           // the merges' transposes
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (gone.count(i)) continue;
    if (const auto it = merged.find(i); it != merged.end()) {
      rw.replace(n.results[0], it->second);
      continue;
    }
    std::string why;
    const std::optional<Attention> a = matcher.match(n, why);
    if (!a) {
      if (remarks && !why.empty())
        *remarks << "flash-attention: %" << g.name_of(n.results[0]) << " (softmax weights times %"
                 << g.name_of(n.operands[1]) << ") stays as written: " << why << "\n";
      rw.copy(i);
      continue;
    }
    const Value mask = a->mask.valid()
                           ? rw.map(a->mask)
                           : rw.emit(i, "fill", {}, {{"shape", std::vector<int64_t>{}}, {"value", 0.0}}, "no_mask");
    const std::string& name = g.name_of(n.results[0]);
    const Value k = a->k_perm.empty()
                        ? rw.map(a->k)
                        : rw.emit(i, "transpose", {rw.map(a->k)}, {{"perm", a->k_perm}}, g.name_of(a->k) + "_keys");
    const std::vector<Value> o = rw.emit_results(i, "flash_attention", {rw.map(a->q), k, rw.map(a->v), mask},
                                                 {{"scale", a->scale}, {"heads", a->heads}}, {name, name + "_lse"});
    rw.inherit_locations(o[0], n.results[0], {a->q, a->k, a->v, a->mask});
    if (a->heads) {
      merged[a->merged] = o[0];
      gone.insert(a->merge_transpose);
    } else {
      rw.replace(n.results[0], o[0]);
    }
    if (remarks) {
      *remarks << "flash-attention: %" << name << " = flash_attention(%" << g.name_of(a->q) << ", %" << g.name_of(a->k)
               << ", %" << g.name_of(a->v) << ", " << (a->mask.valid() ? "%" + g.name_of(a->mask) : "no mask")
               << ") {scale=" << a->scale;
      if (a->heads)
        *remarks << ", heads=" << a->heads << "}: the scores are never written, and the heads are read and "
                 << "written in the projections' layout (%" << g.name_of(g.nodes()[a->merged].results[0])
                 << " is its result)\n";
      else
        *remarks << "}: the scores are never written\n";
    }
  }
  return rw.finish();
}

}  // namespace kiln::compiler
