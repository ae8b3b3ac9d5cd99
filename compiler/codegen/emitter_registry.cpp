#include "compiler/codegen/emitter_registry.h"

#include <mutex>

#include "compiler/codegen/families.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {

EmitterRegistry& EmitterRegistry::global() {
  static EmitterRegistry registry;
  return registry;
}

namespace {

void add(std::map<std::string, OpEmitter>& emitters, const std::string& op, OpEmitter e) {
  if (!emitters.emplace(op, std::move(e)).second) throw Error("codegen: op '" + op + "' already has an emitter");
}

// The op's OpDef, if its lowering facts are `lowering` and `takes_epilogue`;
// else a kiln::Error naming the op, what the emitter does and what the OpDef says.
void check_agrees(const std::string& op, const std::string& emitter, Lowering lowering, bool takes_epilogue) {
  const OpDef* def = OpRegistry::global().find(op);
  if (!def) throw Error("codegen: " + emitter + " for op '" + op + "', which the op catalogue does not have");
  if (def->lowering == lowering && def->takes_epilogue == takes_epilogue) return;
  const auto facts = [](Lowering l, bool epilogue) {
    return "lowering " + std::string(lowering_name(l)) + (epilogue ? ", takes an epilogue" : "");
  };
  throw Error("codegen: " + emitter + " for op '" + op + "' (" + facts(lowering, takes_epilogue) +
              ") disagrees with its OpDef (" + facts(def->lowering, def->takes_epilogue) +
              "): fusion and the schedule trust the OpDef, so the emitter must do what it says");
}

}  // namespace

void EmitterRegistry::add_elemental(const std::string& op, ElementalFn fn) {
  check_agrees(op, "an elemental emitter", Lowering::elemental, false);
  add(emitters_, op, {std::move(fn), {}});
}

void EmitterRegistry::add_kernel(const std::string& op, KernelFn fn, KernelReads reads, bool takes_epilogue) {
  const bool generators = reads == KernelReads::generators;
  check_agrees(op, generators ? "a kernel emitter reading generators" : "a kernel emitter reading memory",
               generators ? Lowering::fuses_producers : Lowering::reads_memory, takes_epilogue);
  add(emitters_, op, {{}, std::move(fn)});
}

const OpEmitter* EmitterRegistry::find(const std::string& op) const {
  auto it = emitters_.find(op);
  return it == emitters_.end() ? nullptr : &it->second;
}

std::vector<std::string> EmitterRegistry::ops() const {
  std::vector<std::string> names;
  for (const auto& [name, e] : emitters_) names.push_back(name);
  return names;
}

void register_all_emitters() {
  static std::once_flag once;
  std::call_once(once, [] {
    EmitterRegistry& r = EmitterRegistry::global();
    register_elementwise_emitters(r);
    register_shape_emitters(r);
    register_constant_emitters(r);
    register_dropout_emitters(r);
    register_reduction_emitters(r);
    register_normalization_emitters(r);
    register_loss_emitters(r);
    register_linear_loss_emitters(r);
    register_gather_emitters(r);
    register_matmul_emitters(r);
    register_attention_emitters(r);
  });
}

}  // namespace kiln::compiler
