#pragma once
// Named graph passes, their registry and the pipeline runner (LLVM opt-style
// dumps, timing and verification).
//
// A pass is a functional rewrite: it reads a graph and returns a new one (a Graph
// is append-only, so rewriting in place is not an option). Every pass keeps these
// invariants, which run_passes checks after each pass when verify_each is set:
//   - the graph's name is unchanged;
//   - the declarations (inputs, params, state) are all kept, even unused ones, in
//     order, with their names, types and attributes: executables bind by name;
//   - the outputs keep their names and order (a value replacing an output's value
//     takes the output's name, or an `identity` node carries it);
//   - every assign is kept, with its target;
//   - the result is a verified graph (kiln::verify);
//   - surviving nodes keep their result names where possible, so dumps stay readable.
// compiler/passes/rewriter.h does the bookkeeping for the first three.
#include <array>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln::compiler {

struct Pass {
  std::string name;         // short, lowercase, kebab-case: `--passes=simplify,cse`
  std::string description;  // one line, for `--help`
  // The rewrite; `remarks` (may be null) takes one line per thing the pass chose
  // not to do and why (fusion: --print-fusion-decisions).
  std::function<Graph(const Graph&, std::ostream* remarks)> run;
};

class PassRegistry {
 public:
  // The built-in passes (register_builtin_passes), registered on first use.
  static PassRegistry& global();

  // Adds a pass, and with `in_default_pipeline` appends it to the default pipeline.
  // Throws kiln::Error if the name is taken or not kebab-case.
  void add(Pass pass, bool in_default_pipeline = false);
  // Appends a registered pass to the default pipeline again (dce after fusion).
  // Throws kiln::Error for an unknown name.
  void append_to_default_pipeline(std::string_view name);
  // Ends the default pipeline's rewrites: the passes so far match patterns of
  // the arithmetic as written (flash-attention's wants f32 operands), so a
  // change of precision (compiler/pipeline.h) comes after them, before the
  // passes that clean up and lower.
  void end_rewrites() { end_of_rewrites_ = default_pipeline_.size(); }
  // How many passes of the default pipeline are its rewrites.
  size_t end_of_rewrites() const { return end_of_rewrites_; }
  const Pass* find(std::string_view name) const;
  // Throws kiln::Error "unknown pass 'NAME' (known: a, b, ...)".
  const Pass& get(std::string_view name) const;
  std::vector<const Pass*> all() const;  // in registration order
  const std::vector<std::string>& default_pipeline() const { return default_pipeline_; }

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<std::string> default_pipeline_;
  size_t end_of_rewrites_ = 0;
};

// The built-in passes in default-pipeline order: constant-fold, simplify,
// transpose-folding, pretranspose-weights, cse, flash-attention, dce, allreduce-buckets, fusion,
// horizontal-fusion, and dce again.
void register_builtin_passes(PassRegistry& r);

// The pipeline that runs no pass (`--passes=none`): the graph goes to the
// scheduler as written. No pass may take this name.
inline constexpr std::string_view kNoPasses = "none";
// The rewrites --precision bf16 adds to the default pipeline, in order (compiler/pipeline.h).
inline constexpr std::array<std::string_view, 2> kBf16Passes = {"bf16-matmuls", "bf16-saves"};

struct PassOptions {
  std::vector<std::string> passes;  // empty: the default pipeline; {kNoPasses}: no pass at all
  // --precision: the pipeline's choice (compiler/pipeline.h: pipeline_passes
  // puts the precision's rewrite into the default pipeline, run_pipeline_passes
  // runs it). run_passes refuses any but f32 with the default pipeline. A
  // --passes list runs just what it names.
  DType precision = DType::f32;
  bool print_after_all = false;
  std::vector<std::string> print_after;   // pass names
  std::vector<std::string> print_before;  // pass names
  // LLVM's -print-changed: the input, then the graph after each pass that
  // changed it (a line says which passes changed nothing).
  bool print_changed = false;
  bool time_passes = false;               // a table of pass, ms, nodes before -> after
#ifndef NDEBUG
  bool verify_each = true;
#else
  bool verify_each = false;
#endif
  std::ostream* dump = nullptr;     // where dumps and timing go; null: std::cerr
  std::ostream* remarks = nullptr;  // the passes' remarks (--print-fusion-decisions); null: none
  // One graph's dump directory (compiler/dump_dir.h): 00-input.kir, then
  // NN-PASS.kir after each pass and NN-PASS.decisions.txt with its remarks.
  // Empty: none.
  std::string dump_dir;
};

// Runs options.passes, or the default pipeline, on `g`. Unknown names (in passes, print_after, print_before)
// are a kiln::Error naming them before anything runs. With verify_each, the input
// is verified, and after each pass the result is verified and the invariants above
// are checked; a failure is a kiln::Error naming the pass.
Graph run_passes(const Graph& g, const PassOptions& options, const PassRegistry& registry = PassRegistry::global());

// The invariants above, `after` against `before`: one message per broken invariant.
std::vector<std::string> pass_invariant_problems(const Graph& before, const Graph& after);

}  // namespace kiln::compiler
