#pragma once
// The state of lowering one graph into one LLVM module: the IRBuilder, the target's
// vector width, and the helpers every emitter uses (types, constants, vector and
// scalar memory access, buffer pointers, loops, parallel-for, run-time errors).
//
// How values live in generated code:
//   dtype  memory (buffers)        registers
//   f32    float                   float / <W x float>
//   i32    i32                     i32   / <W x i32>
//   bool   i8 (0 or 1, C++ bool)   i1    / <W x i1>     (load: != 0, store: zext)
// W is 1 (a scalar) or vector_width(), the target's f32 lanes; i32 and bool
// vectors use the same lane count so one index covers all operands.
//
// Every generated function gets the kernel's argument table as its first
// argument (kernel_codegen.h: the kernel's inputs, then its outputs, then the
// status word); buffer(v) returns the data pointer of kernel value v in the
// function being emitted, so emitters that outline loop bodies (parallel_for)
// simply ask for pointers again inside the body.
#include <cstdint>
#include <functional>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <map>
#include <string>
#include <vector>

#include "compiler/target/target.h"
#include "engine/ir/graph.h"

namespace kiln::compiler {

class LoweringContext {
 public:
  LoweringContext(llvm::Module& module, const Target& target);

  // Where the values of the kernel being emitted live in its argument table:
  // slot per value id (those with memory: inputs and outputs), and the status word's slot.
  void set_slots(std::map<int32_t, size_t> slots, size_t status_slot);

  llvm::LLVMContext& context() { return module_.getContext(); }
  llvm::Module& module() { return module_; }
  llvm::IRBuilder<>& b() { return builder_; }
  int vector_width() const { return target_.vector_width; }
  const Target& target() const { return target_; }

  // ---- types ----
  // bf16 is i16 in memory and an f32 in registers, converted by load and store
  // (no CPU without avx512_bf16 computes in it anyway). A bf16 register value is
  // always exactly a bf16: only round_bf16 (the cast to bf16) and load make one,
  // so store only drops the zero low half.
  llvm::Type* reg_type(DType t, int width = 1);  // scalar if width == 1, else a vector
  llvm::Type* mem_type(DType t);
  llvm::Type* i64();
  llvm::Type* ptr();

  // ---- constants ----
  llvm::Value* i64c(int64_t v);
  llvm::Value* i32c(int32_t v, int width = 1);
  llvm::Value* f32c(float v, int width = 1);
  // `v` converted to dtype t (as convert_element does), splat to `width` lanes.
  llvm::Value* constant(DType t, double v, int width = 1);
  llvm::Value* splat(llvm::Value* scalar, int width);  // `scalar` itself when width == 1
  // N vectors of N lanes (N a power of two) -> one whose lane i is the sum of
  // vector i's lanes, pairwise in log2(N) stages (each adds the even and odd
  // lanes of pairs of vectors): N dot products finished at once.
  llvm::Value* sum_lanes(std::vector<llvm::Value*> vectors);

  // ---- memory: `width` consecutive elements of a buffer of dtype t at element `offset` ----
  llvm::Value* load(DType t, llvm::Value* base, llvm::Value* offset, int width);
  // The same as stored (bf16 as i16 bits), lanes off `mask` (<width x i1>) 0
  // and not read. Not inbounds: past the mask the address may leave the buffer.
  llvm::Value* load_stored(DType t, llvm::Value* base, llvm::Value* offset, int width, llvm::Value* mask);
  void store(DType t, llvm::Value* base, llvm::Value* offset, llvm::Value* v);
  // bf16 bits (i16, or a vector of them) -> f32; f32 -> the nearest bf16 as an
  // f32 (bfloat16::round_bits); an exact bf16 f32 -> its bits.
  llvm::Value* widen_bf16(llvm::Value* bits);
  // `scalar`, or a vector of it with as many lanes as v has.
  llvm::Type* lanes_like(llvm::Value* v, llvm::Type* scalar);
  llvm::Value* round_bf16(llvm::Value* x);
  llvm::Value* narrow_bf16(llvm::Value* x);

  // ---- buffers, in the function being emitted ----
  llvm::Value* buffer(Value v);  // loaded once per function, in its entry block; throws if v has no slot
  // The data pointer in argument slot `slot` (an i64 computed at run time), for
  // emitters that walk a table of slots instead of naming each value.
  llvm::Value* buffer_in_slot(llvm::Value* slot);
  llvm::Value* status_word();    // i32*: the run's status (kiln_error_code)
  // The buffer table of the function being emitted, to pass on to functions it calls.
  llvm::Value* buffer_table();

