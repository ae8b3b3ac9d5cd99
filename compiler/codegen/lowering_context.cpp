#include "compiler/codegen/lowering_context.h"

#include <cmath>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "compiler/runtime/kiln_runtime.h"
#include "engine/ir/bfloat16.h"
#include "engine/ir/error.h"

namespace kiln::compiler {

LoweringContext::LoweringContext(llvm::Module& module, const Target& target)
    : module_(module), target_(target), builder_(module.getContext()) {}

void LoweringContext::set_slots(std::map<int32_t, size_t> slots, size_t status_slot) {
  slots_ = std::move(slots);
  status_slot_ = status_slot;
}

// ---- types ----

llvm::Type* LoweringContext::reg_type(DType t, int width) {
  llvm::Type* scalar = nullptr;
  switch (t) {
    case DType::f32:
    case DType::bf16: scalar = builder_.getFloatTy(); break;  // bf16 widened: see lowering_context.h
    case DType::i32: scalar = builder_.getInt32Ty(); break;
    case DType::boolean: scalar = builder_.getInt1Ty(); break;
  }
  if (width == 1) return scalar;
  return llvm::FixedVectorType::get(scalar, static_cast<unsigned>(width));
}

llvm::Type* LoweringContext::mem_type(DType t) {
  if (t == DType::boolean) return builder_.getInt8Ty();
  if (t == DType::bf16) return builder_.getInt16Ty();
  return reg_type(t);
}

llvm::Type* LoweringContext::i64() { return builder_.getInt64Ty(); }
llvm::Type* LoweringContext::ptr() { return builder_.getPtrTy(); }

// ---- constants ----

llvm::Value* LoweringContext::i64c(int64_t v) { return builder_.getInt64(static_cast<uint64_t>(v)); }

llvm::Value* LoweringContext::i32c(int32_t v, int width) {
  return splat(builder_.getInt32(static_cast<uint32_t>(v)), width);
}

llvm::Value* LoweringContext::f32c(float v, int width) {
  return splat(llvm::ConstantFP::get(builder_.getFloatTy(), v), width);
}

llvm::Value* LoweringContext::constant(DType t, double v, int width) {
  switch (t) {
    case DType::f32: return f32c(static_cast<float>(v), width);
    case DType::i32: {
      // Saturating and NaN -> 0, like convert_element.
      int32_t i = 0;
      if (std::isnan(v)) i = 0;
      else if (v <= -2147483648.0) i = INT32_MIN;
      else if (v >= 2147483648.0) i = INT32_MAX;
      else i = static_cast<int32_t>(v);
      return i32c(i, width);
    }
    case DType::boolean: return splat(builder_.getInt1(v != 0), width);
    case DType::bf16: return f32c(round_to_bf16(static_cast<float>(v)), width);
  }
  throw Error("codegen: unknown dtype");
}

llvm::Value* LoweringContext::splat(llvm::Value* scalar, int width) {
  if (width == 1) return scalar;
  return builder_.CreateVectorSplat(static_cast<unsigned>(width), scalar);
}

llvm::Value* LoweringContext::sum_lanes(std::vector<llvm::Value*> v) {
  std::vector<int> even, odd;
  for (int l = 0; l < static_cast<int>(v.size()); ++l) {
    even.push_back(2 * l);
    odd.push_back(2 * l + 1);
  }
  while (v.size() > 1) {
    std::vector<llvm::Value*> next;
    for (size_t i = 0; i < v.size(); i += 2)
      next.push_back(builder_.CreateFAdd(builder_.CreateShuffleVector(v[i], v[i + 1], even),
                                         builder_.CreateShuffleVector(v[i], v[i + 1], odd)));
    v = std::move(next);
  }
  return v[0];
}

// ---- memory ----

llvm::Value* LoweringContext::load(DType t, llvm::Value* base, llvm::Value* offset, int width) {
  llvm::Type* elem = mem_type(t);
  llvm::Value* addr = builder_.CreateInBoundsGEP(elem, base, offset);
  llvm::Type* type = width == 1 ? elem : llvm::FixedVectorType::get(elem, static_cast<unsigned>(width));
  llvm::Value* v = builder_.CreateAlignedLoad(type, addr, llvm::Align(dtype_size(t)));
  if (t == DType::boolean) v = builder_.CreateICmpNE(v, llvm::Constant::getNullValue(type));
  if (t == DType::bf16) v = widen_bf16(v);
  return v;
}

llvm::Value* LoweringContext::load_stored(DType t, llvm::Value* base, llvm::Value* offset, int width,
                                          llvm::Value* mask) {
  auto* vec = llvm::FixedVectorType::get(mem_type(t), static_cast<unsigned>(width));
  return builder_.CreateMaskedLoad(vec, builder_.CreateGEP(mem_type(t), base, offset), llvm::Align(dtype_size(t)),
                                   mask, llvm::Constant::getNullValue(vec));
}

llvm::Type* LoweringContext::lanes_like(llvm::Value* v, llvm::Type* scalar) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType()))
    return llvm::FixedVectorType::get(scalar, vt->getNumElements());
  return scalar;
}

