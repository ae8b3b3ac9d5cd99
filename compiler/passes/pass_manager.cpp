#include "compiler/passes/pass_manager.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "compiler/dump_dir.h"
#include "compiler/passes/fusion.h"
#include "compiler/passes/passes.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"

namespace kiln::compiler {

void register_builtin_passes(PassRegistry& r) {
  // constant-fold first: simplify's rules match fills, including the ones folding
  // makes ((x*(2+1))*0.5 -> x*1.5), and simplify leaves nothing for folding to do.
  const auto plain = [](Graph (*pass)(const Graph&)) {
    return [pass](const Graph& g, std::ostream*) { return pass(g); };
  };
  r.add({"constant-fold", "replaces ops of constants whose result is a splat by a fill", plain(constant_fold)}, true);
  r.add({"simplify", "algebraic simplification: x*1, x/1, neg(neg(x)), transpose/reshape/broadcast chains, ...",
         plain(simplify)},
        true);
  // transpose-folding after simplify, which cancels transpose pairs first; the
  // transposes it leaves unread go in dce.
  r.add({"transpose-folding", "reads a matmul operand's last-two-axes transpose through its transpose flag",
         plain(fold_transposes)},
        true);
  // pretranspose-weights after transpose-folding, which would fold its
  // transposes back into the flag; before cse, which merges the transposes of
  // one param read through different reshapes.
  r.add({"pretranspose-weights",
         "matmul(a, w) of few rows by a param never assigned reads w transposed once per binding, unpacked",
         [](const Graph& g, std::ostream* remarks) { return pretranspose_weights(g, remarks); }},
        true);
  r.add({"cse", "merges nodes with the same op, operands, attributes and result types", plain(cse)}, true);
  // linear-cross-entropy after transpose-folding, which makes a tied
  // projection's transpose its flag; before bf16-matmuls, which would cast the
  // product's operands first. dce then drops the matmul it leaves unread.
  r.add({"linear-cross-entropy", "rewrites cross_entropy(matmul(h, w^T)), written out, to linear_cross_entropy",
         [](const Graph& g, std::ostream* remarks) { return rewrite_linear_cross_entropy(g, remarks); }},
        true);
  // flash-attention after cse, which merges the mask and scale constants; dce
  // then drops the scores it leaves unread.
  r.add({"flash-attention", "rewrites softmax(q k^T * scale + mask) v, written out, to flash_attention",
         [](const Graph& g, std::ostream* remarks) { return rewrite_flash_attention(g, remarks); }},
        true);
  // The passes above match the arithmetic as written: a change of precision
  // (bf16-matmuls and bf16-saves, which compiler/pipeline.h places here) comes after them.
  r.end_rewrites();
  r.add({std::string(kBf16Passes[0]), "matmul operands cast to bf16 (f32 sums and result): --precision bf16",
         [](const Graph& g, std::ostream* remarks) { return bf16_matmuls(g, remarks); }});
  r.add({std::string(kBf16Passes[1]),
         "attention's q, k, v, o and layer norms' inputs kept for the backward in bf16: --precision bf16",
         [](const Graph& g, std::ostream* remarks) { return bf16_saves(g, remarks); }});
  r.add({"dce", "drops nodes whose results reach no output and no assign", plain(dce)}, true);
  r.add({"allreduce-buckets",
         "puts a data-parallel step's allreduces in buckets, each right after its last operand is made",
         [](const Graph& g, std::ostream* remarks) { return allreduce_buckets(g, remarks); }},
        true);
  r.add({"fusion", "groups nodes into fusion nodes, one kernel each (loop, reduction, attention, ...)", fuse}, true);
  r.add({"horizontal-fusion", "merges the loop fusions that only feed assigns (optimizer updates) into one kernel",
         plain(horizontal_fusion)},
        true);
  // Again: the constants every consumer fusion took a copy of are left unread.
  r.append_to_default_pipeline("dce");
}

PassRegistry& PassRegistry::global() {
  static PassRegistry registry = [] {
    PassRegistry r;
    register_builtin_passes(r);
    return r;
  }();
  return registry;
}

static bool is_kebab_case(std::string_view s) {
  if (s.empty() || s.front() == '-' || s.back() == '-') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

void PassRegistry::add(Pass pass, bool in_default_pipeline) {
  if (!is_kebab_case(pass.name)) throw Error("pass name '" + pass.name + "' is not lowercase kebab-case");
  if (pass.name == kNoPasses) throw Error("pass name '" + pass.name + "' is reserved for running no pass");
  if (find(pass.name)) throw Error("pass '" + pass.name + "' is already registered");
  if (in_default_pipeline) default_pipeline_.push_back(pass.name);
  passes_.push_back(std::make_unique<Pass>(std::move(pass)));
}

void PassRegistry::append_to_default_pipeline(std::string_view name) {
  default_pipeline_.push_back(get(name).name);
}

const Pass* PassRegistry::find(std::string_view name) const {
  for (const auto& p : passes_)
    if (p->name == name) return p.get();
  return nullptr;
}

const Pass& PassRegistry::get(std::string_view name) const {
  if (const Pass* p = find(name)) return *p;
  std::string known;
  for (const auto& p : passes_) known += (known.empty() ? "" : ", ") + p->name;
  throw Error("unknown pass '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<const Pass*> PassRegistry::all() const {
  std::vector<const Pass*> out;
  for (const auto& p : passes_) out.push_back(p.get());
  return out;
}

std::vector<std::string> pass_invariant_problems(const Graph& before, const Graph& after) {
  std::vector<std::string> problems;
  if (after.name() != before.name()) problems.push_back("graph renamed to @" + after.name());
  const auto& d0 = before.declarations();
  const auto& d1 = after.declarations();
  bool same_decls = d0.size() == d1.size();
  for (size_t i = 0; same_decls && i < d0.size(); ++i) {
    const ValueInfo &a = before.value(d0[i]), &b = after.value(d1[i]);
    same_decls = a.name == b.name && a.kind == b.kind && a.type == b.type && a.attrs == b.attrs;
  }
  if (!same_decls) problems.emplace_back("declarations changed");
  std::vector<std::string> out0, out1;
  for (Value v : before.outputs()) out0.push_back(before.name_of(v));
  for (Value v : after.outputs()) out1.push_back(after.name_of(v));
  if (out0 != out1) problems.emplace_back("output names or order changed");
  const auto targets = [](const Graph& g) {
    std::vector<std::string> t;
    for (const Node& n : g.nodes())
      if (n.def->side_effect) t.push_back(g.name_of(n.operands[0]));
    return t;
  };
  if (targets(before) != targets(after)) problems.emplace_back("assigns changed");
  return problems;
}

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  for (const std::string& n : names)
    if (n == name) return true;
  return false;
}

void dump_ir(std::ostream& os, const char* when, const std::string& pass, const Graph& g) {
  os << "; *** IR Dump " << when << ' ' << pass << " ***\n" << print_kir(g);
}

// "03-cse": a pass's place in the pipeline (from 1; the input is 00) and name.
std::string numbered_pass(size_t i, const std::string& name) {
  const std::string number = std::to_string(i);
  return (number.size() < 2 ? "0" + number : number) + "-" + name;
}

struct Timing {
  std::string pass;
  double ms;
  size_t nodes_before, nodes_after;
  bool changed;  // known where the texts were kept (print_changed, dump_dir); else true
  bool remarks;  // it made some (the dump's NN-PASS.decisions.txt)
};

// Where each node's .kir text was written ("file:line:col"), by node: what the
// printed stages leave out. Empty when no node has one (a graph built in code).
nlohmann::json node_sources(const Graph& g) {
  nlohmann::json sources = nlohmann::json::array();
  bool any = false;
  for (const Node& n : g.nodes()) {
    any = any || !n.loc.source.file.empty();
    sources.push_back(n.loc.source.file.empty() ? std::string() : n.loc.source.str());
  }
  return any ? sources : nlohmann::json::array();
}

// The dump's passes.json: the pipeline as the dump's page shows it, a stage per
// pass with its graph's file, time, node counts and whether it changed the
// graph, and each stage's node_sources where there are any.
std::string passes_json(const std::vector<Timing>& rows, const std::vector<nlohmann::json>& sources) {
  nlohmann::json stages = nlohmann::json::array({{{"file", "00-input.kir"}}});
  for (size_t i = 0; i < rows.size(); ++i) {
    const Timing& t = rows[i];
    const std::string file = numbered_pass(i + 1, t.pass);
    stages.push_back({{"pass", t.pass},
                      {"file", file + ".kir"},
                      {"ms", t.ms},
                      {"nodes_before", t.nodes_before},
                      {"nodes_after", t.nodes_after},
                      {"changed", t.changed}});
    if (t.remarks) stages.back()["decisions"] = file + ".decisions.txt";
  }
  for (size_t i = 0; i < sources.size(); ++i)
    if (!sources[i].empty()) stages[i]["sources"] = sources[i];
  return nlohmann::json({{"stages", stages}}).dump(1) + "\n";
}

void print_timings(std::ostream& os, const std::vector<Timing>& rows) {
  char line[160];
  std::snprintf(line, sizeof line, "; %-16s %10s  %s\n", "pass", "time (ms)", "nodes");
  os << line;
  double total = 0;
  for (const Timing& t : rows) {
    std::snprintf(line, sizeof line, "; %-16s %10.3f  %zu -> %zu\n", t.pass.c_str(), t.ms, t.nodes_before,
                  t.nodes_after);
    os << line;
    total += t.ms;
  }
  if (!rows.empty()) {
    std::snprintf(line, sizeof line, "; %-16s %10.3f  %zu -> %zu\n", "total", total, rows.front().nodes_before,
                  rows.back().nodes_after);
    os << line;
  }
}

}  // namespace

Graph run_passes(const Graph& g, const PassOptions& options, const PassRegistry& registry) {
  if (options.passes.empty() && options.precision != DType::f32)
    throw Error("run_passes: the default pipeline in " + std::string(dtype_name(options.precision)) +
                " is the compiler pipeline's to build (compiler/pipeline.h: run_pipeline_passes)");
  const std::vector<std::string> names = options.passes.empty() ? registry.default_pipeline() : options.passes;
  std::vector<const Pass*> pipeline;
  if (names != std::vector<std::string>{std::string(kNoPasses)})
    for (const std::string& name : names) pipeline.push_back(&registry.get(name));
  for (const auto* list : {&options.print_after, &options.print_before})
    for (const std::string& name : *list) registry.get(name);
  std::ostream& dump = options.dump ? *options.dump : std::cerr;

  if (options.verify_each) {
    const std::vector<std::string> problems = verify_problems(g);
    if (!problems.empty()) throw Error("the input graph @" + g.name() + " fails verification: " + problems.front());
  }
  Graph current = g;
  // The printed graph, kept while a pass's result is compared with its input.
  const bool keep_text = options.print_changed || !options.dump_dir.empty();
  std::string current_text = keep_text ? print_kir(current) : std::string();
  if (options.print_changed) dump << "; *** IR Dump At Start ***\n" << current_text;
  std::vector<nlohmann::json> sources;  // the dump's, by stage
  if (!options.dump_dir.empty()) {
    write_dump(options.dump_dir, "00-input.kir", current_text);
    sources.push_back(node_sources(current));
  }
  const bool want_remarks = options.remarks || !options.dump_dir.empty();
  std::vector<Timing> timings;
  for (size_t i = 0; i < pipeline.size(); ++i) {
    const Pass* pass = pipeline[i];
    if (contains(options.print_before, pass->name)) dump_ir(dump, "Before", pass->name, current);
    std::ostringstream remarks;
    const auto start = std::chrono::steady_clock::now();
    Graph next = pass->run(current, want_remarks ? &remarks : nullptr);
    const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
    if (options.remarks) *options.remarks << remarks.str();
    timings.push_back(
        {pass->name, elapsed.count(), current.nodes().size(), next.nodes().size(), true, !remarks.str().empty()});
    if (options.verify_each) {
      std::vector<std::string> problems = verify_problems(next);
      for (std::string& p : pass_invariant_problems(current, next)) problems.push_back(std::move(p));
      if (!problems.empty()) {
        std::string msg = "pass '" + pass->name + "' produced an invalid graph:";
        for (const std::string& p : problems) msg += "\n  " + p;
        throw Error(msg);
      }
    }
    if (options.print_after_all || contains(options.print_after, pass->name)) dump_ir(dump, "After", pass->name, next);
    if (keep_text) {
      std::string next_text = print_kir(next);
      timings.back().changed = next_text != current_text;
      if (options.print_changed) {
        if (next_text == current_text)
          dump << "; *** IR Dump After " << pass->name << " omitted because no change ***\n";
        else
          dump << "; *** IR Dump After " << pass->name << " ***\n" << next_text;
      }
      if (!options.dump_dir.empty()) {
        const std::string file = numbered_pass(i + 1, pass->name);
        sources.push_back(node_sources(next));
        write_dump(options.dump_dir, file + ".kir", next_text);
        if (!remarks.str().empty()) write_dump(options.dump_dir, file + ".decisions.txt", remarks.str());
      }
      current_text = std::move(next_text);
    }
    current = std::move(next);
  }
  if (options.time_passes) print_timings(dump, timings);
  if (!options.dump_dir.empty()) write_dump(options.dump_dir, "passes.json", passes_json(timings, sources));
  return current;
}

}  // namespace kiln::compiler
