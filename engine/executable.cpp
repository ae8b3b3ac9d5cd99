#include "engine/executable.h"

#include "engine/ir/error.h"
#include "engine/ir/verifier.h"
#include "engine/numerics.h"

namespace kiln {

Executable::Executable(Graph graph) : graph_(std::move(graph)) { verify(graph_); }

void Executable::bind(const std::string& name, Tensor t) {
  const auto v = graph_.find(name);
  if (!v || graph_.value(*v).kind == ValueKind::result)
    throw Error("graph @" + graph_.name() + " declares no input, param or state named '" + name + "'");
  const TensorType& want = graph_.type(*v);
  if (!(t.type() == want))
    throw Error(std::string(value_kind_name(graph_.value(*v).kind)) + " %" + name + " is " + type_str(want) +
                ", got a tensor of " + type_str(t.type()));
  bound_.insert_or_assign(name, std::move(t));
  if (graph_.value(*v).kind == ValueKind::param) param_binding_changed(true);
}

Tensor Executable::unbind(const std::string& name) {
  auto it = bound_.find(name);
  if (it == bound_.end()) throw Error("%" + name + " is not bound");
  Tensor t = std::move(it->second);
  bound_.erase(it);
  if (graph_.value(*graph_.find(name)).kind == ValueKind::param) param_binding_changed(false);
  return t;
}

const Tensor& Executable::binding(const std::string& name) const {
  auto it = bound_.find(name);
  if (it == bound_.end()) throw Error("%" + name + " is not bound");
  return it->second;
}

void Executable::run() {
  if (running_.exchange(true))
    throw Error("graph @" + graph_.name() +
                ": run() while another run of this executable is in progress (threads sharing one hold its lock())");
  struct Finished {
    std::atomic<bool>& running;
    ~Finished() { running = false; }
  } finished{running_};
  std::string missing;
  for (Value v : graph_.declarations())
    if (!bound_.count(graph_.name_of(v)))
      missing += (missing.empty() ? "" : ", ") + std::string(value_kind_name(graph_.value(v).kind)) + " %" +
                 graph_.name_of(v);
  if (!missing.empty()) throw Error("graph @" + graph_.name() + ": unbound " + missing);
  if (check_numerics_) check_declarations(graph_, bound_);
  execute();
}

const Tensor& Executable::output(const std::string& name) const {
  auto it = outputs_.find(name);
  if (it == outputs_.end()) throw Error("graph @" + graph_.name() + " has no output '" + name + "' (or it has not run)");
  return it->second;
}

Tensor Executable::take_output(const std::string& name) {
  output(name);  // the error for an unknown name
  auto it = outputs_.find(name);
  Tensor t = std::move(it->second);
  outputs_.erase(it);
  return t;
}

std::vector<std::string> Executable::output_names() const {
  std::vector<std::string> names;
  for (Value v : graph_.outputs()) names.push_back(graph_.name_of(v));
  return names;
}

}  // namespace kiln
