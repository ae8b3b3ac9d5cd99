// kiln::Error and kiln::ParseError as the Python exceptions kiln.Error and
// kiln.ParseError, carrying what() unchanged: the message the kiln command prints.
#include "engine/ir/error.h"
#include "tools/python/bindings.h"

namespace kiln::python {

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
      py::object exc = py::reinterpret_borrow<py::object>(parse_error)(e.what());
      exc.attr("file") = e.loc.file;
      exc.attr("line") = e.loc.line;
      exc.attr("col") = e.loc.col;
      PyErr_SetObject(parse_error.ptr(), exc.ptr());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
}

}  // namespace kiln::python
