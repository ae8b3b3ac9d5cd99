// numpy arrays <-> kiln tensors.
#include <cstring>

#include "engine/ir/error.h"
#include "engine/npy.h"
#include "engine/tensor/memory_check.h"
#include "tools/python/bindings.h"

namespace kiln::python {
namespace {

// A C-contiguous array of T (a copy only if `a` is not contiguous already).
template <class T>
py::array_t<T> contiguous(const py::array& a) {
  auto c = py::array_t<T, py::array::c_style>::ensure(a);
  if (!c) throw Error("numpy could not copy the array into C order (out of memory?)");  // numpy cleared its error
  return c;
}

// np.asarray(obj): what obj's __array__ or numpy itself raises is kept in the message.
py::array as_array(const py::handle& obj) {
  try {
    return py::module_::import("numpy").attr("asarray")(obj);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_Exception)) throw;  // KeyboardInterrupt, SystemExit
    throw Error("numpy.asarray cannot read the " + std::string(py::str(obj.get_type().attr("__name__"))) + ": " +
                std::string(py::str(e.type().attr("__name__"))) + ": " + std::string(py::str(e.value())));
  }
}

template <class T>
Tensor copied(const py::array& a, const Shape& shape) {
  auto out = xt::xarray<T>::from_shape(xt_shape(shape));
  if (out.size() > 0) std::memcpy(out.data(), contiguous<T>(a).data(), out.size() * sizeof(T));
  return Tensor(std::move(out));
}

// numpy's bool is a byte, which a C++ bool may only hold as 0 or 1.
Tensor copied_bool(const py::array& a, const Shape& shape) {
  auto out = xt::xarray<bool>::from_shape(xt_shape(shape));
  const auto bytes = contiguous<uint8_t>(a.attr("view")(py::dtype::of<uint8_t>()));
  for (size_t i = 0; i < out.size(); ++i) out.flat(i) = bytes.data()[i] != 0;
  return Tensor(std::move(out));
}

py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::f32:
      return py::dtype::of<float>();
    case DType::i32:
      return py::dtype::of<int32_t>();
    case DType::boolean:
      return py::dtype::of<bool>();
    case DType::bf16:
      throw Error("a bf16 tensor has no numpy dtype: cast it to f32 in the graph");
  }
  throw Error("bad dtype");
}

std::vector<py::ssize_t> array_shape(const Tensor& t) {
  const Shape shape = t.shape();
  return {shape.begin(), shape.end()};
}

}  // namespace

ArrayTensor tensor_from_array(const py::handle& obj) {
  const py::array a = as_array(obj);
  const Shape shape(a.shape(), a.shape() + a.ndim());
  const py::dtype dt = a.dtype();
  const std::string dtype_name = py::str(static_cast<const py::handle&>(dt));
  // A broadcast view (stride 0) may show more elements than memory holds: its
  // copy is checked before it is made.
  checked_bytes(static_cast<uint64_t>(numel(shape)), static_cast<uint64_t>(dt.itemsize()),
                "a numpy " + dtype_name + " array of shape " + shape_str(shape));
  if (dt.equal(py::dtype::of<float>())) return {copied<float>(a, shape), ""};
  if (dt.equal(py::dtype::of<int32_t>())) return {copied<int32_t>(a, shape), ""};
  if (dt.equal(py::dtype::of<bool>())) return {copied_bool(a, shape), ""};
  if (dt.equal(py::dtype::of<double>())) return {narrow_f64(contiguous<double>(a).data(), shape), "float64"};
  if (dt.equal(py::dtype::of<int64_t>())) return {narrow_i64(contiguous<int64_t>(a).data(), shape), "int64"};
  throw Error("numpy dtype " + dtype_name +
              " is not supported (kiln takes float32, int32 and bool, and converts float64 and int64)");
}

py::array array_view(const Tensor& t, py::object owner) {
  py::array a(numpy_dtype(t.dtype()), array_shape(t), {}, t.data(), owner);
  a.attr("setflags")(py::arg("write") = false);
  return a;
}

py::array array_copy(const Tensor& t) {
  py::array a(numpy_dtype(t.dtype()), array_shape(t));
  if (t.nbytes() > 0) std::memcpy(a.mutable_data(), t.data(), t.nbytes());
  return a;
}

}  // namespace kiln::python
