#include "compiler/passes/fusion.h"

#include <map>
#include <memory>
#include <ostream>
#include <queue>
#include <set>

#include "compiler/codegen/concat_copies.h"
#include "compiler/codegen/emitter_registry.h"
#include "compiler/codegen/kernel_codegen.h"
#include "compiler/passes/passes.h"
#include "compiler/schedule/kernel.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {

namespace {

// Kernel ops that read their operands through generators, so elemental
// producers fuse into them.
const std::set<std::string> kGeneratorHeroes = {"sum",    "mean",        "max",        "softmax",
                                                "layer_norm", "log_softmax", "cross_entropy"};
// Cheap to recompute in every consumer.
const std::set<std::string> kConstants = {"fill", "iota", "causal_mask"};
const std::set<std::string> kIndexOps = {"reshape", "broadcast", "transpose", "slice", "identity", "stop_gradient"};
// The most nodes one fusion owns. LLVM's time on one function grows faster than
// its size (a chain of 1,000 elementwise ops fused into one loop took 3.3 s of
// codegen, of 2,000 ops 17 s), so a long chain becomes a few kernels instead:
// compile time stays linear in the graph's size. Transformer fusions hold < 30.
constexpr size_t kMaxFusedNodes = 64;

const OpEmitter* emitter_of(const Node& n) { return EmitterRegistry::global().find(n.op()); }

// Elemental ops whose code reports run-time errors (an i32 division by zero, a
// gather index out of range). Fused, a producer is computed only where its
// consumer reads it: not outside a slice, not in a row cross_entropy ignores. So
// such an op stays a kernel of its own and, like the interpreter, checks every
// element it makes.
bool may_fail(const Graph& g, const Node& n) {
  return n.op() == "gather" || (n.op() == "div" && g.type(n.results[0]).dtype == DType::i32);
}
// A concat of more operands than a fusion takes (codegen/concat_copies.h): a
// kernel of its own that copies its operands from memory.
bool is_wide_concat(const Node& n) { return n.op() == "concat" && n.operands.size() > kMaxFusedConcatOperands; }
std::string wide_concat_reason(const Node& n) {
  return "a concat of " + std::to_string(n.operands.size()) +
         " operands is a kernel of its own (fused, every element would choose among them; alone, it copies each one)";
}
bool is_elemental(const Node& n) {
  const OpEmitter* e = emitter_of(n);
  return e && e->elemental;
}

// Copies `g` node by node through `emit`, which returns the new results of a node
// given its operands already mapped (or nothing to drop a node whose results
// nobody uses). Declarations, outputs and assigns keep their names.
class Rewriter {
 public:
  explicit Rewriter(const Graph& g) : g_(g), out_(g.name()), b_(out_), map_(g.num_values()) {
    for (Value v : g.declarations())
      map_[static_cast<size_t>(v.id)] = out_.declare(g.value(v).kind, g.name_of(v), g.type(v), g.value(v).attrs);
  }
  Value mapped(Value v) const { return map_[static_cast<size_t>(v.id)]; }
  void set(Value from, Value to) { map_[static_cast<size_t>(from.id)] = to; }
  Builder& builder() { return b_; }
  // Re-emits `n` with mapped operands, keeping its result names.
  void copy(const Node& n) {
    std::vector<Value> operands;
    for (Value v : n.operands) operands.push_back(mapped(v));
    std::vector<std::string> names;
    for (Value r : n.results) names.push_back(g_.name_of(r));
    const std::vector<Value> results =
        n.body ? b_.emit_fusion(n.body, operands, n.attrs, names) : b_.emit(n.op(), operands, n.attrs, names);
    for (size_t i = 0; i < results.size(); ++i) set(n.results[i], results[i]);
  }
  Graph finish() {
    for (Value v : g_.outputs()) out_.add_output(mapped(v));
    return std::move(out_);
  }

