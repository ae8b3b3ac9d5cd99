#include "compiler/passes/fusion.h"

#include <algorithm>
#include <map>
#include <memory>
#include <ostream>
#include <queue>
#include <set>

#include "compiler/gemm_shapes.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/fusion_kind.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {

namespace {

// The most nodes one fusion owns. LLVM's time on one function grows faster than
// its size (a chain of 1,000 elementwise ops fused into one loop took 3.3 s of
// codegen, of 2,000 ops 17 s), so a long chain becomes a few kernels instead:
// compile time stays linear in the graph's size. Transformer fusions hold < 30.
constexpr size_t kMaxFusedNodes = 64;

// A concat of more operands than a fusion takes (kMaxFusedConcatOperands): a
// kernel of its own that copies its operands from memory.
bool is_wide_concat(const Node& n) { return n.op() == "concat" && n.operands.size() > kMaxFusedConcatOperands; }
std::string wide_concat_reason(const Node& n) {
  return "a concat of " + std::to_string(n.operands.size()) +
         " operands is a kernel of its own (fused, every element would choose among them; alone, it copies each one)";
}
bool is_elemental(const Node& n) { return n.def->elemental(); }
// A kernel op that reads its operands through generators, so elemental
// producers fuse into it.
bool fuses_producers(const Node& n) { return n.def->lowering == Lowering::fuses_producers; }

struct Group {
  int root = -1;
  std::set<int> members;  // owned nodes (the root included)
  std::set<int> copies;   // constants and index ops recomputed here
  std::vector<int> extra_outputs;
  std::vector<int> column_sums;  // sums of the rows of the epilogue's matmul's operand B
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
  std::string label(int i) const { return node_label(g_, node(i)); }

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
      if (m != group.root && node(m).def->takes_epilogue) return m;
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
    if (!pn.def->takes_epilogue) return own_kernel + "its result goes through memory";
    const Node& r = node(group.root);
    if (!is_elemental(r)) return own_kernel + r.op() + " reads its result from memory (only a loop is an epilogue)";
    if (hero_of(group)) return own_kernel + "the loop already fuses a kernel op";
    bool compute_outside = false, sink_outside = false;
    outside_users(p, group, compute_outside, sink_outside);
    if (compute_outside) return own_kernel + "its result is also used outside this loop";
    if (sink_outside) return own_kernel + "its result is stored for an assign or output";
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
      if (!mn.def->elementwise || !(g_.type(mn.results[0]).shape == type.shape))
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
    copy_packed_casts(group, root);
    // Only elemental consumers and the heroes that read generators absorb producers.
    if (!is_elemental(r) && !fuses_producers(r)) return;
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
      // Fused, a producer is computed only where its consumer reads it (not
      // outside a slice, not in a row cross_entropy ignores), so one that
      // checks its operands stays a kernel of its own and, like the
      // interpreter, checks every element it makes.
      if (may_fail(g_, pn)) {
        decide(p, root, "it can fail at run time, so it checks all its elements in a kernel of its own");
        continue;
      }
      // A value is rounded to bf16 to be stored at half the bytes (what a
      // backward keeps: bf16-matmuls, bf16-saves); recomputed in a consumer,
      // the cast would read the f32 value instead and keep it alive.
      if (is_bf16_cast(g_, pn)) {
        decide(p, root, "a cast to bf16 is stored, so that its f32 operand need not live until " + label(root));
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
        if (refusal.empty()) {
          own(group, gi, p);  // its operands stay in memory: no producers to absorb
          copy_packed_casts(group, p);
        } else
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

  // A matmul's bf16 casts of params (or inputs) are recomputed in its kernel:
  // the GEMM rounds the f32 param as it packs it (codegen/gemm.h), so no bf16
  // copy of the weights is made, nor kept from the forward pass to the
  // backward. Not for a product the few-rows GEMM takes (it reads B in place).
  void copy_packed_casts(Group& group, int m) {
    const Node& mm = node(m);
    if (mm.op() != "matmul") return;
    const Shape& out = g_.type(mm.results[0]).shape;
    if (!mm.attrs.get_bool("transpose_a") && mm.attrs.get_bool("transpose_b") && out[out.size() - 2] <= kGemmRowsMaxM)
      return;
    for (Value v : mm.operands)
      if (g_.value(v).kind == ValueKind::result && is_bf16_cast_of_declaration(g_, g_.producer(v)))
        group.copies.insert(g_.value(v).node);
  }

  void own(Group& group, int gi, int p) {
    group.members.insert(p);
    owner_[static_cast<size_t>(p)] = gi;
  }

  // A constant, or an op moving the elements of a declaration: free to recompute.
  bool is_copyable(const Node& n) const {
    if (n.def->constant) return true;
    return n.def->moves_elements && g_.value(n.operands[0]).kind != ValueKind::result;
  }

  // The kernel's structure, which codegen dispatches on: the decisions above
  // build only these.
  FusionKind kind_of(const Group& group) const {
    if (epilogue_hero(group) >= 0) return FusionKind::epilogue;
    if (!is_elemental(node(group.root))) return FusionKind::input;  // a kernel op reading its producers' generators
    return hero_of(group) ? FusionKind::row : FusionKind::loop;
  }

  // An epilogue of several results, or whose result goes to an assign (an
  // optimizer's update of the param whose gradient the matmul makes, an
  // accumulated gradient), stores the matmul's product in a buffer of its own:
  // the results may then overwrite in place the param and state the epilogue
  // reads (codegen/kernel_codegen.h).
  bool stores_product(const Group& group) const {
    if (kind_of(group) != FusionKind::epilogue) return false;
    if (!group.extra_outputs.empty()) return true;
    for (Value r : node(group.root).results)
      for (int u : users_[static_cast<size_t>(r.id)])
        if (node(u).def->side_effect) return true;
    return false;
  }

  // Where an epilogue that stores its product runs, if not at its root: right
  // after its kernel op, or after the last node that reads what it assigns (a
  // param's update waits for the backward product that still reads the param),
  // whichever is later. Run at its root, at the end of the step, an optimizer's
  // update would keep its gradient's operands alive until then. -1: at its root.
  int early_position(const Group& group) const {
    if (!stores_product(group)) return -1;
    int at = epilogue_hero(group);
    std::vector<int> results = group.extra_outputs;
    results.push_back(group.root);
    for (int s : results)
      for (Value r : node(s).results)
        for (int a : users_[static_cast<size_t>(r.id)]) {
          if (!node(a).def->side_effect) continue;
          for (int u : users_[static_cast<size_t>(node(a).operands[0].id)]) {
            if (group.members.count(u) || node(u).def->side_effect) continue;
            at = std::max(at, position_of(u));
            for (int other : copied_in_[static_cast<size_t>(u)])  // kernels reading the target through a copy of u
              at = std::max(at, position_[static_cast<size_t>(other)]);
          }
        }
    return at < group.root ? at : -1;
  }

  // Where the group of node n is emitted: right after this node's index.
  int position_of(int n) const { return position_[static_cast<size_t>(owner_[static_cast<size_t>(n)])]; }

  // Whether every value the group reads from outside is made by a group emitted by `at`.
  bool inputs_before(const Group& group, int at) const {
    for (const std::set<int>* nodes : {&group.members, &group.copies})
      for (int m : *nodes)
        for (Value v : node(m).operands) {
          const ValueInfo& info = g_.value(v);
          if (info.kind == ValueKind::result && !group.members.count(info.node) && !group.copies.count(info.node) &&
              position_of(info.node) > at)
            return false;
        }
    return true;
  }

  // Each group runs at its root, an epilogue storing its product earlier where
  // it can (early_position).
  void place_groups() {
    position_.resize(groups_.size());
    copied_in_.assign(g_.nodes().size(), {});
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      position_[gi] = groups_[gi].root;
      for (int c : groups_[gi].copies) copied_in_[static_cast<size_t>(c)].push_back(static_cast<int>(gi));
    }
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      if (const int at = early_position(groups_[gi]); at >= 0 && inputs_before(groups_[gi], at)) position_[gi] = at;
  }

