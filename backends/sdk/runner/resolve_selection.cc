#include "backends/sdk/runner/resolve_selection.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "backends/sdk/runner/abi_convert.h"
#include "backends/sdk/runner/crash_hints.h"

namespace codecvisor::runner {
namespace {

// What the session knows of its frame count, for messages.
struct FrameCount {
  int64_t frames = -1;
  bool estimated = false;
};

FrameCount CountFrames(const ipc::StreamMetadata& m) {
  return {m.estimated_frame_count(), m.known_frame_count() < 0 && m.estimated_frame_count() >= 0};
}

std::string FramesText(const FrameCount& count) {
  return count.estimated ? absl::StrCat("about ", count.frames,
                                        " frames (estimated from its duration and frame rate: its header has no count)")
                         : absl::StrCat(count.frames, " frames");
}

absl::Status IndexOutOfRange(int64_t index, const FrameCount& count) {
  if (count.frames < 0) {
    return absl::OutOfRangeError(absl::StrCat("frame index ", index,
                                              " cannot be resolved: the stream's frame count is unknown (no scan, "
                                              "no count in its header, no duration and rate to estimate it from)"));
  }
  return absl::OutOfRangeError(
      absl::StrCat("frame index ", index, " is out of range: the stream has ", FramesText(count)));
}

absl::StatusOr<int64_t> IndexAt(const VendorSession& s, double seconds) {
  int64_t index = -1;
  cv_error error{};
  VendorCall call(s.hints);
  cv_status st = s.vtable->index_at_seconds(s.session, seconds, &index, &error);
  if (st != CV_OK) return VendorError(st, error);
  return index;
}

}  // namespace

absl::StatusOr<ResolvedFrames> ResolveSelection(const ipc::FrameRequest& request, const VendorSession& session) {
  // An estimated count places negative indices; only a known one bounds the
  // others (past an estimate, the backend finds the end itself).
  const FrameCount known = CountFrames(session.opened.metadata);
  const int64_t count = known.estimated ? -1 : known.frames;
  std::vector<int64_t> out;
  if (auto* list = std::get_if<ipc::IndexList>(&request.selection)) {
    out.reserve(list->indices.size());
    for (int64_t i : list->indices) {
      // Negative indices count from the end, as in Python.
      const int64_t resolved = (i < 0 && known.frames >= 0) ? i + known.frames : i;
      if (resolved < 0 || (count >= 0 && resolved >= count)) return IndexOutOfRange(i, known);
      out.push_back(resolved);
    }
  } else if (auto* range = std::get_if<ipc::IndexRange>(&request.selection)) {
    if (range->step <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("frame range step must be positive, got ", range->step));
    }
    const std::string text = absl::StrCat("frame range [", range->start, ", ", range->stop, ")");
    if (range->start < 0) return absl::InvalidArgumentError(absl::StrCat(text, " starts before frame 0"));
    if (range->start > range->stop) return absl::InvalidArgumentError(absl::StrCat(text, " starts after its stop"));
    if (count >= 0 && range->stop > count) {
      return absl::OutOfRangeError(
          absl::StrCat(text, " stops past the stream's end: the stream has ", FramesText(known)));
    }
    return ResolvedFrames::Range(range->start, range->stop, range->step);
  } else if (auto* times = std::get_if<ipc::PtsList>(&request.selection)) {
    out.reserve(times->seconds.size());
    for (double t : times->seconds) {
      absl::StatusOr<int64_t> index = IndexAt(session, t);
      if (!index.ok()) return index.status();
      out.push_back(*index);
    }
  } else if (auto* span = std::get_if<ipc::PtsRange>(&request.selection)) {
    if (!(span->start_seconds <= span->stop_seconds)) {
      return absl::InvalidArgumentError(absl::StrCat("time range [", span->start_seconds, ", ",
                                                     span->stop_seconds, ") is reversed or not a number"));
    }
    if (span->start_seconds == span->stop_seconds) return ResolvedFrames::List(std::move(out));
    absl::StatusOr<int64_t> first = IndexAt(session, span->start_seconds);
    if (!first.ok()) return first.status();
    // A vendor's times that never reach the stop (all one time, or a
    // nanosecond apart) would fill this process's memory: at most
    // kMaxFramesPerSecond a second of the time the frames have covered,
    // and kTimeRangeSlack in a row at one time, as the host checks them.
    double first_pts = std::numeric_limits<double>::quiet_NaN();
    double last_pts = -std::numeric_limits<double>::infinity();
    uint64_t sharing = 0;  // frames in a row at last_pts, after the first
    for (int64_t i = *first; count < 0 || i < count; ++i) {
      cv_frame_info info{};
      cv_error error{};
      cv_status st;
      {
        VendorCall call(session.hints);
        st = session.vtable->get_frame_info(session.session, i, &info, &error);
      }
      if (st == CV_ERROR_OUT_OF_RANGE) break;
      if (st != CV_OK) return VendorError(st, error);
      if (!std::isfinite(info.pts_seconds)) {
        return absl::InternalError(
            absl::StrCat("the backend's frame ", i, " starts at ", info.pts_seconds, " s (a time is finite)"));
      }
      if (info.pts_seconds >= span->stop_seconds) break;
      sharing = info.pts_seconds > last_pts ? 0 : sharing + 1;
      if (sharing >= ipc::kTimeRangeSlack) {
        return absl::InternalError(absl::StrCat("the backend's frame times do not advance: frames ",
                                                i - static_cast<int64_t>(sharing), " to ", i,
                                                " all start at or before ", last_pts, " s (at most ",
                                                ipc::kTimeRangeSlack, " frames in a row may share a time)"));
      }
      last_pts = std::max(last_pts, info.pts_seconds);
      // From the range's start, or the first frame's if later: the frame
      // playing at the start may have begun long before it.
      if (std::isnan(first_pts)) first_pts = std::max(info.pts_seconds, span->start_seconds);
      const double covered = std::max(0.0, last_pts - first_pts);
      if (static_cast<double>(out.size()) >= covered * ipc::kMaxFramesPerSecond + ipc::kTimeRangeSlack) {
        return absl::InternalError(absl::StrCat("the backend's frame times put ", out.size() + 1, " frames in ",
                                                covered, " s (at most ", ipc::kMaxFramesPerSecond, " a second, and ",
                                                ipc::kTimeRangeSlack, " more)"));
      }
      out.push_back(i);
    }
  }
  return ResolvedFrames::List(std::move(out));
}

}  // namespace codecvisor::runner
