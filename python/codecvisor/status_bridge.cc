#include "python/codecvisor/status_bridge.h"

#include <exception>

namespace codecvisor::python {

void RegisterErrors(pybind11::module_& m) {
  namespace py = pybind11;
  static py::exception<StatusError> status_error(m, "StatusError", PyExc_RuntimeError);
  static py::exception<ForkedError> forked_error(m, "ForkedError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object error = py::reinterpret_borrow<py::object>(status_error.ptr())(py::str(e.status.message()));
      error.attr("code") = StatusCodeName(e.status.code());
      PyErr_SetObject(status_error.ptr(), error.ptr());
    } catch (const ForkedError& e) {
      PyErr_SetString(forked_error.ptr(), e.what.c_str());
    }
  });
}

}  // namespace codecvisor::python