llvm::Value* LoweringContext::widen_bf16(llvm::Value* bits) {
  llvm::Type* i32 = lanes_like(bits, builder_.getInt32Ty());
  llvm::Value* wide = builder_.CreateShl(builder_.CreateZExt(bits, i32), llvm::ConstantInt::get(i32, 16));
  return builder_.CreateBitCast(wide, lanes_like(bits, builder_.getFloatTy()), "bf16.widened");
}

llvm::Value* LoweringContext::round_bf16(llvm::Value* x) {
  auto& b = builder_;
  llvm::Type* i32 = lanes_like(x, b.getInt32Ty());
  const auto c = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  // bfloat16::round_bits: + 0x7fff + the lowest kept bit, then the low half
  // cleared; a NaN keeps its bits, made quiet.
  llvm::Value* u = b.CreateBitCast(x, i32);
  llvm::Value* lsb = b.CreateAnd(b.CreateLShr(u, c(16)), c(1));
  llvm::Value* rounded = b.CreateAnd(b.CreateAdd(b.CreateAdd(u, c(0x7fff)), lsb), c(0xffff0000u));
  llvm::Value* nan = b.CreateOr(b.CreateAnd(u, c(0xffff0000u)), c(0x00400000u));
  llvm::Value* is_nan = b.CreateICmpUGT(b.CreateAnd(u, c(0x7fffffffu)), c(0x7f800000u));
  return b.CreateBitCast(b.CreateSelect(is_nan, nan, rounded), x->getType(), "bf16.rounded");
}

llvm::Value* LoweringContext::narrow_bf16(llvm::Value* x) {
  llvm::Type* i32 = lanes_like(x, builder_.getInt32Ty());
  // Exact: a bf16 value's low half is zero (round_bf16 made it).
  llvm::Value* high = builder_.CreateLShr(builder_.CreateBitCast(x, i32), llvm::ConstantInt::get(i32, 16));
  return builder_.CreateTrunc(high, lanes_like(x, builder_.getInt16Ty()));
}

void LoweringContext::store(DType t, llvm::Value* base, llvm::Value* offset, llvm::Value* v) {
  llvm::Type* elem = mem_type(t);
  llvm::Value* addr = builder_.CreateInBoundsGEP(elem, base, offset);
  if (t == DType::boolean) v = builder_.CreateZExt(v, lanes_like(v, elem));
  if (t == DType::bf16) v = narrow_bf16(v);
  builder_.CreateAlignedStore(v, addr, llvm::Align(dtype_size(t)));
}

// ---- buffers ----

namespace {

llvm::Value* load_table_entry(llvm::IRBuilder<>& b, llvm::Value* table, llvm::Value* index) {
  llvm::Value* slot = b.CreateInBoundsGEP(b.getPtrTy(), table, index);
  llvm::LoadInst* load = b.CreateAlignedLoad(b.getPtrTy(), slot, llvm::Align(8));
  // The table does not change during a call: lets LLVM hoist and merge these
  // loads. (Callers that refill one table between calls keep the callee from
  // being inlined: a horizontal kernel's parts, the AOT entry's kernels.)
  load->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(b.getContext(), {}));
  return load;
}

}  // namespace

