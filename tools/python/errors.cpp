// kiln::Error and kiln::ParseError as the Python exceptions kiln.Error and
// kiln.ParseError, carrying what() unchanged: the message the kiln command prints
// (a byte that is not UTF-8 in it shows as \xNN).
#include "engine/ir/error.h"
#include "tools/python/bindings.h"

namespace kiln::python {

namespace {

// Text for Python: bytes that are not UTF-8 (a path or a name quoted from
// outside) show as \xNN rather than making the exception itself fail.
py::str text(std::string_view s) {
  return py::reinterpret_steal<py::str>(
      PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "backslashreplace"));
}

}  // namespace

void define_errors(py::module_& m) {
  // The module holds the types; handles (not static py::objects) need no
  // destruction at interpreter exit.
  static py::handle error = py::exception<Error>(m, "Error").release();
  static py::handle parse_error = py::exception<ParseError>(m, "ParseError", error.ptr()).release();
  error.attr("__doc__") = "A kiln error: bad graph, binding, file, option or data; the message says where and why.";
  parse_error.attr("__doc__") =
      "A .kir syntax or semantic error: 'FILE:LINE:COL: error: ...', with .file, .line and .col.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ParseError& e) {
      py::object exc = py::reinterpret_borrow<py::object>(parse_error)(text(e.what()));
      exc.attr("file") = text(e.loc.file);
      exc.attr("line") = e.loc.line;
      exc.attr("col") = e.loc.col;
      PyErr_SetObject(parse_error.ptr(), exc.ptr());
    } catch (const Error& e) {
      PyErr_SetObject(error.ptr(), text(e.what()).ptr());
    }
  });
}

}  // namespace kiln::python
