#include "compiler/codegen/lower_program.h"

#include <chrono>
#include <llvm/IR/GlobalVariable.h>
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
  if (!p.collectives.empty())
    throw Error("codegen: @" + p.name + " has " + std::to_string(p.collectives.size()) + " " + p.collectives[0].op +
                " node(s): collectives run in the JIT's program only, which talks to the other ranks (an object "
                "file has no runtime for them)");
  const auto start = std::chrono::steady_clock::now();
  LoweredProgram out;
  out.context = std::make_unique<llvm::LLVMContext>();
  out.module = std::make_unique<llvm::Module>("kiln." + p.name, *out.context);
  out.module->setTargetTriple(target.triple);
  out.entry = entry;
  LoweringContext cx(*out.module, target);
  std::vector<llvm::Function*> kernels;
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    llvm::Function* f =
        emit_kernel(cx, *p.kernels[k].graph, p.kernels[k].roles, numbered("k", k) + "_" + p.kernels[k].label);
    f->setLinkage(llvm::Function::InternalLinkage);
    kernels.push_back(f);
  }

  // The calls as constant tables walked by one loop (code of a fixed size: a
  // program of 100,000 calls, or a call of 100,000 arguments, written out call
  // by call is one huge block that LLVM's scheduler takes minutes over): per
  // call its kernel and where its arguments start in a list of buffer indices.
  std::vector<llvm::Constant*> kernel_of_call;
  std::vector<uint64_t> arg_start = {0}, arg_value;
  size_t most_args = 0;
  for (const KernelCall& call : p.calls) {
    kernel_of_call.push_back(kernels[call.kernel]);
    for (int buffer : call.args)
      arg_value.push_back(static_cast<uint64_t>(p.buffers[static_cast<size_t>(buffer)].value.id));
    arg_start.push_back(arg_value.size());
    most_args = std::max(most_args, call.args.size() + 1);
  }
  const auto table = [&](llvm::Constant* init, const std::string& name) {
    return new llvm::GlobalVariable(*out.module, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init, name);
  };
  llvm::Value* call_kernels =
      table(llvm::ConstantArray::get(llvm::ArrayType::get(cx.ptr(), kernel_of_call.size()), kernel_of_call),
            entry + ".kernels");
  llvm::Value* call_args = table(llvm::ConstantDataArray::get(*out.context, arg_start), entry + ".arg_start");
  llvm::Value* arg_values = table(llvm::ConstantDataArray::get(*out.context, arg_value), entry + ".arg_values");

  cx.set_slots({}, 0);
  llvm::Function* main = cx.define_function(entry, {}, [&](llvm::Function* f) {
    f->getArg(0)->setName("buffers");
    auto& b = cx.b();
    const auto element = [&](llvm::Type* type, llvm::Value* array, llvm::Value* index, const char* name) {
      return b.CreateAlignedLoad(type, b.CreateInBoundsGEP(type, array, index), llvm::Align(8), name);
    };
    // Plain loads: the typed AOT entry fills `buffers` and may inline this function.
    llvm::Value* status = element(cx.ptr(), f->getArg(0), cx.i64c(static_cast<int64_t>(p.num_values)), "status");
    llvm::Value* args = b.CreateAlloca(llvm::ArrayType::get(cx.ptr(), most_args), nullptr, "args");
    cx.for_range(0, static_cast<int64_t>(p.calls.size()), 1, [&](llvm::Value* c) {
      llvm::Value* first = element(cx.i64(), call_args, c, "first");
      llvm::Value* end = element(cx.i64(), call_args, b.CreateAdd(c, cx.i64c(1)), "end");
      cx.for_range(first, end, 1, [&](llvm::Value* a) {
        llvm::Value* buffer = element(cx.ptr(), f->getArg(0), element(cx.i64(), arg_values, a, "value"), "buffer");
        b.CreateAlignedStore(buffer, b.CreateInBoundsGEP(cx.ptr(), args, b.CreateSub(a, first)), llvm::Align(8));
      });
      b.CreateAlignedStore(status, b.CreateInBoundsGEP(cx.ptr(), args, b.CreateSub(end, first)), llvm::Align(8));
      llvm::FunctionType* kernel_type = llvm::FunctionType::get(b.getVoidTy(), {cx.ptr()}, false);
      // Not inlined, should LLVM unroll this loop and see the callee: a kernel's
      // loads of `args` are invariant within one call only, and `args` is refilled.
      b.CreateCall(kernel_type, element(cx.ptr(), call_kernels, c, "kernel"), {args})->setIsNoInline();
    });
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