llvm::Value* LoweringContext::buffer(Value v) {
  if (!buffers_arg_) throw Error("codegen: buffer() outside a generated function");
  auto it = buffer_cache_.find(v.id);
  if (it != buffer_cache_.end()) return it->second;
  auto slot = slots_.find(v.id);
  if (slot == slots_.end()) throw Error("codegen: value " + std::to_string(v.id) + " has no memory in this kernel");
  llvm::IRBuilder<> entry(entry_end_);
  llvm::Value* p = load_table_entry(entry, buffers_arg_, i64c(static_cast<int64_t>(slot->second)));
  buffer_cache_[v.id] = p;
  return p;
}

llvm::Value* LoweringContext::buffer_in_slot(llvm::Value* slot) {
  if (!buffers_arg_) throw Error("codegen: buffer_in_slot() outside a generated function");
  return load_table_entry(builder_, buffers_arg_, slot);
}

llvm::Value* LoweringContext::status_word() {
  if (!buffers_arg_) throw Error("codegen: status_word() outside a generated function");
  auto it = buffer_cache_.find(-1);
  if (it != buffer_cache_.end()) return it->second;
  llvm::IRBuilder<> entry(entry_end_);
  llvm::Value* p = load_table_entry(entry, buffers_arg_, i64c(static_cast<int64_t>(status_slot_)));
  buffer_cache_[-1] = p;
  return p;
}

// ---- functions ----

std::string LoweringContext::unique_name(const std::string& prefix) {
  const int n = name_counts_[prefix]++;
  if (n == 0) return prefix;
  std::string name = prefix;
  name += '.';
  name += std::to_string(n);
  return name;
}

llvm::Value* LoweringContext::buffer_table() {
  if (!buffers_arg_) throw Error("codegen: buffer_table() outside a generated function");
  return buffers_arg_;
}

llvm::Function* LoweringContext::define_function(const std::string& name, const std::vector<llvm::Type*>& extra_params,
                                                 const std::function<void(llvm::Function*)>& body) {
  std::vector<llvm::Type*> params = {ptr()};
  params.insert(params.end(), extra_params.begin(), extra_params.end());
  auto* type = llvm::FunctionType::get(builder_.getVoidTy(), params, false);
  auto* f = llvm::Function::Create(type, llvm::Function::InternalLinkage, unique_name(name), module_);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  // Keep the explicit vector types at full width even on CPUs tuned to prefer 256-bit.
  f->addFnAttr("min-legal-vector-width", std::to_string(32 * vector_width()));
  f->addFnAttr("target-cpu", target_.cpu);
  if (!target_.features.empty()) f->addFnAttr("target-features", target_.features);

  const llvm::IRBuilderBase::InsertPoint saved_ip = builder_.saveIP();
  llvm::Value* saved_arg = buffers_arg_;
  llvm::Instruction* saved_end = entry_end_;
  std::map<int32_t, llvm::Value*> saved_cache = std::move(buffer_cache_);
  std::vector<llvm::Value*> saved_ambient = std::move(ambient_);
  ambient_.clear();

  auto* entry = llvm::BasicBlock::Create(context(), "entry", f);
  auto* start = llvm::BasicBlock::Create(context(), "start", f);
  builder_.SetInsertPoint(entry);
  entry_end_ = builder_.CreateBr(start);
  buffers_arg_ = f->getArg(0);
  buffer_cache_.clear();
  builder_.SetInsertPoint(start);
  body(f);
  builder_.CreateRetVoid();

  builder_.restoreIP(saved_ip);
  buffers_arg_ = saved_arg;
  entry_end_ = saved_end;
  buffer_cache_ = std::move(saved_cache);
  ambient_ = std::move(saved_ambient);
  return f;
}

// ---- loops ----

