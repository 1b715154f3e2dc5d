#include "python/codecvisor/interrupt_watch.h"

#include <signal.h>

#include <atomic>
#include <utility>

namespace codecvisor::python {
namespace {

// Written only by the main thread, with the GIL held, before the handler
// that reads them is installed and after it is removed.
struct sigaction g_replaced;
bool g_installed = false;
std::atomic<bool> g_sigint{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

void NoteSigint(int signal, siginfo_t* info, void* context) {
  g_sigint.store(true, std::memory_order_relaxed);
  if ((g_replaced.sa_flags & SA_SIGINFO) != 0) {
    g_replaced.sa_sigaction(signal, info, context);
  } else if (g_replaced.sa_handler != SIG_DFL && g_replaced.sa_handler != SIG_IGN) {
    g_replaced.sa_handler(signal);
  }
}

bool OnMainThread() {
  pybind11::object main = pybind11::module_::import("threading").attr("main_thread")();
  return main.attr("ident").cast<unsigned long>() == PyThread_get_thread_ident();
}

}  // namespace

InterruptWatch::InterruptWatch() {
  // Nested (a signal handler that decodes, run by Raised()): the outer
  // watch goes on watching.
  if (g_installed || !OnMainThread()) return;
  struct sigaction current {};
  if (sigaction(SIGINT, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) == 0 && (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)) {
    return;
  }
  g_replaced = current;
  g_sigint.store(false, std::memory_order_relaxed);
  struct sigaction ours = current;
  ours.sa_flags |= SA_SIGINFO;
  ours.sa_sigaction = &NoteSigint;
  if (sigaction(SIGINT, &ours, nullptr) != 0) return;
  g_installed = true;
  active_ = true;
}

InterruptWatch::~InterruptWatch() {
  if (!active_) return;
  struct sigaction current {};
  if (sigaction(SIGINT, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
      current.sa_sigaction == &NoteSigint) {
    sigaction(SIGINT, &g_replaced, nullptr);
  }
  g_installed = false;
}

bool InterruptWatch::Raised() {
  if (error_.has_value()) return true;
  if (!active_ || !g_sigint.exchange(false, std::memory_order_relaxed)) return false;
  pybind11::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return false;
  error_.emplace();  // takes the exception out of the thread's state
  return true;
}

void InterruptWatch::Rethrow() {
  if (error_.has_value()) throw *std::exchange(error_, std::nullopt);
}

}  // namespace codecvisor::python
