#pragma once
// A compiled graph: bind inputs, params and state by name, then run() as many
// times as wanted. Params and state persist between runs and are updated in place
// by the graph's `assign` nodes when each run ends. The interpreter and the JIT
// both implement this, so callers switch backends with one flag.
//
// Threads: an Executable is one mutable object (its bindings, its outputs, the
// backend's buffers), so calls on it must not overlap. Threads sharing one hold
// lock() across each whole sequence of calls (bind, run, read or take the
// outputs): output() and binding() return references that the next run or bind
// replaces. A run() that starts while another is still running throws kiln::Error
// rather than corrupting both. Different Executables run at once freely.
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/tensor/tensor.h"

namespace kiln {

class Executable {
 public:
  explicit Executable(Graph graph);
  virtual ~Executable() = default;
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  const Graph& graph() const { return graph_; }

  // Serializes the threads that share this executable (see the top of this file).
  [[nodiscard]] std::unique_lock<std::mutex> lock() const { return std::unique_lock(mutex_); }

  // Binds a declared input, param or state; throws kiln::Error naming it if the
  // name is not declared or the tensor's type differs from the declaration.
  void bind(const std::string& name, Tensor t);
  bool is_bound(const std::string& name) const { return bound_.count(name) != 0; }
  // Takes a binding back out (moved, not copied); throws kiln::Error if it is not bound.
  Tensor unbind(const std::string& name);
  // The current tensor of a declaration (params and state change as runs go).
  const Tensor& binding(const std::string& name) const;

  // Runs one step. Throws kiln::Error if a declaration is unbound, or if another
  // run() of this executable is in progress (on another thread without lock()).
  void run();

  // --check-numerics (engine/numerics.h): while on, each run checks the bound
  // declarations, then every value as it is made, and throws kiln::Error at the
  // first nan or +inf, naming it and what made it.
  void check_numerics(bool on) { check_numerics_ = on; }

  const Tensor& output(const std::string& name) const;
  // Takes an output of the last run out (moved, not copied), so its memory
  // outlives the next run, which makes the output anew; throws kiln::Error as
  // output() does.
  Tensor take_output(const std::string& name);
  std::vector<std::string> output_names() const;

 protected:
  // Runs one step on the bound tensors: sets every output in outputs_ (by name)
  // and commits each assign's value to its target in bound_ once every node has
  // run, so every node sees the old values.
  virtual void execute() = 0;
  // Told after a param is bound (`bound`) or unbound: a backend that keeps
  // results computed from params alone between runs (compiler/jit_executable.h)
  // makes them again. A param's tensor changes no other way but by the graph's
  // assigns (bound tensors are the executable's own).
  virtual void param_binding_changed(bool /*bound*/) {}

  Graph graph_;
  bool check_numerics_ = false;
  std::map<std::string, Tensor> bound_;
  std::map<std::string, Tensor> outputs_;

 private:
  mutable std::mutex mutex_;
  std::atomic<bool> running_{false};
};

}  // namespace kiln