 private:
  const Graph& g_;
  Graph out_;
  Builder b_;
  std::vector<Value> map_;
};

// The transpose `perm` swaps the last two axes and keeps the others.
bool swaps_last_two(const std::vector<int64_t>& perm) {
  const size_t r = perm.size();
  if (r < 2) return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return perm[r - 2] == static_cast<int64_t>(r - 1) && perm[r - 1] == static_cast<int64_t>(r - 2);
}

// matmul(transpose(x), y) -> matmul(x, y) {transpose_a = !transpose_a}, likewise
// for y.
Graph fold_matmul_transposes(const Graph& g) {
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    if (n.op() != "matmul") {
      rw.copy(n);
      continue;
    }
    std::vector<Value> operands;
    Attrs attrs = n.attrs;
    const char* flags[] = {"transpose_a", "transpose_b"};
    for (size_t i = 0; i < 2; ++i) {
      const Value v = n.operands[i];
      const ValueInfo& info = g.value(v);
      if (info.kind == ValueKind::result && g.producer(v).op() == "transpose" &&
          swaps_last_two(g.producer(v).attrs.get_ints("perm"))) {
        operands.push_back(rw.mapped(g.producer(v).operands[0]));
        attrs.set(flags[i], !n.attrs.get_bool(flags[i]));
      } else {
        operands.push_back(rw.mapped(v));
      }
    }
    const Value r = rw.builder().emit1("matmul", operands, attrs, g.name_of(n.results[0]));
    rw.set(n.results[0], r);
  }
  return rw.finish();
}

struct Group {
  int root = -1;
  std::set<int> members;  // owned nodes (the root included)
  std::set<int> copies;   // constants and index ops recomputed here
  std::vector<int> extra_outputs;
};

class Fuser {
 public:
  Fuser(const Graph& g, std::ostream* decisions) : g_(g), decisions_(decisions), owner_(g.nodes().size(), -1) {
    users_.resize(g.num_values());
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (Value v : g.nodes()[i].operands) users_[static_cast<size_t>(v.id)].push_back(static_cast<int>(i));
    is_output_.assign(g.num_values(), false);
    for (Value v : g.outputs()) is_output_[static_cast<size_t>(v.id)] = true;
  }

  Graph run() {
    for (int i = static_cast<int>(g_.nodes().size()); i-- > 0;) {
      const Node& n = g_.nodes()[static_cast<size_t>(i)];
      if (owner_[static_cast<size_t>(i)] >= 0 || n.def->side_effect) continue;
      grow(i);
    }
    return build();
  }

 private:
  const Node& node(int i) const { return g_.nodes()[static_cast<size_t>(i)]; }
  std::string label(int i) const { return "%" + g_.name_of(node(i).results[0]) + " (" + node(i).op() + ")"; }

  void decide(int producer, int root, const std::string& reason) {
    if (decisions_) *decisions_ << "not fused: " << label(producer) << " into " << label(root) << ": " << reason << "\n";
  }

  // Users of node p's results that are not in group `gi`; assigns and graph
  // outputs count as `outside_sinks`. Stops at the first outside user that
  // computes (no caller looks further), so a constant read by every one of
  // 100,000 groups costs each group one look, not 100,000.
  void outside_users(int p, const Group& group, bool& compute_outside, bool& sink_outside) const {
    compute_outside = sink_outside = false;
    for (Value r : node(p).results) {
      if (is_output_[static_cast<size_t>(r.id)]) sink_outside = true;
      for (int u : users_[static_cast<size_t>(r.id)]) {
        if (group.members.count(u)) continue;
        if (!node(u).def->side_effect) {
          compute_outside = true;
          return;
        }
        sink_outside = true;
      }
    }
  }

  bool hero_of(const Group& group) const {
    for (int m : group.members)
      if (!is_elemental(node(m))) return true;
    return false;
  }

  // The kernel op under the loop `group` as its epilogue, or -1.
  int epilogue_hero(const Group& group) const {
    for (int m : group.members)
      if (const OpEmitter* e = emitter_of(node(m)); m != group.root && e && e->epilogue) return m;
    return -1;
  }

  // The group's epilogue hero if it reads a result of node p (from memory), or -1.
  int hero_reading(const Group& group, int p) const {
    const int hero = epilogue_hero(group);
    if (hero < 0) return -1;
    for (Value v : node(hero).operands)
      if (g_.value(v).kind == ValueKind::result && g_.value(v).node == p) return hero;
    return -1;
  }

