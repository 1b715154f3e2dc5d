// File: core/session_budget.cc

#include "core/session_budget.h"

#include <algorithm>

namespace codecvisor {
namespace {

// glibc's default thread stack, which is what RLIMIT_STACK's usual 8 MiB
// gives every thread that does not set its own.
constexpr uint64_t kThreadStack = uint64_t{8} << 20;

}  // namespace

void SessionBudget::Hold(uint64_t token, uint64_t bytes) {
  Release(token);
  const uint64_t use = ++uses_;
  by_token_[token] = {bytes, use};
  by_use_[use] = token;
  held_ += bytes;
}

void SessionBudget::Touch(uint64_t token) {
  auto it = by_token_.find(token);
  if (it == by_token_.end()) return;
  by_use_.erase(it->second.last_use);
  it->second.last_use = ++uses_;
  by_use_[it->second.last_use] = token;
}

void SessionBudget::Release(uint64_t token) {
  auto it = by_token_.find(token);
  if (it == by_token_.end()) return;
  held_ -= it->second.bytes;
  by_use_.erase(it->second.last_use);
  by_token_.erase(it);
}

bool SessionBudget::Fits(uint64_t bytes) const {
  return capacity_ == 0 || (held_ <= capacity_ && bytes <= capacity_ - held_);
}

std::vector<uint64_t> SessionBudget::LeastRecentlyUsed(uint64_t except) const {
  std::vector<uint64_t> order;
  order.reserve(by_use_.size());
  for (const auto& [use, token] : by_use_) {
    if (token != except) order.push_back(token);
  }
  return order;
}

uint64_t SessionAddressSpace(uint64_t region_bytes, uint32_t decoder_threads, unsigned cores) {
  // FFmpeg's automatic count is the cores and one more, at most 16
  // (MAX_AUTO_THREADS).
  constexpr uint64_t kMaxAutoThreads = 16;
  const uint64_t automatic = std::min<uint64_t>(uint64_t{cores} + 1, kMaxAutoThreads);
  const uint64_t threads = 1 + (decoder_threads == 0 ? automatic : decoder_threads > 1 ? decoder_threads : 0);
  return region_bytes + threads * kThreadStack;
}

uint64_t SessionCapacity(uint64_t memory_mb) {
  // Three quarters: the backend's libraries and its decoders' own heaps
  // (reference frames not in the pool, packet buffers) take the rest.
  if (memory_mb == 0 || memory_mb >= (uint64_t{1} << 43)) return 0;  // none, or none that shifts into bytes
  return (memory_mb << 20) / 4 * 3;
}

}  // namespace codecvisor
