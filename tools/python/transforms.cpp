// Graph to graph: kiln.grad, kiln.train_graph, kiln.optimize (and kiln.passes()).
// Each returns a new graph and leaves its argument unchanged.
#include <pybind11/stl.h>

#include "compiler/dump_dir.h"
#include "compiler/passes/pass_manager.h"
#include "compiler/report/dump_page.h"
#include "engine/autodiff.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/verifier.h"
#include "models/optimizer.h"
#include "tools/python/bindings.h"

namespace kiln::python {
namespace {

// One value or a list of them (names or kiln.Values of `g`).
std::vector<Value> find_values(const Graph& g, const py::handle& h, const std::string& what) {
  if (py::isinstance<py::str>(h) || py::isinstance<PyValue>(h)) return {find_value(g, h, what)};
  std::vector<Value> out;
  for (const py::handle v : h) out.push_back(find_value(g, v, what));
  return out;
}

GraphPtr grad(const GraphPtr& graph, const py::handle& loss, const py::handle& wrt) {
  // Found in `graph`, used in its copy: a copy keeps every value's id.
  const Value l = find_value(*graph, loss, "loss");
  const std::vector<Value> w = find_values(*graph, wrt, "wrt");
  auto g = std::make_shared<Graph>(*graph);
  const std::vector<Value> grads = kiln::grad(*g, l, w);
  Builder b(*g);
  for (Value v : grads) b.output(v);
  verify(*g);
  return g;
}

GraphPtr train_graph(const GraphPtr& graph, const py::handle& loss, const std::string& optimizer, double lr,
                     double beta1, double beta2, double eps, double factor, int64_t d_model, int64_t warmup) {
  const Value l = find_value(*graph, loss, "loss");
  auto g = std::make_shared<Graph>(*graph);
  if (optimizer == "sgd")
    append_sgd(*g, l, {lr > 0 ? lr : SgdOptions{}.lr});
  else if (optimizer == "adam")
    append_adam(*g, l, {beta1, beta2, eps, factor, d_model, warmup, lr});
  else
    throw Error("optimizer '" + optimizer + "': expected 'adam' or 'sgd'");
  verify(*g);
  return g;
}

}  // namespace

std::vector<std::string> pass_names(const py::object& passes) {
  if (passes.is_none()) return {};
  if (!py::isinstance<py::str>(passes)) return passes.cast<std::vector<std::string>>();
  std::vector<std::string> names;
  const auto text = passes.cast<std::string>();
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    names.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

void define_transforms(py::module_& m) {
  m.def("grad", &grad, py::arg("graph"), py::arg("loss"), py::arg("wrt"),
        "The graph with the backward pass of `loss` appended (reverse mode, one joint graph),\n"
        "outputting the gradient of each `wrt` value as NAME.grad after the graph's outputs:\n"
        "what `kiln grad FILE --loss LOSS --wrt W,...` writes.\n\n"
        "`loss` names a scalar f32 value; `wrt` one value or a list (names or kiln.Values).\n"
        "kiln.Error for an unknown name, a non-scalar loss, or ops without a gradient rule\n"
        "(naming every one). `graph` is left unchanged.");
  m.def("train_graph", &train_graph, py::arg("graph"), py::arg("loss"), py::arg("optimizer") = "adam",
        py::arg("lr") = 0.0, py::arg("beta1") = 0.9, py::arg("beta2") = 0.98, py::arg("eps") = 1e-9,
        py::arg("factor") = 1.0, py::arg("d_model") = 512, py::arg("warmup") = 4000,
        "The whole training step as one graph, as `kiln train-graph` writes it: the gradients\n"
        "of every param, then SGD or Adam updates applied in place (assign), a step counter\n"
        "state %step, Adam's moments as state, and outputs loss and lr.\n\n"
        "sgd: step size `lr` (0: 0.1). adam: beta1, beta2, eps and the warm-up schedule\n"
        "factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), or a constant `lr` > 0.\n"
        "`graph` is left unchanged.");
  m.def(
      "optimize",
      [](const Graph& graph, const py::object& passes, bool verify_each, const std::string& dump_dir) {
        compiler::PassOptions opts;
        opts.passes = pass_names(passes);
        opts.verify_each = verify_each;
        if (!dump_dir.empty()) opts.dump_dir = compiler::graph_dump_dir(dump_dir, graph.name());
        auto optimized = std::make_shared<Graph>(compiler::run_passes(graph, opts));
        if (!opts.dump_dir.empty()) compiler::write_dump_page(opts.dump_dir);
        return optimized;
      },
      py::arg("graph"), py::arg("passes") = py::none(), py::arg("verify_each") = true, py::arg("dump_dir") = "",
      "The graph after the graph passes, as `kiln opt` prints it.\n\n"
      "`passes`: names in order, as 'a,b' or a list (kiln.passes() lists them); None: the\n"
      "default pipeline (kiln.passes(): constant-fold ... fusion ... dce); 'none': no pass. With\n"
      "verify_each, each pass's result is verified. kiln.Error names an unknown pass and\n"
      "the known ones. Declarations and output names are kept, so the result binds and\n"
      "runs exactly as `graph`, which is left unchanged. `dump_dir`: the graph before and\n"
      "after each pass, with the fusion decisions, into a directory of its own under it,\n"
      "as `kiln opt --dump-dir`, and the page of them all, DIR/index.html.");
  m.def(
      "passes",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const compiler::Pass* p : compiler::PassRegistry::global().all())
          out.emplace_back(p->name, p->description);
        return out;
      },
      "The graph passes as (name, description), in registration order.");
}

}  // namespace kiln::python