  // Why the kernel op p cannot become the hero of the loop `group`, whose
  // members then are its epilogue; "" if it can.
  std::string epilogue_refusal(const Group& group, int p) const {
    const Node& pn = node(p);
    const std::string own_kernel = pn.op() + " is a kernel of its own: ";
    const OpEmitter* e = emitter_of(pn);
    if (!e || !e->epilogue) return own_kernel + "its result goes through memory";
    const Node& r = node(group.root);
    if (!is_elemental(r)) return own_kernel + r.op() + " reads its result from memory (only a loop is an epilogue)";
    if (hero_of(group)) return own_kernel + "the loop already fuses a kernel op";
    bool compute_outside = false, sink_outside = false;
    outside_users(p, group, compute_outside, sink_outside);
    if (compute_outside) return own_kernel + "its result is also used outside this loop";
    if (sink_outside) return own_kernel + "its result is stored for an assign or output";
    if (!group.extra_outputs.empty()) return "the loop also stores " + label(group.extra_outputs.front());
    // Candidates come in decreasing node order, so every member is later than p:
    // walk them in order from p's result.
    const TensorType& type = g_.type(pn.results[0]);
    std::vector<bool> reached(g_.num_values(), false);
    reached[static_cast<size_t>(pn.results[0].id)] = true;
    for (int m : group.members) {
      const Node& mn = node(m);
      bool reads = false;
      for (Value v : mn.operands) reads = reads || reached[static_cast<size_t>(v.id)];
      if (!reads) continue;
      if (!emitter_of(mn)->pointwise || !(g_.type(mn.results[0]).shape == type.shape))
        return label(m) + " reads its result at other indices than its own";
      reached[static_cast<size_t>(mn.results[0].id)] = true;
    }
    if (!(g_.type(r.results[0]) == type)) return "the loop's result type differs from its own";
    return "";
  }

  void grow(int root) {
    const auto gi = static_cast<int>(groups_.size());
    Group& group = groups_.emplace_back();
    group.root = root;
    group.members.insert(root);
    owner_[static_cast<size_t>(root)] = gi;
    const Node& r = node(root);
    // Only elemental consumers and the heroes that read generators absorb producers.
    if (!is_elemental(r) && !kGeneratorHeroes.count(r.op())) return;
    if (is_wide_concat(r)) {
      for (Value v : r.operands)
        if (g_.value(v).kind == ValueKind::result) decide(g_.value(v).node, root, wide_concat_reason(r));
      return;
    }
    const Shape loop_shape = g_.type(r.results[0]).shape;
    std::priority_queue<int> candidates;
    std::set<int> seen;
    const auto push_producers = [&](int m) {
      for (Value v : node(m).operands)
        if (g_.value(v).kind == ValueKind::result) candidates.push(g_.value(v).node);
    };
    push_producers(root);
    while (!candidates.empty()) {
      const int p = candidates.top();
      candidates.pop();
      if (!seen.insert(p).second || group.members.count(p)) continue;
      const Node& pn = node(p);
      if (group.members.size() >= kMaxFusedNodes) {
        decide(p, root, "the fusion already holds " + std::to_string(kMaxFusedNodes) + " nodes (a bigger kernel compiles slower than its parts)");
        continue;
      }
      if (owner_[static_cast<size_t>(p)] >= 0) {
        decide(p, root,
               "already fused into " + label(groups_[static_cast<size_t>(owner_[static_cast<size_t>(p)])].root));
        continue;
      }
      if (is_wide_concat(pn)) {
        decide(p, root, wide_concat_reason(pn));
        continue;
      }
      if (may_fail(g_, pn)) {
        decide(p, root, "it can fail at run time, so it checks all its elements in a kernel of its own");
        continue;
      }
      if (!is_elemental(pn) && is_elemental(r) && epilogue_hero(group) < 0 && is_row_reduction_of(g_, pn, loop_shape)) {
        bool compute_outside = false, sink_outside = false;
        outside_users(p, group, compute_outside, sink_outside);
        if (!compute_outside && !sink_outside) {
          own(group, gi, p);  // row fusion: reduced per row, then broadcast along it
          push_producers(p);
          continue;
        }
      }
      if (!is_elemental(pn)) {
        const std::string refusal = epilogue_refusal(group, p);
        if (refusal.empty())
          own(group, gi, p);  // its operands stay in memory: no producers to absorb
        else
          decide(p, root, refusal);
        continue;
      }
      if (const int hero = hero_reading(group, p); hero >= 0) {
        decide(p, root, "it feeds " + label(hero) + ", which reads its operands from memory");
        continue;
      }
      bool compute_outside = false, sink_outside = false;
      outside_users(p, group, compute_outside, sink_outside);
      if (!compute_outside && !sink_outside) {
        own(group, gi, p);
        push_producers(p);
      } else if (!compute_outside && !hero_of(group) && g_.type(pn.results[0]).shape == loop_shape) {
        own(group, gi, p);  // computed here and stored for its assigns / graph outputs
        group.extra_outputs.push_back(p);
        push_producers(p);
      } else if (is_copyable(pn)) {
        group.copies.insert(p);
      } else {
        decide(p, root,
               compute_outside ? "its result is also used outside this fusion, so it is computed once and stored"
                               : "it is stored for an assign or output and the loop's shape differs");
      }
    }
  }