LoweringContext::Carried LoweringContext::only_if(llvm::Value* cond, const Carried& otherwise,
                                                 const std::function<Carried()>& body, const std::string& name) {
  llvm::Function* f = builder_.GetInsertBlock()->getParent();
  llvm::BasicBlock* skipped = builder_.GetInsertBlock();
  auto* then = llvm::BasicBlock::Create(context(), name, f);
  auto* done = llvm::BasicBlock::Create(context(), name + ".done", f);
  builder_.CreateCondBr(cond, then, done);
  builder_.SetInsertPoint(then);
  const Carried made = body();
  llvm::BasicBlock* then_end = builder_.GetInsertBlock();
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
  Carried out;
  for (size_t i = 0; i < made.size(); ++i) {
    llvm::PHINode* phi = builder_.CreatePHI(made[i]->getType(), 2, name);
    phi->addIncoming(made[i], then_end);
    phi->addIncoming(otherwise[i], skipped);
    out.push_back(phi);
  }
  return out;
}

void LoweringContext::if_else(llvm::Value* cond, const std::function<void()>& then,
                              const std::function<void()>& otherwise, const std::string& name) {
  llvm::Function* f = builder_.GetInsertBlock()->getParent();
  auto* then_block = llvm::BasicBlock::Create(context(), name, f);
  auto* else_block = otherwise ? llvm::BasicBlock::Create(context(), name + ".else", f) : nullptr;
  auto* done = llvm::BasicBlock::Create(context(), name + ".done", f);
  builder_.CreateCondBr(cond, then_block, else_block ? else_block : done);
  builder_.SetInsertPoint(then_block);
  then();
  builder_.CreateBr(done);
  if (else_block) {
    builder_.SetInsertPoint(else_block);
    otherwise();
    builder_.CreateBr(done);
  }
  builder_.SetInsertPoint(done);
}

LoweringContext::Carried LoweringContext::for_range(llvm::Value* begin, llvm::Value* end, int64_t step, Carried init,
                                                   const std::function<Carried(llvm::Value*, const Carried&)>& body) {
  llvm::Function* f = builder_.GetInsertBlock()->getParent();
  llvm::BasicBlock* pre = builder_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(context(), "loop", f);
  auto* loop_body = llvm::BasicBlock::Create(context(), "loop.body", f);
  auto* exit = llvm::BasicBlock::Create(context(), "loop.exit", f);
  builder_.CreateBr(header);
  builder_.SetInsertPoint(header);
  llvm::PHINode* i = builder_.CreatePHI(i64(), 2, "i");
  i->addIncoming(begin, pre);
  std::vector<llvm::PHINode*> phis;
  Carried current;
  for (llvm::Value* v : init) {
    phis.push_back(builder_.CreatePHI(v->getType(), 2, "acc"));
    phis.back()->addIncoming(v, pre);
    current.push_back(phis.back());
  }
  builder_.CreateCondBr(builder_.CreateICmpSLT(i, end), loop_body, exit);
  builder_.SetInsertPoint(loop_body);
  const Carried next_values = body(i, current);
  llvm::Value* next = builder_.CreateAdd(i, i64c(step), "i.next", /*HasNUW=*/true, /*HasNSW=*/true);
  llvm::BasicBlock* latch = builder_.GetInsertBlock();
  i->addIncoming(next, latch);
  for (size_t k = 0; k < phis.size(); ++k) phis[k]->addIncoming(next_values.at(k), latch);
  builder_.CreateBr(header);
  builder_.SetInsertPoint(exit);
  return current;
}

LoweringContext::Carried LoweringContext::for_range(int64_t begin, int64_t end, int64_t step, Carried init,
                                                   const std::function<Carried(llvm::Value*, const Carried&)>& body) {
  if (begin >= end) return init;
  if (begin + step >= end) return body(i64c(begin), init);  // one iteration: no loop
  return for_range(i64c(begin), i64c(end), step, std::move(init), body);
}

void LoweringContext::for_range(llvm::Value* begin, llvm::Value* end, int64_t step,
                                const std::function<void(llvm::Value*)>& body) {
  for_range(begin, end, step, {}, [&](llvm::Value* i, const Carried&) {
    body(i);
    return Carried{};
  });
}

void LoweringContext::for_range(int64_t begin, int64_t end, int64_t step,
                                const std::function<void(llvm::Value*)>& body) {
  for_range(begin, end, step, {}, [&](llvm::Value* i, const Carried&) {
    body(i);
    return Carried{};
  });
}