  // ---- functions ----
  // A fresh internal function `void name(ptr buffers, extra...)`; `body` emits its
  // code with the builder inside it. The builder's position and the buffer cache
  // are restored afterwards. Returns the function.
  llvm::Function* define_function(const std::string& name, const std::vector<llvm::Type*>& extra_params,
                                   const std::function<void(llvm::Function*)>& body);
  std::string unique_name(const std::string& prefix);  // prefix, prefix.1, ...
  // `count` floats on the stack, 64-byte aligned, allocated in the entry block of
  // the function being emitted (once per call, not per loop iteration).
  llvm::Value* stack_buffer(int64_t count, const char* name);

  // ---- loops ----
  // for (i = begin; i < end; i += step) body(i); i is i64.
  void for_range(llvm::Value* begin, llvm::Value* end, int64_t step, const std::function<void(llvm::Value*)>& body);
  void for_range(int64_t begin, int64_t end, int64_t step, const std::function<void(llvm::Value*)>& body);
  // The same with loop-carried values (accumulators): `body(i, carried)` returns
  // the next iteration's values; returns the values after the last iteration.
  using Carried = std::vector<llvm::Value*>;
  Carried for_range(llvm::Value* begin, llvm::Value* end, int64_t step, Carried init,
                    const std::function<Carried(llvm::Value*, const Carried&)>& body);
  Carried for_range(int64_t begin, int64_t end, int64_t step, Carried init,
                    const std::function<Carried(llvm::Value*, const Carried&)>& body);
  // Values made by `body` only where `cond` (i1) holds, else `otherwise` (of the
  // same types): a branch around the body's code, and a phi per value named
  // `name`. For work worth skipping, not for a select.
  Carried only_if(llvm::Value* cond, const Carried& otherwise, const std::function<Carried()>& body,
                  const std::string& name);
  // `then`'s code where `cond` (i1) holds, else `otherwise`'s (if given): a
  // branch, for work that makes no values.
  void if_else(llvm::Value* cond, const std::function<void()>& then, const std::function<void()>& otherwise,
               const std::string& name);
  // Splits [0, n) into ranges run by the runtime's thread pool (kiln_parallel_for)
  // with at least `grain` indices per task; body(begin, end) is emitted into an
  // outlined function (ask for buffers again inside it). Calls the body directly
  // when n <= grain, so small kernels run serially without the runtime.
  void parallel_for(const std::string& name, int64_t n, int64_t grain,
                    const std::function<void(llvm::Value* begin, llvm::Value* end)>& body);
  // Runs `body` with `values` (i64, i1 or pointer values of the function being
  // emitted) ambient: each parallel_for inside it passes them to its outlined
  // body through a frame on the caller's stack (with the buffer table), and
  // ambient(i) is value i as seen in the function being emitted. For what a body
  // cannot ask the buffer table for: a run-time block index, a scratch pointer.
  void with_ambient(std::vector<llvm::Value*> values, const std::function<void()>& body);
  llvm::Value* ambient(size_t i) const;
  // Grain (in iterations) so that each task does about kParallelGrainElements elements.
  static int64_t grain_for(int64_t elements_per_iteration);
  static constexpr int64_t kParallelGrainElements = 1 << 15;

  // ---- run-time errors ----
  // Where `failed` (i1 or <W x i1>) holds in any lane, records `code` in the status
  // word (the first error of a run wins). Code after it runs on regardless, so the
  // caller must also make the failing lanes harmless (e.g. divide by 1 instead).
  void report_error_if(llvm::Value* failed, int32_t code);

 private:
  llvm::Module& module_;
  Target target_;
  std::map<int32_t, size_t> slots_;
  size_t status_slot_ = 0;
  llvm::IRBuilder<> builder_;
  // The function being emitted: its buffer table argument, the entry block's
  // terminator (pointer loads go before it), and the pointers loaded so far.
  llvm::Value* buffers_arg_ = nullptr;
  llvm::Instruction* entry_end_ = nullptr;
  std::map<int32_t, llvm::Value*> buffer_cache_;
  std::vector<llvm::Value*> ambient_;  // in the function being emitted
  std::map<std::string, int> name_counts_;
};

}  // namespace kiln::compiler