  void own(Group& group, int gi, int p) {
    group.members.insert(p);
    owner_[static_cast<size_t>(p)] = gi;
  }

  // A constant, or an index op reading a declaration: free to recompute.
  bool is_copyable(const Node& n) const {
    if (kConstants.count(n.op())) return true;
    return kIndexOps.count(n.op()) && g_.value(n.operands[0]).kind != ValueKind::result;
  }

  std::string kind_of(const Group& group) const {
    const Node& r = node(group.root);
    if (const int hero = epilogue_hero(group); hero >= 0) return node(hero).op();
    if (is_elemental(r)) {
      if (!hero_of(group)) return "loop";
      return is_attention_backward(group) ? "attention_backward" : "row";
    }
    if (r.op() == "softmax" && is_attention_softmax(r, group)) return "attention";
    return r.op();
  }

  // softmax's backward through a scale, y * (dy - sum(dy * y)) * scale: a row
  // fusion with sum(mul(a, b)), sub(a, that sum) and a mul by a scalar.
  bool is_attention_backward(const Group& group) const {
    bool scaled = false;
    for (int m : group.members)
      if (node(m).op() == "mul")
        for (Value v : node(m).operands) scaled = scaled || g_.type(v).numel() == 1;
    for (int m : group.members) {
      const Node& sum = node(m);
      if (sum.op() != "sum" || g_.value(sum.operands[0]).kind != ValueKind::result) continue;
      const Node& product = g_.producer(sum.operands[0]);
      if (product.op() != "mul") continue;
      for (int s : group.members) {
        const Node& sub = node(s);
        if (sub.op() == "sub" && sub.operands[1] == sum.results[0] &&
            (sub.operands[0] == product.operands[0] || sub.operands[0] == product.operands[1]))
          return scaled;
      }
    }
    return false;
  }

  // softmax(x * scale + mask) with a scalar (or broadcast) scale, in this group.
  bool is_attention_softmax(const Node& softmax, const Group& group) const {
    const auto fused_producer = [&](Value v, const char* op) -> const Node* {
      if (g_.value(v).kind != ValueKind::result) return nullptr;
      const int p = g_.value(v).node;
      if (!group.members.count(p) || node(p).op() != op) return nullptr;
      return &node(p);
    };
    const Node* add = fused_producer(softmax.operands[0], "add");
    if (!add) return false;
    for (Value v : add->operands)
      if (const Node* mul = fused_producer(v, "mul"))
        for (Value s : mul->operands)
          if (g_.type(s).numel() == 1) return true;
    return false;
  }

  Graph build() {
    Rewriter rw(g_);
    std::vector<const Node*> assigns;
    for (int i = 0; i < static_cast<int>(g_.nodes().size()); ++i) {
      const Node& n = node(i);
      if (n.def->side_effect) {
        assigns.push_back(&n);  // after every fusion: their values may come from a later one
        continue;
      }
      const Group& group = groups_[static_cast<size_t>(owner_[static_cast<size_t>(i)])];
      if (group.root != i) continue;  // emitted with its root
      if (group.members.size() == 1 && group.copies.empty()) {
        rw.copy(n);
        continue;
      }
      emit_fusion(group, rw);
    }
    for (const Node* a : assigns) rw.builder().emit(a->op(), {rw.mapped(a->operands[0]), rw.mapped(a->operands[1])});
    return rw.finish();
  }

  void emit_fusion(const Group& group, Rewriter& rw) {
    auto body = std::make_shared<Graph>("f_" + g_.name_of(node(group.root).results[0]));
    Builder bb(*body);
    std::map<int32_t, Value> inner;  // outer value id -> body value
    std::vector<Value> operands;
    const auto value_in_body = [&](Value v) {
      auto it = inner.find(v.id);
      if (it != inner.end()) return it->second;
      const Value in = body->declare(ValueKind::input, numbered("p", operands.size()), g_.type(v));
      operands.push_back(rw.mapped(v));
      return inner[v.id] = in;
    };
    std::set<int> nodes = group.members;
    nodes.insert(group.copies.begin(), group.copies.end());
    for (int i : nodes) {
      const Node& n = node(i);
      std::vector<Value> args;
      for (Value v : n.operands) args.push_back(value_in_body(v));
      std::vector<std::string> names;
      for (Value r : n.results) names.push_back(g_.name_of(r));
      const std::vector<Value> results = bb.emit(n.op(), args, n.attrs, names);
      for (size_t k = 0; k < results.size(); ++k) inner[n.results[k].id] = results[k];
    }
    std::vector<Value> outer_results;
    std::vector<std::string> names;
    const auto add_output = [&](int i) {
      for (Value r : node(i).results) {
        body->add_output(inner.at(r.id));
        outer_results.push_back(r);
        names.push_back(g_.name_of(r));
      }
    };
    add_output(group.root);
    for (int i : group.extra_outputs) add_output(i);
    const std::vector<Value> results =
        rw.builder().emit_fusion(std::move(body), operands, {{"kind", kind_of(group)}}, names);
    for (size_t k = 0; k < results.size(); ++k) rw.set(outer_results[k], results[k]);
  }