  // A sum of the rows of an epilogue's matmul's operand B (the bias gradient
  // beside x^T dy) joins the epilogue, which computes it as it packs B
  // (codegen/gemm.h), if it is a kernel of its own and nothing reads it before
  // the epilogue runs: B is then read once for both.
  void absorb_column_sums() {
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      Group& group = groups_[gi];
      const int hero = epilogue_hero(group);
      if (hero < 0 || owner_[static_cast<size_t>(group.root)] != static_cast<int>(gi)) continue;
      const Node& h = node(hero);
      if (h.op() != "matmul") continue;
      for (int u : users_[static_cast<size_t>(h.operands[1].id)]) {
        if (!is_column_sum_of_b(g_, node(u), h)) continue;
        const auto ui = static_cast<size_t>(owner_[static_cast<size_t>(u)]);
        const Group& alone = groups_[ui];
        if (alone.root != u || alone.members.size() != 1 || !alone.copies.empty()) continue;
        bool read_later = true;
        for (Value r : node(u).results)
          for (int reader : users_[static_cast<size_t>(r.id)])
            read_later = read_later && (node(reader).def->side_effect || position_of(reader) > position_[gi]);
        if (!read_later) {
          decide(u, group.root, "it is read before " + label(hero) + "'s kernel runs");
          continue;
        }
        own(group, static_cast<int>(gi), u);
        group.column_sums.push_back(u);
        break;  // one per matmul
      }
    }
  }

