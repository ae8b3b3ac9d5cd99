// kiln.compile and kiln.Executable: bind numpy arrays, run, read results as
// numpy arrays over kiln's own memory.
#include <pybind11/stl.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "compiler/backend.h"
#include "compiler/jit/kernel_cache.h"
#include "compiler/runtime/thread_limit.h"
#include "engine/ir/error.h"
#include "engine/param_init.h"
#include "tools/python/bindings.h"

namespace kiln::python {
namespace {

// What the numpy views of one of an executable's tensors own: nothing while
// the tensor is the executable's, the tensor itself once detached from it.
struct ViewStorage {
  std::optional<Tensor> tensor;
};

// An Executable whose tensors numpy arrays view without a copy. A backend may
// free or replace a tensor when it runs (the interpreter makes its outputs and
// assigned params anew) or when it is bound again, so before that, and when the
// executable goes, each tensor that a live view still shows is detached: moved
// (its memory unchanged) into the views' storage, the executable keeping a copy
// of a binding. A view thus never dangles and never changes under its reader.
//
// Threads: each call holds the executable's lock() from its first bind to its
// last read (Hold), so calls from several Python threads run one after another,
// while other threads keep running Python during a run (the GIL is released).
class PyExecutable {
 public:
  PyExecutable(std::unique_ptr<Executable> exe, std::string backend, uint64_t seed)
      : exe_(std::move(exe)), backend_(std::move(backend)), seed_(seed) {}
  ~PyExecutable() { detach_all(false); }
  PyExecutable(const PyExecutable&) = delete;
  PyExecutable& operator=(const PyExecutable&) = delete;

  const Executable& exe() const { return *exe_; }
  const std::string& backend() const { return backend_; }

  void bind(const std::string& name, const py::handle& array) {
    const Hold hold(*this);
    bind_held(name, array);
  }

  void initialize(std::optional<uint64_t> seed) {
    const Hold hold(*this);
    bind_initial_values(*exe_, seed.value_or(seed_));
  }

  py::dict run(const py::kwargs& inputs) {
    const Hold hold(*this);
    for (const auto& [name, array] : inputs) bind_held(name.cast<std::string>(), array);
    bind_initial_values(*exe_, seed_);
    detach_all(true);
    {
      py::gil_scoped_release unlocked;
      exe_->run();
    }
    return outputs_held(false);
  }

  // A declaration's current tensor if `name` is declared, else the output of that name.
  py::array get(const std::string& name, bool copy) {
    const Hold hold(*this);
    const auto v = exe_->graph().find(name);
    if (!v || exe_->graph().value(*v).kind == ValueKind::result) return output_held(name, copy);
    const Tensor& t = exe_->binding(name);
    return copy ? array_copy(t) : view(binding_views_, name, t);
  }

  py::array output(const std::string& name, bool copy) {
    const Hold hold(*this);
    return output_held(name, copy);
  }

  py::dict outputs(bool copy) {
    const Hold hold(*this);
    return outputs_held(copy);
  }

 private:
  using Views = std::map<std::string, std::weak_ptr<ViewStorage>>;

  // One call's hold on the executable's lock. It waits for the lock with the GIL
  // released: the thread holding the lock may be waiting for the GIL. A call made
  // from inside another on the same thread (an object's __array__ using the
  // executable it is being bound to) is refused rather than waiting for itself.
  class Hold {
   public:
    explicit Hold(PyExecutable& self) : self_(self) {
      if (self.holder_ == std::this_thread::get_id())
        throw Error("kiln.Executable @" + self.exe_->graph().name() +
                    ": used from inside one of its own calls (one call at a time per thread)");
      {
        py::gil_scoped_release unlocked;
        lock_ = self.exe_->lock();
      }
      self.holder_ = std::this_thread::get_id();
    }
    ~Hold() { self_.holder_ = std::thread::id(); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    PyExecutable& self_;
    std::unique_lock<std::mutex> lock_;
  };

  void bind_held(const std::string& name, const py::handle& array) {
    const Graph& g = exe_->graph();
    const auto v = g.find(name);
    if (!v || g.value(*v).kind == ValueKind::result)
      exe_->bind(name, Tensor());  // throws "graph @G declares no input, param or state named 'NAME'"
    const std::string decl = std::string(value_kind_name(g.value(*v).kind)) + " %" + name;
    ArrayTensor a;
    try {
      a = tensor_from_array(array);
    } catch (const Error& e) {
      throw Error(decl + ": " + e.what());
    }
    // The old tensor goes to its views without a copy, once the new one is
    // known to bind (bind() refuses a wrong type before it changes anything).
    if (a.tensor.type() == g.type(*v)) detach_binding(name, false);
    try {
      exe_->bind(name, std::move(a.tensor));
    } catch (const Error& e) {
      if (a.converted_from.empty()) throw;
      throw Error(std::string(e.what()) + " (converted from numpy " + a.converted_from + ")");
    }
  }