  const Graph& g_;
  std::ostream* decisions_;
  std::vector<std::vector<int>> users_;
  std::vector<bool> is_output_;
  std::vector<int> owner_;  // group index per node, -1: not yet grouped
  std::vector<Group> groups_;
};

// Loop fusions whose every result goes only to assigns (an optimizer's update
// of each param and its moments) merged into one `horizontal` fusion at the end
// of the step: one kernel, one pass over each param, its grad and its moments.
Graph merge_updates(const Graph& g) {
  std::vector<bool> to_assign_only(g.num_values(), true);
  for (Value v : g.outputs()) to_assign_only[static_cast<size_t>(v.id)] = false;
  for (const Node& n : g.nodes())
    if (!n.def->side_effect)
      for (Value v : n.operands) to_assign_only[static_cast<size_t>(v.id)] = false;
  std::vector<const Node*> updates;
  std::set<const Node*> is_update;
  for (const Node& n : g.nodes()) {
    if (!n.body || n.attrs.get_string("kind") != "loop") continue;
    bool sink = true;
    for (Value r : n.results) sink = sink && to_assign_only[static_cast<size_t>(r.id)];
    if (sink) {
      updates.push_back(&n);
      is_update.insert(&n);
    }
  }
  if (updates.size() < 2) return g;

  Rewriter rw(g);
  std::vector<const Node*> assigns;
  for (const Node& n : g.nodes()) {
    if (n.def->side_effect) assigns.push_back(&n);
    else if (!is_update.count(&n)) rw.copy(n);
  }
  auto body = std::make_shared<Graph>("f_updates");
  Builder bb(*body);
  std::map<int32_t, Value> input_of;  // outer value id -> body input
  std::vector<Value> operands, outer_results;
  std::vector<std::string> names;
  for (const Node* u : updates) {
    const Graph& ub = *u->body;
    std::map<int32_t, Value> local;
    for (size_t i = 0; i < ub.declarations().size(); ++i) {
      const Value outer = u->operands[i];
      auto it = input_of.find(outer.id);
      if (it == input_of.end()) {
        it = input_of.emplace(outer.id, body->declare(ValueKind::input, numbered("p", operands.size()), g.type(outer)))
                 .first;
        operands.push_back(rw.mapped(outer));
      }
      local[ub.declarations()[i].id] = it->second;
    }
    for (const Node& n : ub.nodes()) {
      std::vector<Value> args;
      for (Value v : n.operands) args.push_back(local.at(v.id));
      // A constant copied into many updates has one name in each: a repeat gets a
      // fresh number (a suffix search for `h_16000` would cost each repeat them all).
      std::vector<std::string> result_names;
      for (Value r : n.results) result_names.push_back(body->find(ub.name_of(r)) ? std::string() : ub.name_of(r));
      const std::vector<Value> results = bb.emit(n.op(), args, n.attrs, result_names);
      for (size_t k = 0; k < results.size(); ++k) local[n.results[k].id] = results[k];
    }
    for (Value o : ub.outputs()) body->add_output(local.at(o.id));
    for (Value r : u->results) {
      outer_results.push_back(r);
      names.push_back(g.name_of(r));
    }
  }
  const std::vector<Value> results = rw.builder().emit_fusion(std::move(body), operands, {{"kind", "horizontal"}}, names);
  for (size_t k = 0; k < results.size(); ++k) rw.set(outer_results[k], results[k]);
  for (const Node* a : assigns) rw.copy(*a);
  return rw.finish();
}

}  // namespace

Graph fuse(const Graph& g, std::ostream* decisions) {
  register_all_emitters();
  // dce drops what folding and copying leave unread: a transpose folded into a
  // matmul, a constant every consumer copied.
  const Graph folded = dce(fold_matmul_transposes(g));
  return merge_updates(dce(Fuser(folded, decisions).run()));
}

}  // namespace kiln::compiler
