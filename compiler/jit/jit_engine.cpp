#include "compiler/jit/jit_engine.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "compiler/codegen/kernel_codegen.h"
#include "compiler/dump_dir.h"
#include "compiler/jit/kernel_cache.h"
#include "compiler/jit/optimize.h"
#include "compiler/jit/perf_map.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/fnv1a.h"
#include "engine/ir/error.h"

namespace kiln::compiler {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

template <class T>
T unwrap(llvm::Expected<T> value, const std::string& what) {
  if (!value) throw Error("jit: " + what + ": " + llvm::toString(value.takeError()));
  return std::move(*value);
}

void check(llvm::Error error, const std::string& what) {
  if (error) throw Error("jit: " + what + ": " + llvm::toString(std::move(error)));
}

// The process's LLJIT, which links kernel objects and hands out their addresses.
class Linker {
 public:
  static Linker& global() {
    static Linker linker;
    return linker;
  }

  // The address of `symbol`, held once more, if this process has loaded it.
  KernelFunction hold(const std::string& symbol) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = loaded_.find(symbol);
    if (it == loaded_.end()) return nullptr;
    ++it->second.holders;
    return it->second.function;
  }

  // Loads `object` (unless loaded) and holds `symbol` once more; `label` says
  // what the kernel is, for the perf map. Each object has its own resource
  // tracker, so release() can unload it alone, and a failed load leaves nothing.
  KernelFunction add(const std::string& symbol, const std::string& object, const std::string& label) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = loaded_.find(symbol); it != loaded_.end()) {
      ++it->second.holders;
      return it->second.function;
    }
    set_perf_map_label(label);
    llvm::orc::ResourceTrackerSP tracker = jit_->getMainJITDylib().createResourceTracker();
    try {
      check(jit_->addObjectFile(tracker, llvm::MemoryBuffer::getMemBufferCopy(object, symbol)), "adding " + symbol);
      const auto addr = unwrap(jit_->lookup(symbol), "looking up " + symbol);
      loaded_[symbol] = {addr.toPtr<KernelFunction>(), tracker, 1};
      return addr.toPtr<KernelFunction>();
    } catch (const Error&) {
      llvm::consumeError(tracker->remove());
      throw;
    }
  }

  // Lets go of one hold on `symbol`; the last unloads its code.
  void release(const std::string& symbol) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = loaded_.find(symbol);
    if (it == loaded_.end() || --it->second.holders > 0) return;
    // Removing only frees memory: nothing is left to report to a destructor.
    llvm::consumeError(it->second.tracker->remove());
    loaded_.erase(it);
  }

  size_t count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return loaded_.size();
  }

 private:
  Linker() {
    initialize_llvm_native_target();
    jit_ = unwrap(llvm::orc::LLJITBuilder().create(), "creating LLJIT");
    enable_perf_map(*jit_);
    // The runtime lives in this executable (a static library), where a dynamic
    // symbol search would not find it: hand its addresses to the JIT directly.
    llvm::orc::MangleAndInterner mangle(jit_->getExecutionSession(), jit_->getDataLayout());
    const auto exported = llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable;
    llvm::orc::SymbolMap runtime;
    runtime[mangle("kiln_parallel_for")] = {llvm::orc::ExecutorAddr::fromPtr(&kiln_parallel_for), exported};
    runtime[mangle("kiln_scratch")] = {llvm::orc::ExecutorAddr::fromPtr(&kiln_scratch), exported};
    check(jit_->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(runtime))), "defining runtime symbols");
    jit_->getMainJITDylib().addGenerator(
        unwrap(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix()),
               "searching process symbols"));
  }

  struct Loaded {
    KernelFunction function;
    llvm::orc::ResourceTrackerSP tracker;
    int holders;
  };

  std::mutex mutex_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::map<std::string, Loaded> loaded_;
};

// What identifies a kernel's machine code: its text, the target, how it is
// optimized, and the build of kiln.
std::string cache_key(const Kernel& k, const Target& t, OptLevel level) {
  return k.text + "\ntarget " + t.triple + " " + t.cpu + " " + t.features + "\nopt " +
         std::to_string(static_cast<int>(level)) + "\n" + build_identity() + "\n";
}

std::string symbol_of(const std::string& key) {
  char name[32];
  std::snprintf(name, sizeof name, "kiln_k%016llx", static_cast<unsigned long long>(fnv1a_64(key)));
  return name;
}

// "[row 6 ops f32[32,4,32,32]]": the kernel's description, bracketed.
std::string perf_label(const Kernel& k) {
  std::string label = "[";
  label += describe(k);
  return label + "]";
}

struct Job {
  const Kernel* kernel;
  OptLevel level;
  std::string key, symbol, object;
};

// One kernel as a function `symbol` in `module`, verified.
void lower_kernel(llvm::Module& module, const Kernel& kernel, const std::string& symbol, const Target& target,
                  llvm::TargetMachine& tm) {
  module.setTargetTriple(target.triple);
  module.setDataLayout(tm.createDataLayout());
  LoweringContext cx(module, target);
  emit_kernel(cx, *kernel.graph, kernel.roles, symbol);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(module, &os)) throw Error("jit: generated invalid LLVM IR: " + problems);
}

// Lowers, optimizes and compiles one kernel to an object file.
std::string compile_object(const Job& job, const Target& target, llvm::TargetMachine& tm, CompileTimes& times) {
  auto start = Clock::now();
  llvm::LLVMContext context;
  llvm::Module module(job.symbol, context);
  lower_kernel(module, *job.kernel, job.symbol, target, tm);
  times.lower_ms += ms_since(start);
  start = Clock::now();
  optimize_module(module, tm, job.level);
  times.optimize_ms += ms_since(start);
  start = Clock::now();
  std::string object = module_code(module, tm, ModuleCode::object);
  times.codegen_ms += ms_since(start);
  return object;
}

