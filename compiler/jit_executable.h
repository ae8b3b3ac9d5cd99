#pragma once
// The JIT backend: compiles the whole graph to machine code for the host (or a
// named CPU) once, in the constructor, then runs it as often as wanted. Unsupported
// ops fail here, at compile time, with kiln::Error("jit: no lowering for op 'X'").
#include <memory>
#include <string>
#include <vector>

#include "compiler/jit/jit_engine.h"
#include "engine/executable.h"

namespace kiln::compiler {

struct JitOptions {
  std::string target_cpu;  // empty: the host CPU and its features
};

class JitExecutable : public Executable {
 public:
  explicit JitExecutable(Graph graph, const JitOptions& options = {});
  ~JitExecutable() override;

  const CompileTimes& compile_times() const { return times_; }
  const Target& target() const { return engine_->target(); }

 protected:
  void execute(std::map<std::string, Tensor>& outputs, std::map<std::string, Tensor>& assigned) override;

 private:
  [[noreturn]] void throw_run_error(int32_t status) const;

  std::unique_ptr<JitEngine> engine_;
  CompileTimes times_;
  void (*entry_)(void** buffers) = nullptr;  // lower_graph.h documents the ABI
  std::vector<Tensor> results_;              // by value id: node results, allocated once
};

}  // namespace kiln::compiler
