// File: core/frame_check.cc

#include "core/frame_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "core/backend_output.h"
#include "core/session_opened_check.h"
#include "ipc/plane_shapes.h"

namespace codecvisor {
namespace {

// [start, stop) by step, as the runner counts it; 0 for a range the runner
// refuses (it answers with an error, never with frames).
uint64_t RangeSize(const ipc::IndexRange& r) {
  if (r.step <= 0 || r.start < 0 || r.start > r.stop) return 0;
  const uint64_t span = static_cast<uint64_t>(r.stop) - static_cast<uint64_t>(r.start);
  const auto step = static_cast<uint64_t>(r.step);
  return span / step + (span % step != 0 ? 1 : 0);
}

// How far past a time a frame's pts may be and still be the frame played
// then: a backend finds it in ticks of the stream's time base, `tick`
// seconds, rounding a time a hair before a frame's up to it (a time
// computed as pts x time base, or in float32 as a tensor holds it: 0.08 is
// 0.0799999982; the cpu backend, within a millionth of a tick), so up to
// a thousandth of a tick, of at most 10 s (a backend's own time base must
// not switch the check off); and the pts comes back as a double.
double TimeSlack(double seconds, double tick) { return std::min(tick, 10.0) * 1e-3 + 1e-9 + std::fabs(seconds) * 1e-9; }

}  // namespace

FrameCheck::FrameCheck(const ipc::FrameRequest& request, int64_t frame_count, int64_t estimated_count)
    : request_(request), negative_base_(frame_count >= 0 ? frame_count : estimated_count) {
  if (auto* list = std::get_if<ipc::IndexList>(&request.selection)) {
    expected_ = list->indices.size();
  } else if (auto* range = std::get_if<ipc::IndexRange>(&request.selection)) {
    expected_ = RangeSize(*range);
  } else if (auto* times = std::get_if<ipc::PtsList>(&request.selection)) {
    expected_ = times->seconds.size();
  } else {
    // A time range: as many frames as start in it, at most the whole
    // stream, and at most what its length can hold.
    exact_ = false;
    expected_ = frame_count >= 0 ? static_cast<uint64_t>(frame_count) : std::numeric_limits<uint64_t>::max();
    const auto& r = std::get<ipc::PtsRange>(request.selection);
    const double by_time = std::max(std::ceil((r.stop_seconds - r.start_seconds) * kMaxFramesPerSecond), 0.0) +
                           static_cast<double>(kTimeRangeSlack);
    // 2^63: far past any count, exactly a double, and below the cast's limit.
    if (std::isfinite(by_time) && by_time < 9.2e18 && static_cast<uint64_t>(by_time) < expected_) {
      expected_ = static_cast<uint64_t>(by_time);
      bounded_by_time_ = true;
    }
  }
}

std::optional<double> FrameCheck::PlayedAt(uint64_t position) const {
  if (auto* list = std::get_if<ipc::PtsList>(&request_.selection)) return list->seconds[position];
  if (auto* range = std::get_if<ipc::PtsRange>(&request_.selection); range != nullptr && position == 0) {
    return range->start_seconds;
  }
  return std::nullopt;
}

std::optional<int64_t> FrameCheck::ExpectedIndex(uint64_t position) const {
  if (auto* list = std::get_if<ipc::IndexList>(&request_.selection)) {
    const int64_t i = list->indices[position];
    return i < 0 && negative_base_ >= 0 ? i + negative_base_ : i;
  }
  if (auto* range = std::get_if<ipc::IndexRange>(&request_.selection)) {
    // Below stop, so no overflow (position < RangeSize).
    return range->start + static_cast<int64_t>(position * static_cast<uint64_t>(range->step));
  }
  if (std::holds_alternative<ipc::PtsRange>(request_.selection) && position > 0) {
    return previous_index_ + 1;  // a time range's frames are consecutive
  }
  return std::nullopt;
}

void FrameCheck::ExpectFormat(ipc::OutputFormat asked, std::optional<std::string> native_format) {
  asked_ = asked;
  native_format_ = std::move(native_format);
}

absl::Status FrameCheck::Next(const ipc::FrameRef& ref) {
  const uint64_t position = received_;
  if (ref.request_position != position) {
    return absl::DataLossError(absl::StrCat("backend sent frames out of request order (position ",
                                            ref.request_position, " where ", position, " was due)"));
  }
  if (position >= expected_ && bounded_by_time_) {
    const auto& r = std::get<ipc::PtsRange>(request_.selection);
    return absl::DataLossError(absl::StrCat("backend sent more frames than ", r.stop_seconds - r.start_seconds,
                                            " s of video can hold (", expected_, " at most: ", kMaxFramesPerSecond,
                                            " a second, and ", kTimeRangeSlack, " more)"));
  }
  if (position >= expected_) {
    return absl::DataLossError(absl::StrCat("backend sent more frames than the request asked for (",
                                            expected_, (exact_ ? "" : " at most"), ")"));
  }
  if (ref.index < 0) return absl::DataLossError(absl::StrCat("backend sent frame index ", ref.index));
  if (std::optional<int64_t> expected = ExpectedIndex(position); expected && *expected != ref.index) {
    return absl::DataLossError(absl::StrCat("backend sent frame ", ref.index, " at request position ", position,
                                            " where frame ", *expected, " was asked for"));
  }
  // NaN and infinities would reach the caller's arithmetic (a sampler's
  // clip times, a sort); so would an end (pts + duration) that overflows.
  // A frame's times are bounded as the stream's are.
  if (!ipc::FrameTimesPossible(ref.pts_seconds, ref.duration_seconds)) {
    return absl::DataLossError(absl::StrCat("backend sent frame ", ref.index, " at ", ref.pts_seconds, " s lasting ",
                                            ref.duration_seconds, " s (a time is within ", kMaxStreamSeconds,
                                            " s either way, a duration not negative and at most that)"));
  }
  if (auto* span = std::get_if<ipc::PtsRange>(&request_.selection);
      span != nullptr && !(ref.pts_seconds < span->stop_seconds)) {
    return absl::DataLossError(absl::StrCat("backend sent a frame at ", ref.pts_seconds,
                                            " s for a time range that ends at ", span->stop_seconds, " s"));
  }
  if (std::optional<double> time = PlayedAt(position);
      tick_.has_value() && time.has_value() && ref.index != 0 && ref.pts_seconds > *time + TimeSlack(*time, *tick_)) {
    return absl::DataLossError(absl::StrCat("backend sent frame ", ref.index, " at ", ref.pts_seconds,
                                            " s as the frame played at ", *time,
                                            " s, which a frame starting after it cannot be"));
  }
  if (asked_.has_value() && ref.format != *asked_ &&
      !(ref.format == ipc::OutputFormat::kNative && ref.pixel_format == native_format_)) {
    return absl::DataLossError(absl::StrCat(
        "backend sent frame ", ref.index, " as ", ipc::OutputFormatName(ref.format), " ",
        ReplaceUnsafeForTerminal(ref.pixel_format), " where ", ipc::OutputFormatName(*asked_), " was asked for",
        native_format_.has_value() ? absl::StrCat(" (or native ", ReplaceUnsafeForTerminal(*native_format_), ")")
                                   : ""));
  }
  if (absl::Status s = CheckPlanes(ref); !s.ok()) return s;
  previous_index_ = ref.index;
  ++received_;
  return absl::OkStatus();
}

absl::Status FrameCheck::CheckPlanes(const ipc::FrameRef& ref) const {
  const bool rgb = ref.format != ipc::OutputFormat::kNative;
  if (rgb && !ref.pixel_format.empty() && ref.pixel_format != ipc::RgbPixelFormatName(ref.format)) {
    return absl::DataLossError(absl::StrCat("backend sent frame ", ref.index, " as ", ipc::OutputFormatName(ref.format),
                                            " named '", ReplaceUnsafeForTerminal(ref.pixel_format), "'"));
  }
  // RGB planes are the arena's to check (ipc::CheckFrameRef); a native
  // format the host knows has planes of known rows and row lengths.
  const std::optional<std::vector<ipc::PlaneShape>> shapes =
      rgb ? std::nullopt : ipc::PlaneShapesOf(ref.pixel_format, ref.width, ref.height);
  if (!shapes.has_value()) return absl::OkStatus();
  bool fits = shapes->size() == ref.planes.size();
  for (size_t i = 0; fits && i < shapes->size(); ++i) {
    fits = ref.planes[i].stride >= (*shapes)[i].row_bytes && ref.planes[i].rows >= (*shapes)[i].rows;
  }
  if (!fits) {
    return absl::DataLossError(absl::StrCat("backend sent frame ", ref.index, " as ", ref.width, "x", ref.height, " ",
                                            ReplaceUnsafeForTerminal(ref.pixel_format), " in ", ref.planes.size(),
                                            " planes that cannot hold it"));
  }
  return absl::OkStatus();
}

absl::Status FrameCheck::Final() const {
  if (exact_ && received_ != expected_) {
    return absl::DataLossError(absl::StrCat("backend ended the answer after ", received_, " of ", expected_,
                                            " requested frames"));
  }
  return absl::OkStatus();
}

}  // namespace codecvisor