// Compiles the jobs on one thread per core; each thread has its own target machine.
void compile_all(std::vector<Job*>& jobs, const Target& target, CompileTimes& times) {
  const size_t threads = std::min<size_t>(jobs.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  std::vector<CompileTimes> per_thread(threads);
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto work = [&](size_t t) {
    try {
      const std::unique_ptr<llvm::TargetMachine> tm = make_target_machine(target);
      for (size_t i = next++; i < jobs.size(); i = next++)
        jobs[i]->object = compile_object(*jobs[i], target, *tm, per_thread[t]);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = jobs.size();
    }
  };
  std::vector<std::thread> pool;
  try {
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
  } catch (const std::system_error&) {
    // The system starts no more threads (a process or address-space limit):
    // those started and this one take every job all the same.
  }
  if (threads > 0) work(0);
  for (std::thread& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
  for (const CompileTimes& t : per_thread) {
    times.lower_ms += t.lower_ms;
    times.optimize_ms += t.optimize_ms;
    times.codegen_ms += t.codegen_ms;
  }
}

}  // namespace

std::string time_passes_report(const CompileTimes& t, const Target& target) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "===-- kiln compile time (%s, %s, %d f32 lanes) --===\n"
                "  passes    %9.2f ms  (graph passes and fusion)\n"
                "  lower     %9.2f ms  (kernels to LLVM IR, summed over threads)\n"
                "  optimize  %9.2f ms  (LLVM pipelines, summed over threads)\n"
                "  codegen   %9.2f ms  (machine code, summed over threads)\n"
                "  link      %9.2f ms  (loading objects into the JIT)\n"
                "  wall      %9.2f ms\n"
                "  kernels   %d distinct: %d compiled, %d from the disk cache, %d already loaded\n",
                target.cpu.c_str(), target.triple.c_str(), target.vector_width, t.passes_ms, t.lower_ms,
                t.optimize_ms, t.codegen_ms, t.link_ms, t.wall_ms, t.kernels, t.compiled, t.from_disk, t.in_process);
  return buf;
}

LoadedKernels::LoadedKernels(LoadedKernels&& other) noexcept
    : held_(std::exchange(other.held_, {})), functions_(std::exchange(other.functions_, {})) {}

LoadedKernels& LoadedKernels::operator=(LoadedKernels&& other) noexcept {
  if (this != &other) {
    release();
    held_ = std::exchange(other.held_, {});
    functions_ = std::exchange(other.functions_, {});
  }
  return *this;
}

LoadedKernels::~LoadedKernels() { release(); }

void LoadedKernels::release() {
  for (const std::string& symbol : held_) Linker::global().release(symbol);
  held_.clear();
  functions_.clear();
}

size_t loaded_kernel_count() { return Linker::global().count(); }

void dump_kernels(const Program& p, const Target& target, const std::string& dir) {
  const std::unique_ptr<llvm::TargetMachine> tm = make_target_machine(target);
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const Kernel& kernel = p.kernels[i];
    const OptLevel level = opt_level_for(kernel.roles.kind);
    const std::string symbol = symbol_of(cache_key(kernel, target, level));
    const std::string stem = "kernels/" + kernel_file_stem(p, i);
    llvm::LLVMContext context;
    llvm::Module module(symbol, context);
    lower_kernel(module, kernel, symbol, target, *tm);
    write_dump(dir, stem + ".ll", module_code(module, *tm, ModuleCode::llvm));
    optimize_module(module, *tm, level);
    write_dump(dir, stem + ".opt.ll", module_code(module, *tm, ModuleCode::llvm));
    write_dump(dir, stem + ".s", module_code(module, *tm, ModuleCode::assembly));
  }
}

LoadedKernels load_kernels(const std::vector<Kernel>& kernels, const Target& target,
                           const KernelJitOptions& options, CompileTimes& times) {
  Linker& linker = Linker::global();
  KernelCache cache(options.cache ? (options.cache_dir.empty() ? KernelCache::default_dir() : options.cache_dir)
                                  : std::string());
  std::vector<Job> jobs(kernels.size());
  LoadedKernels loaded;  // holds what it has so far, so an error lets go of it
  loaded.functions_.assign(kernels.size(), nullptr);
  std::vector<KernelFunction>& out = loaded.functions_;
  std::vector<Job*> to_compile;
  for (size_t i = 0; i < kernels.size(); ++i) {
    Job& job = jobs[i];
    job.kernel = &kernels[i];
    job.level = opt_level_for(kernels[i].roles.kind);
    job.key = cache_key(kernels[i], target, job.level);
    job.symbol = symbol_of(job.key);
    if ((out[i] = linker.hold(job.symbol))) {
      loaded.held_.push_back(job.symbol);
      ++times.in_process;
    } else if (std::optional<std::string> object = cache.load(job.symbol, job.key)) {
      job.object = std::move(*object);
      ++times.from_disk;
    } else {
      to_compile.push_back(&job);
    }
  }
  times.kernels += static_cast<int>(kernels.size());
  times.compiled += static_cast<int>(to_compile.size());
  compile_all(to_compile, target, times);
  for (Job* job : to_compile) cache.store(job->symbol, job->key, job->object);
  const auto start = Clock::now();
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (out[i]) continue;
    out[i] = linker.add(jobs[i].symbol, jobs[i].object, perf_label(kernels[i]));
    loaded.held_.push_back(jobs[i].symbol);
  }
  times.link_ms += ms_since(start);
  return loaded;
}

}  // namespace kiln::compiler
