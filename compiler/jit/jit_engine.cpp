#include "compiler/jit/jit_engine.h"

#include <chrono>
#include <cstdio>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/jit/optimize.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/ir/error.h"

namespace kiln::compiler {

namespace {

template <class T>
T unwrap(llvm::Expected<T> value, const std::string& what) {
  if (!value) throw Error("jit: " + what + ": " + llvm::toString(value.takeError()));
  return std::move(*value);
}

void check(llvm::Error error, const std::string& what) {
  if (error) throw Error("jit: " + what + ": " + llvm::toString(std::move(error)));
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::vector<std::string> split_features(const std::string& features) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < features.size();) {
    const size_t comma = std::min(features.find(',', pos), features.size());
    if (comma > pos) out.push_back(features.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

}  // namespace

std::string time_passes_report(const CompileTimes& t, const Target& target) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "===-- kiln compile time (%s, %s, %d f32 lanes) --===\n"
                "  lower     %9.2f ms  (graph to LLVM IR)\n"
                "  optimize  %9.2f ms  (LLVM O3)\n"
                "  codegen   %9.2f ms  (machine code)\n"
                "  total     %9.2f ms\n",
                target.cpu.c_str(), target.triple.c_str(), target.vector_width, t.lower_ms, t.optimize_ms,
                t.codegen_ms, t.lower_ms + t.optimize_ms + t.codegen_ms);
  return buf;
}

JitEngine::JitEngine(const Target& target) : target_(target) {
  initialize_llvm_native_target();
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(target.triple)};
  jtmb.setCPU(target.cpu);
  jtmb.addFeatures(split_features(target.features));
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  jit_ = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create(), "creating LLJIT");

  // The runtime lives in this executable (a static library), where a dynamic
  // symbol search would not find it: hand its addresses to the JIT directly.
  llvm::orc::MangleAndInterner mangle(jit_->getExecutionSession(), jit_->getDataLayout());
  const auto exported = llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable;
  llvm::orc::SymbolMap runtime;
  runtime[mangle("kiln_parallel_for")] = {llvm::orc::ExecutorAddr::fromPtr(&kiln_parallel_for), exported};
  check(jit_->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(runtime))), "defining runtime symbols");
  jit_->getMainJITDylib().addGenerator(
      unwrap(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix()),
             "searching process symbols"));
}

JitEngine::~JitEngine() = default;

void* JitEngine::compile(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context,
                         const std::string& entry, CompileTimes& times) {
  auto start = std::chrono::steady_clock::now();
  const std::unique_ptr<llvm::TargetMachine> tm = make_target_machine(target_);
  optimize_module(*module, *tm);
  times.optimize_ms += ms_since(start);

  start = std::chrono::steady_clock::now();
  check(jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(context))), "adding module");
  // The lookup materializes the module: this is where machine code is generated.
  const llvm::orc::ExecutorAddr addr = unwrap(jit_->lookup(entry), "looking up " + entry);
  times.codegen_ms += ms_since(start);
  return addr.toPtr<void*>();
}

}  // namespace kiln::compiler
