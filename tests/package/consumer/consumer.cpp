// Parses a .kir graph, runs it with the JIT and the interpreter on the same
// bindings, and prints each output's largest difference between the two.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "compiler/backend.h"
#include "engine/ir/parser.h"
#include "engine/param_init.h"
#include "ops/register_all.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer FILE.kir\n");
    return 2;
  }
  kiln::register_all_ops();
  const kiln::Graph g = kiln::parse_kir_file(argv[1]);
  std::map<std::string, kiln::Tensor> outputs[2];
  const char* backends[2] = {"jit", "interp"};
  for (int b = 0; b < 2; ++b) {
    kiln::compiler::BackendOptions opts;
    opts.backend = backends[b];
    auto exe = kiln::compiler::make_executable(g, opts);
    for (kiln::Value v : g.declarations(kiln::ValueKind::input))
      exe->bind(g.name_of(v), kiln::Tensor::zeros(g.type(v)));
    kiln::bind_initial_values(*exe, 0);
    exe->run();
    for (const std::string& name : exe->output_names()) outputs[b].emplace(name, exe->output(name));
  }
  for (const auto& [name, jit] : outputs[0]) {
    const kiln::Tensor& interp = outputs[1].at(name);
    double diff = 0;
    if (jit.dtype() == kiln::DType::f32)
      for (int64_t i = 0; i < jit.numel(); ++i)
        diff = std::max(diff, std::fabs(static_cast<double>(jit.f32().data()[i]) - interp.f32().data()[i]));
    std::printf("%%%s: %s, jit - interp: %g\n", name.c_str(), kiln::type_str(jit.type()).c_str(), diff);
  }
  return 0;
}
