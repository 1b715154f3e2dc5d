#include "python/codecvisor/status_bridge.h"

#include <cxxabi.h>
#include <unistd.h>

#include <exception>

namespace codecvisor::python {

pybind11::str Text(const std::string& text) {
  PyObject* s = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "backslashreplace");
  if (s == nullptr) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::str>(s);
}

void RegisterErrors(pybind11::module_& m) {
  namespace py = pybind11;
  static py::exception<StatusError> status_error(m, "StatusError", PyExc_RuntimeError);
  static py::exception<ForkedError> forked_error(m, "ForkedError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object error = py::reinterpret_borrow<py::object>(status_error.ptr())(Text(e.status.message()));
      error.attr("code") = StatusCodeName(e.status.code());
      PyErr_SetObject(status_error.ptr(), error.ptr());
    } catch (const ForkedError& e) {
      PyErr_SetObject(forked_error.ptr(), Text(e.what).ptr());
    }
  });
}

void TakeGilBack(PyThreadState* state) {
  try {
    PyEval_RestoreThread(state);
  } catch (const abi::__forced_unwind&) {
    // Python ends this thread: its interpreter is finalizing, in another
    // thread. The thread waits here until the process exits instead of
    // unwinding (WithoutGil says why), as Python 3.14 has such threads do.
    // Python dropped the GIL before ending it; it holds no lock.
    for (;;) pause();
  }
}

}  // namespace codecvisor::python
