// The extension's errors: a non-OK Status raises StatusError(code, message)
// (the Python layer maps the code to the exception torchcodec raises), an
// object of another process raises ForkedError.

#ifndef CODECVISOR_PYTHON_CODECVISOR_STATUS_BRIDGE_H_
#define CODECVISOR_PYTHON_CODECVISOR_STATUS_BRIDGE_H_

#include <string>
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
// UTF-8 (a path's, or whatever a backend wrote): those are shown as \xNN
// escapes instead of failing the conversion.
pybind11::str Text(const std::string& text);

// Registers StatusError and ForkedError in `m` and translates them.
void RegisterErrors(pybind11::module_& m);

}  // namespace codecvisor::python

#endif  // CODECVISOR_PYTHON_CODECVISOR_STATUS_BRIDGE_H_
