#pragma once
// One compiled executable per batch shape (B, S, T), compiled on first use and
// kept. All executables of a cache declare the same params (and, for training,
// the same optimizer state); the cache keeps one set of these persistent
// tensors and hands it to whichever executable runs next, so a training step on
// one bucket shape continues from the params and Adam moments the previous
// shape left behind.
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
  // cache lives.
  Executable& get(const BatchShape& shape);

  // Replaces the persistent tensors: params and state by name. Each executable
  // binds those its graph declares (an encoder has no decoder params).
  void set_persistent(std::map<std::string, Tensor> tensors);
  // The current persistent tensors, including the last run's updates.
  const std::map<std::string, Tensor>& persistent();

  size_t compiled() const { return executables_.size(); }

 private:
  struct Entry {
    std::unique_ptr<Executable> exe;
    bool mutates = false;        // has assign nodes: its bindings move on as it runs
    uint64_t bound_version = 0;  // persistent_version_ when last bound
  };
  void pull_from_active();

  GraphBuilder build_;
  CompileObserver on_compile_;
  compiler::BackendOptions exec_;
  std::map<BatchShape, Entry> executables_;
  std::map<std::string, Tensor> persistent_;
  uint64_t persistent_version_ = 1;
  Entry* active_ = nullptr;  // the executable last returned by get()
};

}  // namespace kiln::models
