#include "models/run/executable_cache.h"

#include <algorithm>
#include <chrono>

#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln::models {
namespace {

bool declares(const Graph& g, const std::string& name) {
  const auto v = g.find(name);
  return v && g.value(*v).kind != ValueKind::result;
}

}  // namespace

std::string BatchShape::str() const {
  std::string s = "[B=" + std::to_string(batch) + " S=" + std::to_string(src_len);
  if (tgt_len > 0) s += " T=" + std::to_string(tgt_len);
  return s + (accumulate ? " accumulating]" : "]");
}

ExecutableCache::ExecutableCache(GraphBuilder build, compiler::BackendOptions exec, CompileObserver on_compile)
    : build_(std::move(build)), on_compile_(std::move(on_compile)), exec_(std::move(exec)) {
  // The executables run one at a time: one arena serves them all.
  if (!exec_.workspace) exec_.workspace = std::make_shared<compiler::Workspace>();
}

void ExecutableCache::take_back() {
  if (!active_) return;
  for (auto& [name, t] : persistent_)
    if (active_->is_bound(name)) t = active_->unbind(name);
  active_ = nullptr;
}

Executable& ExecutableCache::get(const BatchShape& shape) {
  auto it = executables_.find(shape);
  if (it == executables_.end()) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<Executable> exe = compiler::make_executable(build_(shape), exec_);
    if (on_compile_)
      on_compile_(exe->graph().name(), shape,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    it = executables_.emplace(shape, std::move(exe)).first;
  }
  Executable& next = *it->second;
  if (&next != active_) {
    take_back();
    for (auto& [name, t] : persistent_)
      if (declares(next.graph(), name)) next.bind(name, std::move(t));
    active_ = &next;
  }
  return next;
}

void ExecutableCache::set_persistent(std::map<std::string, Tensor> tensors) {
  take_back();
  persistent_ = std::move(tensors);
}

const std::map<std::string, Tensor>& ExecutableCache::persistent() {
  take_back();
  return persistent_;
}

}  // namespace kiln::models
