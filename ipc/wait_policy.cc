#include "ipc/wait_policy.h"

#include <algorithm>
#include <bit>

namespace codecvisor::ipc {
namespace {

// The k-th smallest (0-based) of the first `n` entries of `history`.
template <size_t N>
std::chrono::nanoseconds KthSmallest(const std::array<std::chrono::nanoseconds, N>& history, size_t n, size_t k) {
  std::array<std::chrono::nanoseconds, N> sorted = history;
  std::nth_element(sorted.begin(), sorted.begin() + k, sorted.begin() + n);
  return sorted[k];
}

}  // namespace

void WaitPolicy::RecordWait(nanoseconds waited, bool poll_missed) {
  waits_[wait_count_ % kHistory] = std::max(waited, nanoseconds(0));
  ++wait_count_;
  missed_ = ((missed_ << 1) | (poll_missed ? 1u : 0u)) & ((1u << kHistory) - 1);
}

void WaitPolicy::RecordOversleep(nanoseconds late) {
  oversleeps_[oversleep_count_ % kHistory] = std::max(late, nanoseconds(0));
  ++oversleep_count_;
}

std::chrono::nanoseconds WaitPolicy::expected_wait() const {
  if (wait_count_ < kWarmWaits) return nanoseconds(-1);
  const size_t n = std::min(wait_count_, kHistory);
  return KthSmallest(waits_, n, 1);
}

std::chrono::nanoseconds WaitPolicy::lead() const {
  if (oversleep_count_ == 0) return kDefaultLead;
  const size_t n = std::min(oversleep_count_, kHistory);
  return KthSmallest(oversleeps_, n, n / 2) + kLeadMargin;
}

WaitPlan WaitPolicy::Plan(const WaitConditions& conditions) const {
  const bool busy = conditions.idle_cores == 0;
  const nanoseconds expected = expected_wait();
  if (expected < nanoseconds(0)) return {.spin = kColdSpin, .yield = busy};
  if (expected <= kSpinWhole) return {.spin = std::clamp(expected * 2, kMinSpin, kSpinWhole), .yield = busy};
  // Every core has work: a sleeping vCPU does not halt, so a wake-up is
  // cheap, and spinning would take a decoder's core.
  if (busy || expected > kMaxNapWait || std::popcount(missed_) >= kMissesToStop) return {};
  const nanoseconds nap = expected - lead();
  const nanoseconds poll =
      std::clamp(kLeadMargin + expected * kPollPerMille / 1000, kMinPoll, kMaxPoll);
  // Too short to nap: poll from the start.
  if (nap < kMinNap) return {.spin = poll};
  return {.nap = nap, .poll = poll};
}

}  // namespace codecvisor::ipc
