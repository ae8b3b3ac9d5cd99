// The `kiln` Python module: PYTHONPATH=build/python, then `import kiln`.
#include "ops/register_all.h"
#include "tools/python/bindings.h"

PYBIND11_MODULE(kiln, m) {
  kiln::register_all_ops();
  m.doc() =
      "kiln: an autodiff tensor engine with a static graph compiler.\n\n"
      "Parse a .kir graph (kiln.parse, kiln.load) or build one (kiln.Graph, kiln.Builder),\n"
      "differentiate it (kiln.grad, kiln.train_graph), optimize it (kiln.optimize), compile\n"
      "it with the LLVM JIT or the interpreter (kiln.compile) and run it on numpy arrays.\n"
      "kiln.import_onnx reads ONNX models; kiln.train, kiln.translate, kiln.evaluate, kiln.score\n"
      "and kiln.average train and use the Transformer, kiln.train(model='lm', ...) and kiln.generate\n"
      "the language model, as the kiln command does. Every error is a kiln.Error carrying the message the kiln command prints.";
  kiln::python::define_errors(m);
  kiln::python::define_graph(m);
  kiln::python::define_builder(m);
  kiln::python::define_transforms(m);
  kiln::python::define_executable(m);
  kiln::python::define_train(m);
  kiln::python::define_evaluate(m);
  kiln::python::define_onnx_import(m);
}
