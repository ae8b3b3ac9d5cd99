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
// hand-written model gets the same kernel. The chain's values must be read by
// nothing else (a training graph's backward reads the weights %p, so there the
// model builds flash_attention itself and autodiff takes its gradient rule);
// the scores it leaves unread go in dce. One remark per softmax-weighted
// matmul: rewritten, or why not. A row with nothing to attend to (all -inf)
// gives zeros, as flash_attention defines it, where the softmax gave nan.
#include <optional>
#include <ostream>

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
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), reads_(g.num_values(), 0) {
    for (const Node& n : g.nodes())
      for (Value v : n.operands) ++reads_[static_cast<size_t>(v.id)];
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
      const Node& scale = producer(x);
      const bool div = scale.op() == "div";
      const size_t c = !div && scalar(scale.operands[0]) ? 0 : 1;
      const std::optional<double> value = scalar(scale.operands[c]);
      if (!value) return fail(why, "%" + name(x) + " scales by a value that is not a one-element constant");
      a.scale = div ? 1.0 / *value : *value;
      x = scale.operands[1 - c];
    }
    if (!is_result(x) || producer(x).op() != "matmul")
      return fail(why, "its input is not q k^T (a matmul), scaled and masked");
    if (!read_once(x)) return fail(why, "%" + name(x) + " is read elsewhere too");
    const Node& scores = producer(x);
    if (scores.attrs.get_bool("transpose_a") || !scores.attrs.get_bool("transpose_b"))
      return fail(why, "the scores' matmul %" + name(x) + " is not q k^T with k read transposed");
    // The mask and scale must not widen the scores (add and mul would broadcast them).
    if (!(g_.type(softmax.operands[0]) == g_.type(x)))
      return fail(why, "the mask or scale broadcasts the scores to another shape");
    a.q = scores.operands[0];
    a.k = scores.operands[1];
    for (Value v : {a.q, a.k, a.v})
      if (g_.type(v).dtype != DType::f32) return fail(why, "%" + name(v) + " is not f32");
    const Shape &q = g_.type(a.q).shape, &k = g_.type(a.k).shape, &v = g_.type(a.v).shape;
    if (leading(k) != leading(q) || leading(v) != leading(q))
      return fail(why, "q, k and v differ in their batch dims (flash_attention broadcasts none)");
    if (a.mask.valid() && g_.type(a.mask).dtype != DType::f32) return fail(why, "the mask is not f32");
    return a;
  }

 private:
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
};

}  // namespace

Graph rewrite_flash_attention(const Graph& g, std::ostream* remarks) {
  const Matcher matcher(g);
  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
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
    const std::vector<Value> o = rw.emit_results(i, "flash_attention", {rw.map(a->q), rw.map(a->k), rw.map(a->v), mask},
                                                 {{"scale", a->scale}}, {name, name + "_lse"});
    rw.replace(n.results[0], o[0]);
    if (remarks)
      *remarks << "flash-attention: %" << name << " = flash_attention(%" << g.name_of(a->q) << ", %" << g.name_of(a->k)
               << ", %" << g.name_of(a->v) << ", " << (a->mask.valid() ? "%" + g.name_of(a->mask) : "no mask")
               << ") {scale=" << a->scale << "}: the scores are never written\n";
  }
  return rw.finish();
}

}  // namespace kiln::compiler
