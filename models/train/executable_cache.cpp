#include "models/train/executable_cache.h"

#include <algorithm>
#include <chrono>

#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln::models {
namespace {

bool has_assign(const Graph& g) {
  return std::any_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.op() == "assign"; });
}

bool declares(const Graph& g, const std::string& name) {
  const auto v = g.find(name);
  return v && g.value(*v).kind != ValueKind::result;
}

}  // namespace

std::string BatchShape::str() const {
  std::string s = "[B=" + std::to_string(batch) + " S=" + std::to_string(src_len);
  if (tgt_len > 0) s += " T=" + std::to_string(tgt_len);
  return s + "]";
}

ExecutableCache::ExecutableCache(GraphBuilder build, compiler::BackendOptions exec, CompileObserver on_compile)
    : build_(std::move(build)), on_compile_(std::move(on_compile)), exec_(std::move(exec)) {
  // The executables run one at a time: one arena serves them all.
  if (!exec_.workspace) exec_.workspace = std::make_shared<compiler::Workspace>();
}

void ExecutableCache::pull_from_active() {
  if (!active_ || !active_->mutates || active_->bound_version != persistent_version_) return;
  const Executable& exe = *active_->exe;
  for (auto& [name, t] : persistent_)
    if (exe.is_bound(name)) t = exe.binding(name);
}

Executable& ExecutableCache::get(const BatchShape& shape) {
  auto it = executables_.find(shape);
  if (it == executables_.end()) {
    Entry e;
    const auto start = std::chrono::steady_clock::now();
    e.exe = compiler::make_executable(build_(shape), exec_);
    if (on_compile_)
      on_compile_(e.exe->graph().name(), shape,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    e.mutates = has_assign(e.exe->graph());
    it = executables_.emplace(shape, std::move(e)).first;
  }
  Entry& next = it->second;
  if (&next != active_) {
    // The active executable's runs may have moved the tensors on: they become
    // the current version before the next executable binds them.
    if (active_ && active_->mutates && active_->bound_version == persistent_version_) {
      pull_from_active();
      ++persistent_version_;
      active_->bound_version = 0;
    }
    active_ = &next;
  }
  if (next.bound_version != persistent_version_) {
    for (const auto& [name, t] : persistent_)
      if (declares(next.exe->graph(), name)) next.exe->bind(name, t);
    next.bound_version = persistent_version_;
  }
  return *next.exe;
}

void ExecutableCache::set_persistent(std::map<std::string, Tensor> tensors) {
  persistent_ = std::move(tensors);
  ++persistent_version_;
}

const std::map<std::string, Tensor>& ExecutableCache::persistent() {
  pull_from_active();
  return persistent_;
}

}  // namespace kiln::models
