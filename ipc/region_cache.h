// The regions of one backend's closed sessions, kept for its next sessions.
//
// Creating a session's region allocates and zeroes every page of its memfd
// (MAP_POPULATE): 4 slots of a 1080p frame are 25 MB, about 6,000 pages,
// which cost the host about 25 ms on a VM, as much as decoding four
// frames. A closed session's region is already populated; the next session
// of the same backend process can have it, with its header reset.
//
// Contract:
// - Only one backend process's sessions share a cache: the BackendProcess
//   owns it and it dies with that process. A region never passes from one
//   backend process to another (the first could still have it mapped and
//   read the second's frames), and the backend that gets it back is the
//   one that had it, so a reused region shows it nothing new.
// - A region comes back when its last holder (the channel, frames still
//   viewing its slots) lets go, and is handed out again only once the
//   runner has marked its side detached (RegionHeader::backend_detached:
//   the session closed, nothing of it writes there); one whose backend
//   side is still attached is skipped. A hostile backend that lies about
//   that can only garble its own next session, which the host then
//   handles as any malformed message.
// - Bounded: at most `max_regions` (the oldest goes first), none larger
//   than `max_region_bytes`, and one idle for `max_idle` is unmapped at
//   the next Take or return. Shmem pages cannot be reclaimed without swap,
//   so the bounds are tight.
// - Fork: the pages are MAP_SHARED with any child forked while the region
//   existed, which may still view them (frames it inherited). A region
//   shared out before a fork is never kept, so the parent never writes a
//   new session's frames under a child's frames; a child letting go of an
//   inherited region unmaps it without touching the cache (whose lock a
//   parent thread may have held at the fork).

#ifndef CODECVISOR_IPC_REGION_CACHE_H_
#define CODECVISOR_IPC_REGION_CACHE_H_

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>

#include "base/mutex.h"
#include "ipc/region.h"

namespace codecvisor::ipc {

class RegionCache : public std::enable_shared_from_this<RegionCache> {
 public:
  struct Limits {
    size_t max_regions = 2;
    uint64_t max_region_bytes = uint64_t{128} << 20;
    std::chrono::steady_clock::duration max_idle = std::chrono::seconds(30);
  };

  static std::shared_ptr<RegionCache> Make(Limits limits);

  // A kept region of exactly `geometry` whose backend side has detached,
  // its header reset; nullptr when none. The newest fitting one first.
  std::shared_ptr<Region> Take(const Geometry& geometry);
  // Shares a new region so that it comes back here when released.
  std::shared_ptr<Region> Adopt(Region region);

  size_t size() const;

  // Forks of this process so far (counted by pthread_atfork handlers).
  static uint64_t Forks();

 private:
  struct Kept {
    std::unique_ptr<Region> region;
    std::chrono::steady_clock::time_point since;
  };

  explicit RegionCache(Limits limits) : limits_(limits) {}
  std::shared_ptr<Region> Share(std::unique_ptr<Region> region);
  void Return(std::unique_ptr<Region> region, uint64_t forks_when_shared);
  // Moves the regions idle past max_idle into `*dropped`.
  void Expire(std::chrono::steady_clock::time_point now, std::deque<Kept>* dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Limits limits_;
  mutable Mutex mu_;
  std::deque<Kept> kept_ ABSL_GUARDED_BY(mu_);  // oldest first
};

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_REGION_CACHE_H_
