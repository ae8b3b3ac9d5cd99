#include "compiler/jit_executable.h"

#include <chrono>
#include <cstring>

#include "compiler/collective_run.h"
#include "compiler/report/dump_page.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/interpreter.h"
#include "engine/ir/error.h"
#include "engine/numerics.h"

namespace kiln::compiler {

JitExecutable::JitExecutable(Graph graph, const JitOptions& options)
    : Executable(std::move(graph)),
      target_(detect_target(options.target_cpu)),
      workspace_(options.workspace ? options.workspace : std::make_shared<Workspace>()) {
  const auto start = std::chrono::steady_clock::now();
  compiled_ = compile_graph(graph_, options.pipeline);
  times_.passes_ms = compiled_.passes_ms;
  kernels_ = load_kernels(compiled_.program.kernels, target_, options.kernels, times_);
  if (!compiled_.dump_dir.empty()) {
    dump_kernels(compiled_.program, target_, compiled_.dump_dir);
    write_dump_page(compiled_.dump_dir);
  }
  times_.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

JitExecutable::~JitExecutable() = default;

// Generated code only records what went wrong; the interpreter, run on the same
// bindings, says exactly where and with which value (the same message as with
// --backend interp). Errors are rare, so the cost is no concern.
void JitExecutable::throw_run_error(int32_t status) const {
  Interpreter reference(graph_);
  for (const auto& [name, t] : bound_) reference.bind(name, t);
  reference.run();
  throw Error(kiln_error_message(status));
}

namespace {

// An output's or invariant result's tensor; its size comes from the graph, so
// a size over the memory limit is refused naming the value.
Tensor buffer_tensor(const ProgramBuffer& buf) {
  try {
    return Tensor::zeros(buf.type);
  } catch (const Error& e) {
    throw Error(std::string(buffer_kind_name(buf.kind)) + " %" + buf.name + ": " + e.what());
  }
}

}  // namespace

std::vector<void*> JitExecutable::buffer_pointers() {
  const Program& p = compiled_.program;
  std::byte* arena = workspace_->reserve(p.plan.arena_bytes);
  std::vector<void*> ptrs(p.buffers.size(), nullptr);
  size_t invariant = 0;
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const ProgramBuffer& buf = p.buffers[b];
    switch (buf.kind) {
      case BufferKind::input:
      case BufferKind::param:
      case BufferKind::state: ptrs[b] = bound_.at(buf.name).data(); break;
      case BufferKind::output: {
        auto it = outputs_.find(buf.name);
        if (it == outputs_.end()) it = outputs_.emplace(buf.name, buffer_tensor(buf)).first;
        ptrs[b] = it->second.data();
        break;
      }
      case BufferKind::invariant:
        if (invariant == invariants_.size()) invariants_.push_back(buffer_tensor(buf));
        ptrs[b] = invariants_[invariant++].data();
        break;
      case BufferKind::temp:
        ptrs[b] = buf.alias >= 0 ? ptrs[static_cast<size_t>(buf.alias)] : arena + p.plan.offsets[b];
        break;
    }
  }
  return ptrs;
}

void JitExecutable::check_results(size_t call_index, const std::vector<void*>& ptrs) const {
  const Program& p = compiled_.program;
  const KernelCall& call = p.calls[call_index];
  for (size_t a = call.num_inputs; a < call.args.size(); ++a) {
    const auto b = static_cast<size_t>(call.args[a]);
    const ProgramBuffer& buf = p.buffers[b];
    if (buf.type.dtype != DType::f32) continue;
    const std::string found = first_nonfinite(static_cast<const float*>(ptrs[b]), buf.type.shape);
    if (!found.empty())
      throw_nonfinite(graph_, buf.name, buf.type, found,
                      "kernel call " + std::to_string(call_index) + " of " + std::to_string(p.calls.size()) + " (k" +
                          std::to_string(call.kernel) + " " + describe(p.kernels[call.kernel]) + ")" +
                          (call.loc.scopes.empty() ? "" : " in " + describe(call.loc)));
  }
}

void JitExecutable::param_binding_changed(bool bound) {
  invariants_made_ = false;
  if (!bound) invariants_.clear();  // no run until it is bound again: the memory goes meanwhile
}

void JitExecutable::profile(bool on) {
  if (on) profile_ = {};
  profiling_ = on;
}

namespace {

// Chunk tracing for the length of one profiled run, so that its record holds
// its own loops' chunks only (not those of other executables run in between).
struct ChunkTracing {
  explicit ChunkTracing(bool on) : on(on) {
    if (!on) return;
    take_chunk_spans();  // strays
    trace_chunks(true);
  }
  ~ChunkTracing() {
    if (on) trace_chunks(false);
  }
  const bool on;
};

}  // namespace

void JitExecutable::execute() {
  const Program& p = compiled_.program;
  const std::vector<void*> ptrs = buffer_pointers();
  int32_t status = KILN_OK;
  const ChunkTracing tracing(profiling_);
  CollectiveRun collective_run(p, ptrs, profiling_ ? &profile_ : nullptr);
  const bool run_invariants = check_numerics_ || !invariants_made_;
  std::vector<void*> args;
  for (size_t i = 0; i < p.calls.size(); ++i) {
    if (!p.collectives.empty()) {
      collective_run.test_in_flight();
      collective_run.before_call(i);
    }
    const KernelCall& call = p.calls[i];
    if (call.invariant && !run_invariants) continue;
    args.clear();
    for (int b : call.args) args.push_back(ptrs[static_cast<size_t>(b)]);
    args.push_back(&status);
    const int64_t begin = profiling_ ? trace_clock_ns() : 0;
    kernels_.functions()[call.kernel](args.data());
    if (profiling_) profile_.calls.push_back({i, begin, trace_clock_ns()});
    if (status != KILN_OK) throw_run_error(status);
    if (check_numerics_) check_results(i, ptrs);
  }
  collective_run.before_call(p.calls.size());
  invariants_made_ = true;
  if (profiling_) {
    ++profile_.runs;
    std::vector<ChunkSpan> chunks = take_chunk_spans();
    profile_.chunks.insert(profile_.chunks.end(), chunks.begin(), chunks.end());
  }
  // Outputs that are declarations are copies of them; the others were written in place.
  for (int o : p.outputs) {
    const ProgramBuffer& buf = p.buffers[static_cast<size_t>(o)];
    if (buf.kind != BufferKind::output) outputs_.insert_or_assign(buf.name, bound_.at(buf.name));
  }
  // Assigns commit after every kernel has run. A value that is itself a
  // declaration another assign may overwrite is read before any commit.
  std::vector<std::pair<Tensor*, Tensor>> from_declarations;
  for (const auto& [target, value] : p.assigns) {
    const ProgramBuffer& v = p.buffers[static_cast<size_t>(value)];
    if (v.kind == BufferKind::input || v.kind == BufferKind::param || v.kind == BufferKind::state)
      from_declarations.emplace_back(&bound_.at(p.buffers[static_cast<size_t>(target)].name), bound_.at(v.name));
  }
  for (const auto& [target, value] : p.assigns) {
    const ProgramBuffer& v = p.buffers[static_cast<size_t>(value)];
    if ((v.kind == BufferKind::output || v.kind == BufferKind::invariant || v.kind == BufferKind::temp) &&
        v.alias != target) {
      Tensor& t = bound_.at(p.buffers[static_cast<size_t>(target)].name);
      if (v.bytes() > 0) std::memcpy(t.data(), ptrs[static_cast<size_t>(value)], static_cast<size_t>(v.bytes()));
    }
  }
  for (auto& [target, value] : from_declarations) *target = std::move(value);
}

}  // namespace kiln::compiler