  Graph build() {
    place_groups();
    absorb_column_sums();
    // By position; at one node, the group rooted there before those placed after it.
    std::multimap<std::pair<int, bool>, size_t> at_position;
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      if (owner_[static_cast<size_t>(groups_[gi].root)] == static_cast<int>(gi))  // not absorbed
        at_position.emplace(std::pair{position_[gi], position_[gi] != groups_[gi].root}, gi);
    GraphRewriter rw(g_);
    std::vector<size_t> assigns;
    for (int i = 0; i < static_cast<int>(g_.nodes().size()); ++i) {
      if (node(i).def->side_effect) {
        assigns.push_back(static_cast<size_t>(i));  // after every fusion: their values may come from a later one
        continue;
      }
      for (auto at = at_position.lower_bound({i, false}); at != at_position.end() && at->first.first == i; ++at) {
        const Group& group = groups_[at->second];
        if (group.members.size() == 1 && group.copies.empty())
          rw.copy(static_cast<size_t>(group.root));
        else
          emit_fusion(group, rw);
      }
    }
    for (size_t a : assigns) rw.copy(a);
    return rw.finish();
  }

  // The group's body, and the values of g_ its fusion node replaces.
  ExtractedBody extract(const Group& group, std::vector<Value>* replaced = nullptr) const {
    std::set<int> members = group.members;
    members.insert(group.copies.begin(), group.copies.end());
    const std::vector<size_t> nodes(members.begin(), members.end());
    std::vector<Value> results = node(group.root).results;  // then the extra outputs', then the stored product
    for (int i : group.extra_outputs)
      for (Value r : node(i).results) results.push_back(r);
    if (stores_product(group))
      for (Value r : node(epilogue_hero(group)).results) results.push_back(r);
    for (int c : group.column_sums)
      for (Value r : node(c).results) results.push_back(r);
    if (replaced) *replaced = results;
    return extract_body(g_, nodes, results, "f_" + g_.name_of(node(group.root).results[0]));
  }

  // What the group's kernel is built around (engine/ir/fusion_kind.h), by the
  // index in its body of each node: extract() puts the members and copies in
  // node order.
  FusionRoles roles_of(const Group& group) const {
    std::set<int> nodes = group.members;
    nodes.insert(group.copies.begin(), group.copies.end());
    const auto index = [&nodes](int m) { return static_cast<int64_t>(std::distance(nodes.begin(), nodes.find(m))); };
    FusionRoles roles;
    roles.kind = kind_of(group);
    switch (roles.kind) {
      case FusionKind::input:
        roles.hero = index(group.root);
        break;
      case FusionKind::epilogue:
        roles.hero = index(epilogue_hero(group));
        for (int c : group.column_sums) roles.column_sum = index(c);
        roles.stores_product = stores_product(group);
        break;
      case FusionKind::row:
        for (int m : group.members)
          if (!is_elemental(node(m))) roles.reductions.push_back(index(m));
        break;
      case FusionKind::loop:
      case FusionKind::horizontal:
        break;
    }
    return roles;
  }

  void emit_fusion(const Group& group, GraphRewriter& rw) {
    std::vector<Value> replaced;
    const ExtractedBody body = extract(group, &replaced);
    std::vector<Value> operands;
    for (Value v : body.inputs) operands.push_back(rw.map(v));
    rw.emit_fusion(body.graph, operands, fusion_attrs(roles_of(group)), replaced);
  }

  const Graph& g_;
  std::ostream* decisions_;
  std::vector<std::vector<int>> users_;
  std::vector<bool> is_output_;
  std::vector<int> owner_;  // group index per node, -1: not yet grouped
  std::vector<Group> groups_;
  std::vector<int> position_;                // per group: emitted right after this node index
  std::vector<std::vector<int>> copied_in_;  // per node: the groups that recompute it
};

}  // namespace

Graph fuse(const Graph& g, std::ostream* decisions) {
  return Fuser(g, decisions).run();
}

}  // namespace kiln::compiler
