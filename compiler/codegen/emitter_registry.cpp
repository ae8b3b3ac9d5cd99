#include "compiler/codegen/emitter_registry.h"

#include <mutex>

#include "compiler/codegen/families.h"
#include "engine/ir/error.h"

namespace kiln::compiler {

EmitterRegistry& EmitterRegistry::global() {
  static EmitterRegistry registry;
  return registry;
}

namespace {

void add(std::map<std::string, OpEmitter>& emitters, const std::string& op, OpEmitter e) {
  if (!emitters.emplace(op, std::move(e)).second) throw Error("codegen: op '" + op + "' already has an emitter");
}

}  // namespace

void EmitterRegistry::add_elemental(const std::string& op, ElementalFn fn) { add(emitters_, op, {std::move(fn), {}}); }

void EmitterRegistry::add_kernel(const std::string& op, KernelFn fn, KernelReads reads, bool takes_epilogue) {
  add(emitters_, op, {{}, std::move(fn), reads == KernelReads::generators, takes_epilogue});
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
