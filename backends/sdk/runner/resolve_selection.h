// File: backends/sdk/runner/resolve_selection.h
//
// Turns a frame request (indices, a range, times, a time span) into the
// stream indices it selects, in request order, checking each against the
// stream: the first thing the runner does with a request the host sent.
// Times are resolved by the vendor (index_at_seconds, get_frame_info), so
// a test gives it a vtable of its own. Runs in the sandboxed child.
//
// Thread-safety: ResolveSelection calls into the vendor session, which is
// used by one thread at a time (its session thread).

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_RESOLVE_SELECTION_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_RESOLVE_SELECTION_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/sdk/codecvisor_backend.h"
#include "backends/sdk/runner/cancel_check.h"
#include "backends/sdk/runner/frame_pool.h"
#include "ipc/channel.h"
#include "ipc/messages.h"
#include "ipc/unique_fd.h"

namespace codecvisor::runner {

class CloseWatchdog;

// A vendor session and what the runner knows about it.
struct VendorSession {
  const cv_backend_v1* vtable = nullptr;
  cv_session* session = nullptr;
  ipc::UniqueFd video_fd;
  ipc::SessionOpened opened;
  // The region whose crash hints cover calls for this session: the control
  // channel's until the session is attached, then its own.
  ipc::RegionHeader* hints = nullptr;
  // The vendor's frame pool (cv_open_options.frame_pool): outlives the
  // vendor session, which may give slots back as it closes.
  std::unique_ptr<FramePool> pool;
  // The vendor's cancel check (cv_open_options.cancel_check): outlives the
  // vendor session too.
  std::unique_ptr<CancelCheck> cancel;
  // Gives the vendor's close_session of this session a deadline; null:
  // none.
  CloseWatchdog* close_watchdog = nullptr;
};

// The stream indices a request selects, in request order: a list, or a
// range kept as start and step. A range is never expanded: with no frame
// count known its stop can lie far past the end (the vendor's out-of-range
// answer ends it), and a range of a long video is long.
class ResolvedFrames {
 public:
  static ResolvedFrames List(std::vector<int64_t> indices) {
    ResolvedFrames r;
    r.list_ = std::move(indices);
    r.size_ = r.list_.size();
    return r;
  }
  // [start, stop) by `step`; needs 0 <= start <= stop and step > 0.
  static ResolvedFrames Range(int64_t start, int64_t stop, int64_t step) {
    ResolvedFrames r;
    r.range_ = true;
    r.start_ = start;
    r.step_ = step;
    const uint64_t span = static_cast<uint64_t>(stop - start);
    r.size_ = span / static_cast<uint64_t>(step) + (span % static_cast<uint64_t>(step) != 0 ? 1 : 0);
    return r;
  }
  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The `i`-th index, i < size(); a range's cannot overflow (it is below stop).
  int64_t operator[](uint64_t i) const {
    return range_ ? start_ + static_cast<int64_t>(i * static_cast<uint64_t>(step_)) : list_[i];
  }

 private:
  bool range_ = false;
  std::vector<int64_t> list_;
  int64_t start_ = 0;
  int64_t step_ = 1;
  uint64_t size_ = 0;
};

// Resolves a frame request into stream indices, resolving negative indices
// (from the end) and times through the vendor. An index or time outside the
// stream is kOutOfRange naming it; so is a range's stop past a known end.
[[nodiscard]] absl::StatusOr<ResolvedFrames> ResolveSelection(const ipc::FrameRequest& request,
                                                              const VendorSession& session);

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_RESOLVE_SELECTION_H_
