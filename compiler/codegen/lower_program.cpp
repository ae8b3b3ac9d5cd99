#include "compiler/codegen/lower_program.h"

#include <chrono>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "compiler/codegen/kernel_codegen.h"
#include "engine/ir/error.h"

namespace kiln::compiler {

LoweredProgram::LoweredProgram() = default;
LoweredProgram::LoweredProgram(LoweredProgram&&) noexcept = default;
LoweredProgram::~LoweredProgram() {
  module.reset();  // before its context
}

LoweredProgram lower_program(const Program& p, const Target& target, const std::string& entry) {
  const auto start = std::chrono::steady_clock::now();
  LoweredProgram out;
  out.context = std::make_unique<llvm::LLVMContext>();
  out.module = std::make_unique<llvm::Module>("kiln." + p.name, *out.context);
  out.module->setTargetTriple(target.triple);
  out.entry = entry;
  LoweringContext cx(*out.module, target);
  std::vector<llvm::Function*> kernels;
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    llvm::Function* f = emit_kernel(cx, *p.kernels[k].graph, numbered("k", k) + "_" + p.kernels[k].kind);
    f->setLinkage(llvm::Function::InternalLinkage);
    kernels.push_back(f);
  }

  cx.set_slots({}, 0);
  llvm::Function* main = cx.define_function(entry, {}, [&](llvm::Function* f) {
    llvm::Value* table = f->getArg(0);
    table->setName("buffers");
    auto& b = cx.b();
    const auto entry_of = [&](size_t index) {
      return b.CreateAlignedLoad(cx.ptr(), b.CreateConstInBoundsGEP1_64(cx.ptr(), table, index), llvm::Align(8));
    };
    llvm::Value* status = entry_of(p.num_values);
    size_t most_args = 0;
    for (const KernelCall& call : p.calls) most_args = std::max(most_args, call.args.size() + 1);
    llvm::Value* args = b.CreateAlloca(llvm::ArrayType::get(cx.ptr(), most_args), nullptr, "args");
    for (const KernelCall& call : p.calls) {
      for (size_t a = 0; a < call.args.size(); ++a) {
        const size_t value = static_cast<size_t>(p.buffers[static_cast<size_t>(call.args[a])].value.id);
        b.CreateAlignedStore(entry_of(value), b.CreateConstInBoundsGEP1_64(cx.ptr(), args, a), llvm::Align(8));
      }
      b.CreateAlignedStore(status, b.CreateConstInBoundsGEP1_64(cx.ptr(), args, call.args.size()), llvm::Align(8));
      b.CreateCall(kernels[call.kernel], {args});
    }
  });
  if (main->getName() != entry) throw Error("codegen: the entry name '" + entry + "' clashes with a kernel's");
  main->setLinkage(llvm::Function::ExternalLinkage);

  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*out.module, &os)) throw Error("jit: generated invalid LLVM IR: " + problems);
  out.lower_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace kiln::compiler
