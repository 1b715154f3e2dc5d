#include "python/codecvisor/interrupt_watch.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>

#include "pybind11/pybind11.h"

namespace codecvisor::python {
namespace {

// Written only by the main thread, with the GIL held, before the handler
// that reads them is installed and after it is removed.
struct sigaction g_replaced;
bool g_installed = false;
std::atomic<bool> g_sigint{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

void NoteSigint(int signal, siginfo_t* info, void* context) {
  // Python's handler first: once the note is seen, the signal is pending
  // in Python too, whichever thread the kernel ran this on.
  if ((g_replaced.sa_flags & SA_SIGINFO) != 0) {
    g_replaced.sa_sigaction(signal, info, context);
  } else if (g_replaced.sa_handler != SIG_DFL && g_replaced.sa_handler != SIG_IGN) {
    g_replaced.sa_handler(signal);
  }
  g_sigint.store(true, std::memory_order_release);
}

// A child forked while a watch was installed (by a thread other than the
// one in the request) never runs that watch's destructor: it gets the
// handler the watch replaced back, and may watch again.
void ForgetWatchInChild() {
  if (!g_installed) return;
  sigaction(SIGINT, &g_replaced, nullptr);
  g_installed = false;
  g_sigint.store(false, std::memory_order_relaxed);
}

// On the main thread with Python's default SIGINT handler, the one that
// raises KeyboardInterrupt: only then is cancelling the request for it
// what Python would do.
bool ShouldWatch() {
  pybind11::module_ threading = pybind11::module_::import("threading");
  if (threading.attr("main_thread")().attr("ident").cast<unsigned long>() != PyThread_get_thread_ident()) {
    return false;
  }
  pybind11::module_ signal_module = pybind11::module_::import("signal");
  return signal_module.attr("getsignal")(static_cast<int>(SIGINT)).is(signal_module.attr("default_int_handler"));
}

}  // namespace

InterruptWatch::InterruptWatch() {
  static const bool registered = pthread_atfork(nullptr, nullptr, &ForgetWatchInChild) == 0;
  (void)registered;
  if (g_installed || !ShouldWatch()) return;
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

bool InterruptWatch::Raised() const { return active_ && g_sigint.load(std::memory_order_acquire); }

const std::atomic<bool>& InterruptWatch::Flag() const {
  static const std::atomic<bool> never{false};
  return active_ ? g_sigint : never;
}

void InterruptWatch::Rethrow() const {
  if (Raised() && PyErr_CheckSignals() != 0) throw pybind11::error_already_set();
}

}  // namespace codecvisor::python
