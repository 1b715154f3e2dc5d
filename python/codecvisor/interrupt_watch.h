// Ctrl-C during a request. A request waits on the backend with the GIL
// released, so Python cannot run its SIGINT handler until the request
// ends: a KeyboardInterrupt would wait for every frame asked for. An
// InterruptWatch, made by a request on the main thread (the only one
// Python runs signal handlers on), puts a C handler in front of the
// process's SIGINT handler that notes the signal and then calls the one
// it replaced (Python's, which marks its handler pending). The request's
// sink asks Raised() before each frame: after a SIGINT, it takes the GIL
// and runs the pending Python handlers (PyErr_CheckSignals). If one
// raised (by default KeyboardInterrupt), the sink fails, which cancels the
// request in the backend (core: a sink's error stops its decoding), and
// Rethrow() raises that exception once the decoder is free again. A
// handler that does not raise lets the request go on. Where SIGINT is
// ignored or left at its default (which ends the process), or on any other
// thread, the watch does nothing.

#ifndef CODECVISOR_PYTHON_CODECVISOR_INTERRUPT_WATCH_H_
#define CODECVISOR_PYTHON_CODECVISOR_INTERRUPT_WATCH_H_

#include <optional>

#include "pybind11/pybind11.h"

namespace codecvisor::python {

class InterruptWatch {
 public:
  // With the GIL held.
  InterruptWatch();
  // With the GIL held: puts the replaced handler back (unless something
  // has replaced ours meanwhile).
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  // With the GIL released, on the thread that made the watch: whether a
  // Python signal handler raised since the watch began (the exception is
  // kept for Rethrow). Takes the GIL only after a SIGINT.
  bool Raised();
  // With the GIL held: raises the kept exception, if any.
  void Rethrow();

 private:
  bool active_ = false;
  std::optional<pybind11::error_already_set> error_;
};

}  // namespace codecvisor::python

#endif  // CODECVISOR_PYTHON_CODECVISOR_INTERRUPT_WATCH_H_
