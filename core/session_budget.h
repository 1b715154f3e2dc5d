// File: core/session_budget.h
//
// SessionBudget: which open sessions of one backend to close so that a new
// one fits in the backend's address space. Every session costs the
// backend its shared-memory region and its thread's stack (and its
// decoder's threads), reserved whether or not a frame is decoded; a
// process that keeps a few hundred 1080p decoders open would otherwise
// fill the backend's RLIMIT_AS (the manifest's memory_mb), and the
// backend would be replaced, taking every session with it. Instead the
// least recently used sessions are parked: closed in the backend, their
// decoders kept, re-opened on their next request (latency, not failure).
//
// Pure logic on the sizes and uses it is told of: recency is the order of
// calls, not a clock, so it is tested without processes. Not thread-safe:
// the Supervisor owns one under its lock.

#ifndef CODECVISOR_CORE_SESSION_BUDGET_H_
#define CODECVISOR_CORE_SESSION_BUDGET_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace codecvisor {

class SessionBudget {
 public:
  // `capacity`: the bytes the sessions together may take; 0 means no limit.
  explicit SessionBudget(uint64_t capacity) : capacity_(capacity) {}

  // Session `token` holds `bytes` now (a re-open replaces what it held),
  // and is the most recently used.
  void Hold(uint64_t token, uint64_t bytes);
  // Session `token` was used: it becomes the most recently used.
  void Touch(uint64_t token);
  // Session `token` holds nothing any more (closed or parked).
  void Release(uint64_t token);

  // Whether `bytes` more fit beside what the sessions hold.
  bool Fits(uint64_t bytes) const;
  // Sessions holding something, least recently used first, `except` left
  // out: the order to park them in until Fits().
  std::vector<uint64_t> LeastRecentlyUsed(uint64_t except) const;

  uint64_t held() const { return held_; }
  uint64_t capacity() const { return capacity_; }
  size_t sessions() const { return by_token_.size(); }

 private:
  struct Entry {
    uint64_t bytes = 0;
    uint64_t last_use = 0;
  };
  const uint64_t capacity_;
  uint64_t held_ = 0;
  uint64_t uses_ = 0;  // the recency counter
  std::map<uint64_t, Entry> by_token_;
  std::map<uint64_t, uint64_t> by_use_;  // last_use -> token
};

// The backend address space a session costs: its region, and a stack for
// the runner's session thread and for each of the decoder's own threads
// (`decoder_threads`, 0 for the decoder's automatic count, which FFmpeg
// makes one more than the machine's cores, at most 16).
uint64_t SessionAddressSpace(uint64_t region_bytes, uint32_t decoder_threads, unsigned cores);

// The part of a backend's address-space limit (`memory_mb`) its sessions
// may hold together: the rest is the process's own (libraries, the
// decoders' heaps, which no one counts ahead).
uint64_t SessionCapacity(uint64_t memory_mb);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_SESSION_BUDGET_H_