  py::array output_held(const std::string& name, bool copy) {
    const Tensor& t = exe_->output(name);
    return copy ? array_copy(t) : view(output_views_, name, t);
  }

  py::dict outputs_held(bool copy) {
    py::dict out;
    for (const std::string& name : exe_->output_names()) out[py::str(name)] = output_held(name, copy);
    return out;
  }

  // Views of one tensor share one storage, so np.shares_memory holds between them.
  static py::array view(Views& views, const std::string& name, const Tensor& t) {
    std::shared_ptr<ViewStorage> storage = views[name].lock();
    if (!storage) {
      storage = std::make_shared<ViewStorage>();
      views[name] = storage;
    }
    py::capsule owner(new std::shared_ptr<ViewStorage>(storage),
                      [](void* p) { delete static_cast<std::shared_ptr<ViewStorage>*>(p); });
    return array_view(t, owner);
  }

  void detach_binding(const std::string& name, bool rebind) {
    const auto it = binding_views_.find(name);
    if (it == binding_views_.end()) return;
    if (const auto storage = it->second.lock()) {
      storage->tensor = exe_->unbind(name);
      if (rebind) exe_->bind(name, *storage->tensor);
    }
    binding_views_.erase(it);
  }

  // `rebind`: the executable keeps a copy of each detached binding (not when it goes).
  void detach_all(bool rebind) {
    while (!binding_views_.empty()) detach_binding(binding_views_.begin()->first, rebind);
    for (const auto& [name, weak] : output_views_)
      if (const auto storage = weak.lock()) storage->tensor = exe_->take_output(name);
    output_views_.clear();
  }

  std::unique_ptr<Executable> exe_;
  std::string backend_;
  uint64_t seed_;
  Views binding_views_, output_views_;
  std::atomic<std::thread::id> holder_;  // the thread inside a call, if any
};

std::unique_ptr<PyExecutable> compile(const Graph& graph, const std::string& backend, int64_t threads,
                                      const py::object& passes, bool check_numerics, uint64_t seed,
                                      const std::string& target_cpu, bool cache, bool reuse,
                                      const std::string& dump_dir, const std::string& precision) {
  const DType arithmetic = parse_precision(precision);
  // Checked against the pool's limit here, where any Python int arrives (opts.threads is an int).
  if (threads != 0) compiler::set_threads(threads, "threads");
  compiler::BackendOptions opts;
  opts.backend = backend;
  opts.target_cpu = target_cpu;
  opts.pipeline.passes.passes = pass_names(passes);
  opts.pipeline.passes.precision = arithmetic;
  opts.pipeline.reuse = reuse;
  opts.pipeline.dump_dir = dump_dir;
  opts.kernels.cache = cache;
  opts.check_numerics = check_numerics;
  Graph g = graph;
  std::unique_ptr<Executable> exe;
  {
    py::gil_scoped_release unlocked;
    exe = compiler::make_executable(std::move(g), opts);
  }
  return std::make_unique<PyExecutable>(std::move(exe), backend, seed);
}

const char* const kCompileDoc = R"(Compiles a graph into a kiln.Executable.

backend         'jit' (LLVM, vectorized and multi-threaded) or 'interp' (the reference
                interpreter, which every JIT result is tested against)
threads         threads of the JIT's parallel loops (process-wide); 0: leave as is (all cores);
                kiln.Error beyond the pool's limit (256, or one per core where there are more)
passes          jit: the graph passes, as for kiln.optimize (None: the default pipeline)
check_numerics  stop at the first nan or +inf, naming the kernel and node that made it
seed            seed of the initial values of params and state left unbound at a run
                (their `init` attributes; as `kiln run --seed`)
target_cpu      jit: generate code for this CPU ('': the host)
cache           jit: read and write the on-disk kernel cache
reuse           jit: False gives every buffer its own memory (for debugging)
dump_dir        jit: write every stage of the compile into a directory of its own under
                this one, as `kiln run --dump-dir` ('': none): the graph after each pass,
                the fusion decisions, the program, the memory plan, each kernel's LLVM IR
                and assembly
precision       'f32', or 'bf16': every matmul's operands rounded to bf16, f32 products,
                sums and results (`kiln run --precision bf16`; the interpreter too)

kiln.Error for an unknown backend, pass, CPU or precision, or an op the JIT cannot lower.
The graph is copied: changing it afterwards does not change the executable.

