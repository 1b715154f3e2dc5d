#include "backends/sdk/runner/cancel_check.h"

#include <utility>

namespace codecvisor::runner {
namespace {

// The innermost Scope of this thread, if any.
thread_local CancelCheck::Scope* current_scope = nullptr;

}  // namespace

CancelCheck::CancelCheck() : abi_{&CancelCheck::Cancelled} {
  static_assert(std::is_standard_layout_v<CancelCheck> && offsetof(CancelCheck, abi_) == 0);
}

CancelCheck::Scope::Scope(CancelCheck& check, std::function<bool()> probe)
    : check_(&check), probe_(std::move(probe)), outer_(current_scope) {
  current_scope = this;
}

CancelCheck::Scope::~Scope() { current_scope = outer_; }

int32_t CancelCheck::Cancelled(cv_cancel_check* self) {
  Scope* scope = current_scope;
  // Another session's check, or a thread that serves none (a decoder's own
  // threads): not this thread's to answer.
  if (scope == nullptr || self == nullptr || scope->check_ != reinterpret_cast<CancelCheck*>(self)) return 0;
  if (!scope->told_ && !scope->probing_) {
    scope->probing_ = true;
    scope->told_ = scope->probe_();
    scope->probing_ = false;
  }
  return scope->told_ ? 1 : 0;
}

}  // namespace codecvisor::runner
