// File: examples/vendor_backend/session.h
//
// One open video of the dav1d plugin: the container, the frame table (exact
// mode) or the header's timeline (approximate mode), the libdav1d stream and
// the converter, behind the operations of the C ABI. Errors come back as a
// Status whose message does not yet name the file (dav1d_backend.cc adds
// the caller's label).
//
// Not thread-safe: the runner never overlaps calls on one session.

#ifndef CODECVISOR_EXAMPLES_VENDOR_BACKEND_SESSION_H_
#define CODECVISOR_EXAMPLES_VENDOR_BACKEND_SESSION_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "av1_stream.h"
#include "container.h"
#include "frame_table.h"
#include "picture_converter.h"
#include "status.h"

namespace dav1d_plugin {

class Session {
 public:
  // Opens the video on `fd` with `options` (already checked for sane enum
  // values by the ABI layer). Exact mode reads every packet once here.
  static Status Open(int fd, const cv_open_options& options, std::unique_ptr<Session>* out);

  const cv_stream_metadata& metadata() const { return metadata_; }
  // The ABI's get_header_times: what the container's header says.
  const cv_header_times& header_times() const { return header_times_; }
  const cv_frame_layout& layout() const { return converter_->layout(); }
  // The ABI's get_streams: every stream of the file, as the container has them.
  uint32_t ListStreams(cv_stream_info* out, uint32_t capacity) const { return container_->ListStreams(out, capacity); }

  // The ABI's get_frame_info, index_at_seconds and decode_frame.
  // OUT_OF_RANGE for an index or time outside the stream.
  Status GetFrameInfo(int64_t index, cv_frame_info* out) const;
  Status IndexAtSeconds(double seconds, int64_t* index) const;
  Status DecodeFrame(int64_t index, const cv_frame_buffer& buffer, cv_frame_info* info);

  // Container seeks since open: lets tests check that sequential reads do
  // not re-seek.
  int64_t seeks() const { return seeks_; }

 private:
  Session() = default;
  Status DescribeStream(const Dav1dSequenceHeader& seq, AVPixelFormat native);
  Status CheckIndex(int64_t index) const;
  int64_t NominalPts(int64_t index) const;  // approximate mode's timeline
  Status Reposition(int64_t timestamp);
  // Leaves stream_ at the picture of frame `index`.
  Status DecodeExact(int64_t index);
  Status DecodeApproximate(int64_t index);

  std::unique_ptr<Container> container_;
  std::optional<FrameTable> table_;  // exact mode only
  std::unique_ptr<Av1Stream> stream_;
  std::unique_ptr<PictureConverter> converter_;
  cv_stream_metadata metadata_{};
  cv_header_times header_times_{};
  int64_t num_frames_ = 0;
  double time_base_ = 0;
  // Approximate mode: the header's frame rate as a duration in time-base units.
  int64_t begin_pts_ = 0;
  double frame_ticks_ = 0;
  int64_t current_index_ = -1;  // the frame stream_'s picture is, -1 if unknown
  int64_t first_order_ = 0;     // exact mode: decode order of the first packet since the seek
  bool positioned_ = true;      // false after a failed seek
  int64_t seeks_ = 0;
};

}  // namespace dav1d_plugin

#endif  // CODECVISOR_EXAMPLES_VENDOR_BACKEND_SESSION_H_
