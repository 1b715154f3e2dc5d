// Owned<T>: an object of the C++ API that only the process that made it may
// use (a forked child's destruction of it is the API's child-safe one).

#ifndef CODECVISOR_PYTHON_CODECVISOR_OWNED_H_
#define CODECVISOR_PYTHON_CODECVISOR_OWNED_H_

#include <unistd.h>

#include <memory>
#include <string>
#include <utility>

#include "pybind11/pybind11.h"
#include "python/codecvisor/status_bridge.h"

namespace codecvisor::python {

// Ownership that a forked child must not exercise: used only by the process
// that made it. Destroyed in another, it is the C++ API's to leave the
// parent's backends, channels and slots alone (api/README.md, "fork()"),
// while closing the child's copies of its descriptors.
template <typename T>
class Owned {
 public:
  explicit Owned(std::unique_ptr<T> object) : object_(std::move(object)), owner_(getpid()) {}
  // Runs when Python collects the object, with the GIL held: destroying it
  // may wait for the backend (a close message, up to 100 ms when its
  // channel is full), so other Python threads run meanwhile, except while
  // the interpreter shuts down, when handing the GIL over is unsafe.
  ~Owned() { Reset(); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  T& get(const char* what) {
    CheckOwner(what);
    if (object_ == nullptr) throw ForkedError{std::string(what) + " is closed"};
    return *object_;
  }
  // The object, or null once it is closed; throws unless this process made it.
  T* get_if_open(const char* what) {
    CheckOwner(what);
    return object_.get();
  }
  // Throws unless this process made it.
  void CheckOwner(const char* what) const {
    if (getpid() != owner_) throw ForkedError{std::string(what) + " was made in process " + std::to_string(owner_)};
  }
  // Destroys it now (in its own process), e.g. on close(), with the GIL
  // released: closing may wait for the backend.
  void Reset() {
    if (getpid() != owner_) {
      object_.reset();  // the parent's: the API's destructor knows, and only closes the child's descriptors
    } else if (object_ != nullptr && PyGILState_Check()) {
      WithoutGil([&] { object_.reset(); });
    } else {
      object_.reset();
    }
  }

 private:
  std::unique_ptr<T> object_;
  const pid_t owner_;
};

}  // namespace codecvisor::python

#endif  // CODECVISOR_PYTHON_CODECVISOR_OWNED_H_
