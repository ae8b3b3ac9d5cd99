#include "tools/pass_flags.h"
#include "tools/flag_checks.h"
#include "tools/path_checks.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "engine/ir/error.h"

namespace kiln::cli {
namespace {

// A registered pass's name; for --passes also "none" (run no pass).
CLI::Validator pass_name(bool none_allowed) {
  return CLI::Validator(
      [none_allowed](const std::string& name) {
        if (none_allowed && name == compiler::kNoPasses) return std::string();
        try {
          compiler::PassRegistry::global().get(name);
          return std::string();
        } catch (const Error& e) {
          return std::string(e.what());
        }
      },
      "PASS");
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

// Each pass's name and description, the descriptions in a column wide enough
// for the longest name, so that no name is cut.
std::string passes_footer() {
  const std::vector<const compiler::Pass*> passes = compiler::PassRegistry::global().all();
  size_t width = 0;
  for (const compiler::Pass* p : passes) width = std::max(width, p->name.size());
  std::string out = "Passes:\n";
  for (const compiler::Pass* p : passes)
    out += "  " + p->name + std::string(width + 2 - p->name.size(), ' ') + p->description + "\n";
  return out;
}

}  // namespace

void add_precision_flag(CLI::App* sub, DType& precision) {
  sub->add_option_function<std::string>(
         "--precision", [&precision](const std::string& p) { precision = *parse_dtype(p); },
         "f32, or bf16: matmul operands rounded to bf16 (f32 products, sums and results), and what the backward keeps stored in bf16 (the bf16-matmuls and bf16-saves passes)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->default_str("f32");
}

void add_pass_flags(CLI::App* sub, compiler::PassOptions& opts) {
  const std::string pipeline = join(compiler::PassRegistry::global().default_pipeline());
  sub->add_option("--passes", opts.passes,
                  "comma-separated passes to run, in order (default: " + pipeline + "; none: no pass)")
      ->delimiter(',')
      ->check(pass_name(true));
  add_precision_flag(sub, opts.precision);
  sub->add_flag("--print-after-all", opts.print_after_all, "print the graph to stderr after each pass");
  sub->add_option("--print-after", opts.print_after, "print the graph to stderr after this pass (repeatable)")
      ->delimiter(',')
      ->check(pass_name(false));
  sub->add_option("--print-before", opts.print_before, "print the graph to stderr before this pass (repeatable)")
      ->delimiter(',')
      ->check(pass_name(false));
  sub->add_flag("--print-changed", opts.print_changed,
                "print the graph to stderr at the start and after each pass that changed it (LLVM's -print-changed)");
  sub->add_flag("--time-passes", opts.time_passes, "print each pass's time and node counts to stderr");
  sub->add_flag("--verify-each,!--no-verify-each", opts.verify_each,
                "verify the graph and the pass invariants after each pass (default: on in debug builds)");
  sub->add_flag_callback(
      "--print-fusion-decisions", [&opts] { opts.remarks = &std::cerr; },
      "print to stderr why each producer left out of a fusion was left out");
  sub->footer(passes_footer());
  opts.dump = &std::cerr;
}

void add_dump_dir_flag(CLI::App* sub, std::string& dir) {
  sub->add_option("--dump-dir", dir,
                  "write every stage of each graph compiled into a directory of its own under DIR: the graph after "
                  "each pass, the fusion decisions, the program, the memory plan, each kernel's LLVM IR and assembly")
      ->check(dir_to_write());
}

void add_compiler_flags(CLI::App* sub, compiler::PipelineOptions& pipeline, compiler::KernelJitOptions* kernels) {
  add_pass_flags(sub, pipeline.passes);
  sub->add_flag_callback(
      "--print-memory-plan", [&pipeline] { pipeline.memory_plan = &std::cerr; },
      "print the memory plan (buffers, offsets, live ranges, naive and planned bytes) to stderr");
  sub->add_flag_callback(
      "--no-reuse", [&pipeline] { pipeline.reuse = false; }, "give every buffer its own memory (for debugging)");
  add_dump_dir_flag(sub, pipeline.dump_dir);
  if (kernels)
    sub->add_flag_callback(
        "--no-cache", [kernels] { kernels->cache = false; },
        "neither read nor write the on-disk kernel cache ($KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln or ~/.cache/kiln)");
}

void add_backend_flags(CLI::App& sub, compiler::BackendOptions& exec) {
  sub.add_option("--backend", exec.backend, "execution backend: the LLVM JIT or the reference interpreter")
      ->check(CLI::IsMember({"jit", "interp"}))
      ->capture_default_str();
  sub.add_option("--threads", exec.threads, "threads of the JIT's parallel loops (default: all cores)")
      ->check(thread_count(1));
  sub.add_flag("--check-numerics", exec.check_numerics,
               "check every value as it is made and stop at the first nan or +inf, naming the kernel and node that "
               "made it and its .kir line (slow: for finding where a run goes wrong)");
}

}  // namespace kiln::cli
