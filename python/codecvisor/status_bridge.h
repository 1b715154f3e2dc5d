// The extension's errors: a non-OK Status raises StatusError(code, message)
// (the Python layer maps the code to the exception torchcodec raises), an
// object of another process raises ForkedError. And WithoutGil, the one way
// the extension releases the GIL: a thread that Python ends as it takes the
// GIL back stops there, never unwinding through the frames above.

#ifndef CODECVISOR_PYTHON_CODECVISOR_STATUS_BRIDGE_H_
#define CODECVISOR_PYTHON_CODECVISOR_STATUS_BRIDGE_H_

#include <cxxabi.h>

#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "codecvisor/codecvisor.h"
#include "pybind11/pybind11.h"

namespace codecvisor::python {

// Raised (as _codecvisor.StatusError) for every non-OK Status.
struct StatusError {
  Status status;
};

// Raised (as _codecvisor.ForkedError) for an object of another process.
struct ForkedError {
  std::string what;
};

inline void Check(const Status& status) {
  if (!status.ok()) throw StatusError{status};
}

template <typename T>
T Take(Result<T> result) {
  if (!result.ok()) throw StatusError{result.status()};
  return *std::move(result);
}

// `text` as a Python str. Messages and names may hold bytes that are not
// UTF-8 (a path's; what a backend wrote arrives already made valid): those
// are shown as \xNN escapes instead of failing the conversion.
pybind11::str Text(const std::string& text);

// Registers StatusError and ForkedError in `m` and translates them.
void RegisterErrors(pybind11::module_& m);

// Takes back the GIL that PyEval_SaveThread gave up as `state`. Where
// Python ends the thread there instead (WithoutGil), never returns.
void TakeGilBack(PyThreadState* state);

// fn() with the GIL released: returns what it returns, or throws what it
// throws, once the GIL is taken back. While the interpreter finalizes, with
// the GIL held: only the thread that finalizes it runs then, and handing
// the GIL over is unsafe.
//
// Taking the GIL back is where Python 3.11 ends a thread once the
// interpreter finalizes (a daemon thread, or one that Ctrl-C left running by
// cutting short the wait for threads at exit), with pthread_exit, whose
// forced unwind (abi::__forced_unwind) would run through the frames above:
// the first noexcept one (any destructor, such as
// pybind11::gil_scoped_release's, which takes the GIL back) or catch (...)
// that swallows it makes that std::terminate, and pybind11's dispatcher
// frees Python objects on the way without the GIL (its copy of a call's
// keyword arguments). So TakeGilBack stops such a thread for good instead,
// once fn's locals (its locks) are gone, and the process exits around it.
template <typename Fn>
std::invoke_result_t<Fn> WithoutGil(Fn&& fn) {
  using R = std::invoke_result_t<Fn>;
  if (_Py_IsFinalizing()) return std::forward<Fn>(fn)();
  if constexpr (std::is_void_v<R>) {
    WithoutGil([&] {
      std::forward<Fn>(fn)();
      return true;
    });
  } else {
    std::optional<R> result;
    std::exception_ptr error;
    PyThreadState* const state = PyEval_SaveThread();
    try {
      result.emplace(std::forward<Fn>(fn)());
    } catch (const abi::__forced_unwind&) {
      throw;  // fn ended the thread, which holds no GIL to take back
    } catch (...) {
      error = std::current_exception();
    }
    TakeGilBack(state);
    if (error) std::rethrow_exception(error);
    return *std::move(result);
  }
}

}  // namespace codecvisor::python

#endif  // CODECVISOR_PYTHON_CODECVISOR_STATUS_BRIDGE_H_
