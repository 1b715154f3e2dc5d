// File: backends/sdk/runner/cancel_check.h
//
// The runner's side of cv_cancel_check (codecvisor_backend.h): one per
// session, given to the vendor at open_session. While the session thread is
// inside a vendor decode call, a Scope on that thread answers the vendor's
// cancelled() with its probe (the session server reading the channel for a
// Cancel of the request being served). Any other thread, or a call outside
// a Scope, is told 0: the probe reads the session's channel, which only the
// session thread may. Runs in the sandboxed child.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_CANCEL_CHECK_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_CANCEL_CHECK_H_

#include <cstddef>
#include <functional>
#include <type_traits>

#include "backends/sdk/codecvisor_backend.h"

namespace codecvisor::runner {

class CancelCheck {
 public:
  CancelCheck();
  CancelCheck(const CancelCheck&) = delete;
  CancelCheck& operator=(const CancelCheck&) = delete;

  // What the vendor is given (cv_open_options.cancel_check).
  cv_cancel_check* abi() { return &abi_; }

  // For its lifetime, on the thread that makes it: the vendor's calls of
  // `check`'s cancelled() are answered by `probe` until it says true, and
  // true from then on. Scopes nest (the innermost answers). Not
  // async-signal-safe: a call from a signal handler that interrupted the
  // probe is told the last answer.
  class Scope {
   public:
    Scope(CancelCheck& check, std::function<bool()> probe);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

    // Whether the vendor was told the request is cancelled.
    bool told() const { return told_; }

   private:
    friend class CancelCheck;
    const CancelCheck* check_;
    std::function<bool()> probe_;  // (a lambda of two references needs no allocation)
    bool told_ = false;
    bool probing_ = false;  // a call from inside the probe (a signal handler's) is told what is known
    Scope* outer_;
  };

 private:
  static int32_t Cancelled(cv_cancel_check* self);

  cv_cancel_check abi_;  // first: the callback finds `this` from it
};

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_CANCEL_CHECK_H_
