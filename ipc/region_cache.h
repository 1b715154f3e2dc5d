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
// - At most `max_regions` are kept (the oldest goes first); a region that
//   comes back after the cache is gone is unmapped.
// - After a fork the child must not use the parent's cache (the memfd is
//   shared with the parent): the Python package gives a forked child its
//   own host, and so its own backends and caches.

#ifndef CODECVISOR_IPC_REGION_CACHE_H_
#define CODECVISOR_IPC_REGION_CACHE_H_

#include <cstddef>
#include <deque>
#include <memory>

#include "base/mutex.h"
#include "ipc/region.h"

namespace codecvisor::ipc {

class RegionCache : public std::enable_shared_from_this<RegionCache> {
 public:
  static std::shared_ptr<RegionCache> Make(size_t max_regions) {
    return std::shared_ptr<RegionCache>(new RegionCache(max_regions));
  }

  // A kept region of exactly `geometry` whose backend side has detached,
  // its header reset; nullptr when none. The newest fitting one first.
  std::shared_ptr<Region> Take(const Geometry& geometry);
  // Shares a new region so that it comes back here when released.
  std::shared_ptr<Region> Adopt(Region region);

  size_t size() const;

 private:
  explicit RegionCache(size_t max_regions) : max_regions_(max_regions) {}
  std::shared_ptr<Region> Share(std::unique_ptr<Region> region);
  void Return(std::unique_ptr<Region> region);

  const size_t max_regions_;
  mutable Mutex mu_;
  std::deque<std::unique_ptr<Region>> kept_ ABSL_GUARDED_BY(mu_);  // oldest first
};

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_REGION_CACHE_H_
