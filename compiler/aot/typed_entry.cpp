#include "compiler/aot/typed_entry.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "engine/ir/error.h"

namespace kiln::compiler {

namespace {

// Every definition but LLVM's own (llvm.global_ctors and the like keep their
// special linkage).
void internalize_all(llvm::Module& m) {
  for (llvm::GlobalValue& v : m.global_values())
    if (!v.isDeclaration() && !v.getName().starts_with("llvm.")) v.setLinkage(llvm::GlobalValue::InternalLinkage);
}

}  // namespace

void add_typed_entry(LoweredProgram& lowered, const Graph& g, const AotInterface& api, const Target& target) {
  llvm::Module& m = *lowered.module;
  llvm::Function* raw = m.getFunction(lowered.entry);
  if (!raw) throw Error("aot: the lowered module has no entry '" + lowered.entry + "'");
  internalize_all(m);

  llvm::LLVMContext& cx = m.getContext();
  llvm::Type* ptr = llvm::PointerType::get(cx, 0);
  llvm::Type* i8 = llvm::Type::getInt8Ty(cx);
  llvm::Type* i32 = llvm::Type::getInt32Ty(cx);
  const std::string name = api.prefix + "_run";
  auto* run =
      llvm::Function::Create(llvm::FunctionType::get(i32, {ptr, ptr}, false), llvm::Function::ExternalLinkage, name, m);
  if (run->getName() != name) throw Error("aot: the entry prefix '" + api.prefix + "' clashes with a kernel's name");
  run->addFnAttr(llvm::Attribute::NoUnwind);
  run->addFnAttr("target-cpu",
                 target.cpu);  // the same as the kernels', so they may be inlined
  if (!target.features.empty()) run->addFnAttr("target-features", target.features);
  llvm::Value* args = run->getArg(0);
  llvm::Value* workspace = run->getArg(1);
  args->setName("args");
  workspace->setName("workspace");

  llvm::IRBuilder<> b(llvm::BasicBlock::Create(cx, "entry", run));
  const uint64_t n = g.num_values();
  llvm::Value* table = b.CreateAlloca(llvm::ArrayType::get(ptr, n + 1), nullptr, "buffers");
  llvm::Value* status = b.CreateAlloca(i32, nullptr, "status");
  b.CreateStore(b.getInt32(0), status);

  std::vector<llvm::Value*> fields;
  for (size_t i = 0; i < api.fields.size(); ++i)
    fields.push_back(
        b.CreateAlignedLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, args, i), llvm::Align(8), api.fields[i].name));
  std::vector<llvm::Value*> buffers;
  for (uint64_t id = 0; id < n; ++id) {
    const AotBuffer& where = api.buffers[id];
    buffers.push_back(where.place == AotBuffer::Place::field
                          ? fields[where.field]
                          : b.CreateConstInBoundsGEP1_64(i8, workspace, where.offset));
    b.CreateAlignedStore(buffers.back(), b.CreateConstInBoundsGEP1_64(ptr, table, id), llvm::Align(8));
  }
  b.CreateAlignedStore(status, b.CreateConstInBoundsGEP1_64(ptr, table, n), llvm::Align(8));
  b.CreateCall(raw, {table});

  for (const AotCopy& copy : api.copies) {
    const TensorType& t = g.type(copy.value);
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype);
    const llvm::Align align(dtype_size(t.dtype));
    if (bytes > 0) b.CreateMemCpy(fields[copy.field], align, buffers[static_cast<size_t>(copy.value.id)], align, bytes);
  }
  b.CreateRet(b.CreateLoad(i32, status));
}

}  // namespace kiln::compiler