    exe = kiln.compile(kiln.load('examples/mlp.kir'))
    out = exe.run(x=x, labels=labels)      # {'loss': array(...), 'logits': array(...)})";

const char* const kExecutableDoc = R"(A compiled graph: bind inputs, params and state, run, read the results.

Binding (exe.bind(name, array), exe[name] = array, or exe.run(name=array)) copies
the array into kiln's memory: float32, int32 and bool as they are; float64 and
int64 (numpy's defaults) are narrowed to f32 and i32 as `kiln run` narrows .npy
files, refusing values that do not fit; other dtypes are refused; a non-contiguous
array is read in C order. The dtype and shape must be the declaration's.

Params and state persist between runs (a graph's assigns update them). Those left
unbound when a run starts get their initial values from the compile's seed.

Results (exe.run(...), exe.outputs, exe[name], exe.output(name)) are read-only numpy
arrays over kiln's own tensors, without a copy: two reads between runs share memory.
An array never changes under its reader and stays valid as long as it lives: when a
run or a bind would free or overwrite a tensor that an array still shows, the array
keeps that memory and kiln continues with a copy (a param) or a fresh tensor (an
output). copy=True gives a writable copy instead.

Not thread-safe: one call at a time per executable.)";

}  // namespace

DType parse_precision(const std::string& precision) {
  const std::optional<DType> t = parse_dtype(precision);
  if (!t || (*t != DType::f32 && *t != DType::bf16))
    throw Error("precision must be 'f32' or 'bf16', got '" + precision + "'");
  return *t;
}

void define_executable(py::module_& m) {
  py::class_<PyExecutable>(m, "Executable", kExecutableDoc)
      .def("bind", &PyExecutable::bind, py::arg("name"), py::arg("array"),
           "Binds a declared input, param or state to a copy of `array`. kiln.Error naming the\n"
           "declaration and both types if the dtype or shape differs, or naming an unknown name.")
      .def("__setitem__", &PyExecutable::bind, "exe[name] = array: bind().")
      .def("run", &PyExecutable::run,
           "run(**inputs) -> dict: binds each keyword (bind()), initializes params and state left\n"
           "unbound, runs the graph once and returns its outputs {name: read-only array}, in\n"
           "output order. kiln.Error for an unbound input or a failure at run time.")
      .def("initialize", &PyExecutable::initialize, py::arg("seed") = py::none(),
           "Binds the initial value of every param and state not bound yet (their `init`\n"
           "attributes), from `seed` (None: the compile's seed). run() does this itself.")
      .def("get", &PyExecutable::get, py::arg("name"), py::arg("copy") = false,
           "The current tensor of a declaration (its binding), or else the last run's output of\n"
           "that name, as a read-only view (copy=True: a writable copy). kiln.Error if unbound.")
      .def("__getitem__", [](PyExecutable& self, const std::string& name) { return self.get(name, false); },
           "exe[name]: get(name).")
      .def("output", &PyExecutable::output, py::arg("name"), py::arg("copy") = false,
           "The last run's output `name` as a read-only view (copy=True: a writable copy).")
      .def_property_readonly(
          "outputs", [](PyExecutable& self) { return self.outputs(false); },
          "The last run's outputs {name: read-only array}, in output order.")
      .def_property_readonly("backend", &PyExecutable::backend, "'jit' or 'interp'.")
      .def_property_readonly(
          "graph", [](const PyExecutable& self) { return std::make_shared<Graph>(self.exe().graph()); },
          "A copy of the graph it runs (as given to kiln.compile).")
      .def_property_readonly(
          "compiled_graph",
          [](const PyExecutable& self) -> py::object {
            const auto* jit = dynamic_cast<const compiler::JitExecutable*>(&self.exe());
            if (!jit) return py::none();
            return py::cast(std::make_shared<Graph>(jit->compiled().graph));
          },
          "jit: the graph after the passes and fusion, whose fusion nodes are its kernels; interp: None.")
      .def("__repr__", [](const PyExecutable& self) {
        return "<kiln.Executable @" + self.exe().graph().name() + " (" + self.backend() + ")>";
      });
  m.def("build_identity", &compiler::build_identity,
        "What identifies this build of kiln in the kernel cache's keys: the ELF build ID of\n"
        "the module's shared object (not python3's), so a rebuilt kiln never loads kernels an\n"
        "older build compiled.");
  m.def("compile", &compile, py::arg("graph"), py::arg("backend") = "jit", py::arg("threads") = 0,
        py::arg("passes") = py::none(), py::arg("check_numerics") = false, py::arg("seed") = 0,
        py::arg("target_cpu") = "", py::arg("cache") = true, py::arg("reuse") = true, py::arg("dump_dir") = "",
        py::arg("precision") = "f32", kCompileDoc);
}

}  // namespace kiln::python
