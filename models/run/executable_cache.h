#pragma once
// One compiled executable per batch shape (B, S, T), compiled on first use and
// kept. All executables of a cache declare the same params (and, for training,
// the same optimizer state); the cache keeps one set of these persistent
// tensors and moves it to whichever executable runs next (one copy in memory,
// however many shapes), so a training step on one bucket shape continues from
// the params and Adam moments the previous shape left behind. The executables
// also share one workspace (their temporaries' arena).
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "compiler/backend.h"
#include "engine/executable.h"

namespace kiln::models {

struct BatchShape {
  int64_t batch = 0, src_len = 0,
          tgt_len = 0;  // tgt_len 0: a graph without a target (encoder)
  bool accumulate = false;  // training with --update-freq: a batch that accumulates its gradient, no update
  auto operator<=>(const BatchShape&) const = default;
  std::string str() const;  // "[B=32 S=10 T=10]"
};

class ExecutableCache {
 public:
  using GraphBuilder = std::function<Graph(const BatchShape&)>;
  // Told about each compile (the graph's name, the shape, how long it took: a
  // JIT compile takes seconds).
  using CompileObserver = std::function<void(const std::string& graph, const BatchShape&, double seconds)>;
  ExecutableCache(GraphBuilder build, compiler::BackendOptions exec, CompileObserver on_compile = {});

  // The executable of `shape` with the current persistent tensors bound
  // (compiles it first if needed). After it runs, the tensors its assigns
  // changed are the current ones. The reference stays valid as long as the
  // cache lives; the persistent tensors stay bound to it until the next get()
  // of another shape or persistent().
  Executable& get(const BatchShape& shape);

  // Replaces the persistent tensors: params and state by name. Each executable
  // binds those its graph declares (an encoder has no decoder params).
  void set_persistent(std::map<std::string, Tensor> tensors);
  // The current persistent tensors, including the last run's updates (valid
  // until the next get()).
  const std::map<std::string, Tensor>& persistent();

  size_t compiled() const { return executables_.size(); }

 private:
  // Moves the persistent tensors the active executable holds back into persistent_.
  void take_back();

  GraphBuilder build_;
  CompileObserver on_compile_;
  compiler::BackendOptions exec_;
  std::map<BatchShape, std::unique_ptr<Executable>> executables_;
  std::map<std::string, Tensor> persistent_;  // those no executable holds
  Executable* active_ = nullptr;              // holds the persistent tensors its graph declares
};

}  // namespace kiln::models
