#pragma once
// What the files of the Python module share: each defines one topic's classes
// and functions on the module (define_*), and these conversions.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/backend.h"
#include "engine/ir/graph.h"
#include "engine/tensor/tensor.h"

namespace kiln::python {

namespace py = pybind11;

// A Graph is shared by its Python object and every Value and Builder made
// from it, so a Value keeps its graph alive.
using GraphPtr = std::shared_ptr<Graph>;

// kiln.Value: one SSA value of a graph.
struct PyValue {
  GraphPtr graph;
  Value value;
};

// A value of `g` named by a str or given as a kiln.Value of `g`; kiln::Error
// "WHAT NAME: graph @G has no value named 'NAME'" otherwise.
Value find_value(const Graph& g, const py::handle& name_or_value, const std::string& what);

// numpy (or anything np.asarray takes) -> a kiln tensor, always a copy into
// kiln's memory: f32, i32 and bool as they are; float64 and int64 narrowed as
// .npy loading narrows them (engine/npy.h), refusing values that do not fit.
// An array whose copy exceeds the memory limit (checked_bytes: a broadcast view
// may show more elements than memory holds) is refused before it is copied.
struct ArrayTensor {
  Tensor tensor;
  std::string converted_from;  // "float64" or "int64" when narrowed, else ""
};
ArrayTensor tensor_from_array(const py::handle& obj);

// A read-only numpy array over `t`'s memory, no copy; `owner` keeps that memory alive.
py::array array_view(const Tensor& t, py::object owner);
// A writable numpy copy of `t`.
py::array array_copy(const Tensor& t);

// A pass list given as None (the default pipeline), "a,b" or a list of names.
std::vector<std::string> pass_names(const py::object& passes);

// The `precision` argument: 'f32' or 'bf16' (the bf16-matmuls and bf16-saves passes); kiln::Error otherwise.
DType parse_precision(const std::string& precision);

// The decoding and training functions' backend, threads (0: all cores; set
// and checked here) and precision ('f32' or 'bf16').
compiler::BackendOptions backend_options(const std::string& backend, int64_t threads, const std::string& precision);

void define_errors(py::module_& m);
void define_graph(py::module_& m);
void define_builder(py::module_& m);
void define_transforms(py::module_& m);
void define_executable(py::module_& m);
void define_train(py::module_& m);
void define_evaluate(py::module_& m);
void define_onnx_import(py::module_& m);

}  // namespace kiln::python
