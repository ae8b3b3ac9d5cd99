#include "engine/autodiff.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"
#include "models/optimizer.h"
#include "tools/cli_common.h"
#include "tools/output_file.h"
#include "tools/same_file.h"

namespace kiln::cli {
namespace {

Value find_value(const Graph& g, const std::string& name, const std::string& flag) {
  const auto v = g.find(name);
  if (!v) throw Error(flag + " " + name + ": graph @" + g.name() + " has no value named '" + name + "'");
  return *v;
}

// Prints the graph ("" or "-"), or writes it to `path` atomically.
void emit_graph(const Graph& g, const std::string& path) {
  verify(g);
  write_output(path, print_kir(g));
}

}  // namespace

void grad(const GradOptions& opts) {
  check_output_is_no_input({"-o", opts.output_path}, {{"FILE", opts.graph_path}});
  Graph g = parse_kir_file(opts.graph_path);
  const Value loss = find_value(g, opts.loss, "--loss");
  std::vector<Value> wrt;
  for (const std::string& name : opts.wrt) wrt.push_back(find_value(g, name, "--wrt"));
  const std::vector<Value> grads = kiln::grad(g, loss, wrt);
  Builder b(g);
  for (Value v : grads) b.output(v);
  emit_graph(g, opts.output_path);
}

void train_graph(const TrainGraphOptions& opts) {
  check_output_is_no_input({"-o", opts.output_path}, {{"FILE", opts.graph_path}});
  Graph g = parse_kir_file(opts.graph_path);
  const Value loss = find_value(g, opts.loss, "--loss");
  if (opts.optimizer == "sgd") {
    append_sgd(g, loss, {opts.lr > 0 ? opts.lr : SgdOptions{}.lr});
  } else {
    append_adam(g, loss, {opts.beta1, opts.beta2, opts.eps, opts.factor, opts.d_model, opts.warmup, opts.lr});
  }
  emit_graph(g, opts.output_path);
}

}  // namespace kiln::cli
