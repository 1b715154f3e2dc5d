// File: core/frame_check.h
//
// What the host accepts in answer to one frame request. The runner shares
// its address space with vendor code, so every frame record may be a
// forgery: the host checks each against the selection it sent, in number,
// order and stream index (negative indices resolved as the runner resolves
// them), a time range's frames against its stop time and each other, and
// every frame's times against the bounds a stream's times have.
// A record that fails is a protocol violation: the caller replaces the
// backend and blames the request. Pure logic on private values; not
// thread-safe (one per request attempt).

#ifndef CODECVISOR_CORE_FRAME_CHECK_H_
#define CODECVISOR_CORE_FRAME_CHECK_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "ipc/messages.h"

namespace codecvisor {

class FrameCheck {
 public:
  // `frame_count`: the stream's frame count as the session reported it
  // (from the scan, else the header; for a time range, the scan's only,
  // since a backend reads on past a header's count), or -1 when unknown;
  // `estimated_count` places negative indices when it is unknown, as the
  // runner does (ipc::StreamMetadata::estimated_frame_count()).
  FrameCheck(const ipc::FrameRequest& request, int64_t frame_count, int64_t estimated_count = -1);

  // At most this many frames a second start in a time range, whatever the
  // backend claims (ipc/messages.h): the host's memory or the caller's disk
  // would fill.
  static constexpr double kMaxFramesPerSecond = ipc::kMaxFramesPerSecond;
  static constexpr uint64_t kTimeRangeSlack = ipc::kTimeRangeSlack;

  // From now on frames must come as `asked`, or as native frames of
  // `native_format` (the session's native layout's format, if it has one);
  // without this call any format passes.
  void ExpectFormat(ipc::OutputFormat asked, std::optional<std::string> native_format);

  // Exact mode: the backend placed every frame by a scan, so the frame
  // played at a time (a list of times, a time range's first) starts at or
  // before it, to a thousandth of a `tick` (the stream's time base, in
  // seconds: a time a hair before a frame's is rounded up to it), or is the stream's
  // first (index 0, shown from the stream's start). Approximate mode's
  // frames are placed by the header's rate, and may start after the time.
  void ExpectScannedTimes(double tick) { tick_ = tick; }

  // The next frame record of the answer. kDataLoss naming what is wrong if
  // it is not the frame the request asked for at this position, or not in
  // a format expected.
  [[nodiscard]] absl::Status Next(const ipc::FrameRef& ref);
  // The backend said the answer is complete. kDataLoss if frames the
  // request asked for are missing.
  [[nodiscard]] absl::Status Final() const;

  uint64_t received() const { return received_; }

 private:
  // kDataLoss where a frame's planes cannot hold a frame of its format (or
  // an RGB frame is named another format).
  absl::Status CheckPlanes(const ipc::FrameRef& ref) const;
  // The stream index expected at `position`, when the request fixes it.
  std::optional<int64_t> ExpectedIndex(uint64_t position) const;
  // The time whose played frame is due at `position`, if it is one.
  std::optional<double> PlayedAt(uint64_t position) const;

  const ipc::FrameRequest request_;  // a copy: lists hold at most 2048 entries
  int64_t negative_base_;  // what negative indices count back from
  // Frames the answer must hold exactly, or at most (a time range).
  uint64_t expected_ = 0;
  bool exact_ = true;
  bool bounded_by_time_ = false;  // a time range's bound is its length, not the stream's count
  uint64_t received_ = 0;
  int64_t previous_index_ = -1;
  std::optional<ipc::OutputFormat> asked_;
  std::optional<std::string> native_format_;
  std::optional<double> tick_;  // ExpectScannedTimes
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_FRAME_CHECK_H_