llvm::Value* LoweringContext::stack_buffer(int64_t count, const char* name) {
  llvm::BasicBlock& entry = builder_.GetInsertBlock()->getParent()->getEntryBlock();
  llvm::IRBuilder<> at_entry(&entry, entry.begin());
  llvm::AllocaInst* buffer = at_entry.CreateAlloca(at_entry.getFloatTy(), i64c(count), name);
  buffer->setAlignment(llvm::Align(64));
  return buffer;
}

int64_t LoweringContext::grain_for(int64_t elements_per_iteration) {
  return std::max<int64_t>(1, kParallelGrainElements / std::max<int64_t>(1, elements_per_iteration));
}

void LoweringContext::parallel_for(const std::string& name, int64_t n, int64_t grain,
                                   const std::function<void(llvm::Value*, llvm::Value*)>& body) {
  if (n <= 0) return;
  // With ambient values, the context is a frame {buffers, values...} instead of the buffer table.
  std::vector<llvm::Type*> fields = {ptr()};
  for (llvm::Value* v : ambient_) fields.push_back(v->getType());
  auto* frame_type = llvm::StructType::get(context(), fields);
  const std::vector<llvm::Value*> outer = ambient_;
  llvm::Function* outlined = define_function(name, {i64(), i64()}, [&](llvm::Function* f) {
    f->getArg(0)->setName(outer.empty() ? "buffers" : "frame");
    f->getArg(1)->setName("begin");
    f->getArg(2)->setName("end");
    if (!outer.empty()) {
      llvm::IRBuilder<> entry(entry_end_);
      buffers_arg_ = entry.CreateLoad(ptr(), entry.CreateStructGEP(frame_type, f->getArg(0), 0), "buffers");
      for (size_t i = 0; i < outer.size(); ++i)
        ambient_.push_back(entry.CreateLoad(fields[i + 1], entry.CreateStructGEP(frame_type, f->getArg(0), i + 1)));
    }
    body(f->getArg(1), f->getArg(2));
  });
  llvm::Value* context = buffers_arg_;
  if (!outer.empty()) {
    llvm::IRBuilder<> entry(entry_end_);
    context = entry.CreateAlloca(frame_type, nullptr, "frame");
    builder_.CreateStore(buffers_arg_, builder_.CreateStructGEP(frame_type, context, 0));
    for (size_t i = 0; i < outer.size(); ++i)
      builder_.CreateStore(outer[i], builder_.CreateStructGEP(frame_type, context, i + 1));
  }
  if (n <= grain) {
    builder_.CreateCall(outlined, {context, i64c(0), i64c(n)});
    return;
  }
  llvm::FunctionCallee runtime =
      module_.getOrInsertFunction("kiln_parallel_for", builder_.getVoidTy(), i64(), i64(), ptr(), ptr());
  builder_.CreateCall(runtime, {i64c(n), i64c(grain), outlined, context});
}

void LoweringContext::with_ambient(std::vector<llvm::Value*> values, const std::function<void()>& body) {
  std::vector<llvm::Value*> saved = std::exchange(ambient_, std::move(values));
  body();
  ambient_ = std::move(saved);
}

llvm::Value* LoweringContext::ambient(size_t i) const {
  if (i >= ambient_.size()) throw Error("codegen: ambient value " + std::to_string(i) + " was not set");
  return ambient_[i];
}

// ---- run-time errors ----

void LoweringContext::report_error_if(llvm::Value* failed, int32_t code) {
  if (failed->getType()->isVectorTy()) failed = builder_.CreateOrReduce(failed);
  llvm::Function* f = builder_.GetInsertBlock()->getParent();
  auto* report = llvm::BasicBlock::Create(context(), "error", f);
  auto* cont = llvm::BasicBlock::Create(context(), "error.cont", f);
  builder_.CreateCondBr(failed, report, cont, llvm::MDBuilder(context()).createBranchWeights(1, 1 << 20));
  builder_.SetInsertPoint(report);
  builder_.CreateAtomicCmpXchg(status_word(), builder_.getInt32(KILN_OK), builder_.getInt32(static_cast<uint32_t>(code)),
                               llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
  builder_.CreateBr(cont);
  builder_.SetInsertPoint(cont);
}

}  // namespace kiln::compiler
