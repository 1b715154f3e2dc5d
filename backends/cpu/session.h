// File: backends/cpu/session.h
//
// CpuSession: one open video, everything a cv_session does. Opening demuxes
// the header, opens the decoder and, in exact mode, scans the stream's
// packets once (no decoding) into a FrameIndex.
//
// Frames are rotated as the stream's display matrix says (FrameOutput:
// rotation and conversion in the CLI's order); metadata and layout sizes
// are post-rotation.
//
// Seek modes. Exact: frames are the scanned packets ordered by pts; indices,
// times and the frame count are exact. Approximate: the header's frame count
// (else duration x frame rate) and frame rate; frame i is nominally at
// begin + i / fps.
//
// Errors are absl::Status values whose messages do not name the file: the C
// ABI layer prefixes the caller's label. No call aborts on bad input, and a
// failed call leaves the session usable (the next request re-seeks).
//
// Thread-compatible: calls on one session must not overlap (the runner's
// contract); sessions share nothing.

#ifndef CODECVISOR_BACKENDS_CPU_SESSION_H_
#define CODECVISOR_BACKENDS_CPU_SESSION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cpu/demuxer.h"
#include "backends/cpu/frame_cursor.h"
#include "backends/cpu/frame_index.h"
#include "backends/cpu/frame_output.h"
#include "backends/cpu/picture_pool.h"
#include "backends/cpu/stream_metadata.h"
#include "backends/cpu/video_decoder.h"
#include "backends/sdk/codecvisor_backend.h"

namespace codecvisor::cpu {

// decoder_threads above this opens with this many (FFmpeg itself takes any
// count): each thread holds a stack and a decoder context, counted against
// the manifest's memory and task limits.
inline constexpr uint32_t kMaxDecoderThreads = 64;

// A header frame rate past this is no video's (the host refuses a time
// range whose frames hold more than 10,000 a second: the SDK README's
// "Time ranges"): approximate mode, which places frames by that rate,
// refuses the stream, and exact mode times its frames from their packets.
inline constexpr double kMaxHeaderFrameRate = 10'000;

// A session whose host converts native frames itself still gets RGB when
// its decoder runs frame threads and its frames are smaller than this many
// pixels (960x540). A native frame spares a pass over the RGB frame (the
// host converts straight into its own memory instead of this backend
// converting and the host copying), which pays more the larger the frame.
// But it leaves the thread that feeds libavcodec's frame threads nothing
// to do between two frames, so it waits on them at every frame, while the
// host's conversion takes a core from them: a cost per frame, which on
// small frames outweighs the pass. Measured on 2 vCPUs, the Python
// package's all-frames read with automatic threads (3 frame threads), RGB
// here against native: 640x360 1.05-1.07x, 854x480 1.03x, 960x540 1.00x,
// 1280x720 0.95x, 1920x1080 0.93x; with 1 thread native wins (at 360p and
// 1080p against the C++ in-process decoder, 1.10-1.12x against 0.97-0.99x
// and 1.14x against 0.95x): the host converts while the backend decodes.
inline constexpr int64_t kFrameThreadedNativeMinPixels = 960 * 540;
// Sets that bound for the sessions opened from now on (0: native frames at
// every size), for tests of the frame pool with frame threads on small
// videos; thread-safe.
void SetFrameThreadedNativeMinPixelsForTest(int64_t pixels);

class CpuSession {
 public:
  // Opens the video read through `fd` (never closed) with `options`, whose
  // struct_size has already been reconciled and whose enum fields checked
  // by the caller. Errors:
  // InvalidArgument (bad option or descriptor), DataLoss (not demuxable),
  // NotFound (no such video stream), Unimplemented (codec or pixel format),
  // ResourceExhausted.
  static absl::StatusOr<std::unique_ptr<CpuSession>> Open(int fd, const cv_open_options& options);

  const cv_stream_metadata& metadata() const { return metadata_; }
  // What the header says of the stream's times (DescribeHeaderTimes).
  cv_header_times header_times() const { return DescribeHeaderTimes(*demuxer_); }
  // The stream's pixel shape (DescribePixelAspectRatio).
  cv_aspect_ratio pixel_aspect_ratio() const { return DescribePixelAspectRatio(*demuxer_); }
  const cv_frame_layout& layout() const { return layout_; }
  // Every stream of the file (DescribeStreams).
  const std::vector<cv_stream_info>& streams() const { return streams_; }
  int64_t num_frames() const { return num_frames_; }

  // Describes frame `index` without decoding (approximate mode: nominal pts
  // and duration, key_frame 0). OutOfRange outside [0, num_frames()).
  absl::Status GetFrameInfo(int64_t index, cv_frame_info* out) const;

  // The last frame whose pts <= `seconds`. OutOfRange before the first
  // frame or at/after the end of the last one; InvalidArgument for NaN.
  // Approximate mode on a stream whose first frame is shown after the
  // header's start (B-frames in AVI): a time from that start on is the
  // first frame's, the one shown there.
  absl::StatusOr<int64_t> IndexAtSeconds(double seconds) const;

  // Decodes frame `index` into `buffer` at layout() and describes it in
  // `info` (approximate mode: the decoded frame's own pts and duration). A
  // late buffer (data NULL) is acquired after decoding, before conversion.
  absl::Status DecodeFrame(int64_t index, cv_frame_buffer* buffer, cv_frame_info* info);

  // Decodes the frame played at `seconds` (IndexAtSeconds' range and
  // errors). Exact mode: DecodeFrame of IndexAtSeconds. Approximate mode:
  // found by its own pts (FrameCursor::DecodePlayedAt), not at a nominal
  // index's time, which on a variable-rate stream is another frame's;
  // `info->index` is the nominal index nearest its pts, and a request for
  // the next index reads on from it, past the header's count if the stream
  // goes on.
  absl::Status DecodeFrameAtSeconds(double seconds, cv_frame_buffer* buffer, cv_frame_info* info);

  // Demuxer seeks made so far.
  int64_t seeks_for_test() const { return cursor_->seeks(); }
  // The picture pool, when frames are decoded into the runner's frame pool.
  const PicturePool* pictures_for_test() const { return pictures_.get(); }
  // Frames lent to the host in the pool slot they were decoded into.
  int64_t frames_lent_in_place() const { return lent_in_place_; }

 private:
  absl::Status CheckCapacity(const cv_frame_buffer& buffer) const;
  // A buffer decode_frame can write: one large enough, or a late one.
  absl::Status CheckBuffer(const cv_frame_buffer& buffer) const;
  // Writes (or lends) decoded `frame`, labelled `index`, into `buffer` and
  // describes it in `info`.
  absl::Status Deliver(const AVFrame& frame, int64_t index, cv_frame_buffer* buffer, cv_frame_info* info);
  // `seconds` in the stream's time base, rounded down, tolerating the
  // rounding of a time computed as pts x time base.
  int64_t TicksAt(double seconds) const;
  // Lends `frame` to the host in the pool slot it was decoded into, if it
  // was and the buffer is late (not yet acquired); false otherwise.
  bool LendInPlace(const AVFrame& frame, cv_frame_buffer* buffer) const;
  // Writes `frame` into the buffer, acquiring a late one first.
  absl::Status WriteFrame(const AVFrame& frame, cv_frame_buffer* buffer);
  // Aborted (CV_ERROR_NATIVE_CHANGED) when the session lays frames out
  // natively in place of RGB and `frame` differs from the stream in pixel
  // format, size, colour space or range: the host converts with the
  // stream's, so such a frame must go as RGB, in a new session.
  absl::Status CheckNativeHolds(const AVFrame& frame, int64_t index) const;
  CpuSession() = default;
  // Approximate mode: frame i plays at the first pts + i frame durations
  // of the header's rate, as many frames as the header counts (or its
  // duration gives), from where the decoder shows the first one.
  absl::Status StartNominalTimeline();

  // Makes the cursor for the session's mode, stopping at the runner's
  // cancel check when there is one.
  void MakeCursor(const FrameIndex* index, bool at_start);

  absl::Status CheckIndex(int64_t index) const;
  // Approximate mode: the nominal pts of frame `index`.
  int64_t NominalPts(int64_t index) const;

  // Native frames decoded straight into the runner's frame pool. First:
  // it outlives the decoder and every frame that references its pictures.
  std::unique_ptr<PicturePool> pictures_;
  std::unique_ptr<Demuxer> demuxer_;
  std::unique_ptr<VideoDecoder> decoder_;
  std::optional<FrameIndex> index_;  // exact mode only
  std::unique_ptr<FrameCursor> cursor_;
  cv_cancel_check* cancel_check_ = nullptr;  // cv_open_options.cancel_check
  std::unique_ptr<FrameOutput> output_;
  // Approximate mode: the last frame returned was found by time, or read
  // on from one, so the next index reads on past the header's count.
  bool reading_on_from_time_ = false;
  cv_stream_metadata metadata_{};
  cv_frame_layout layout_{};
  // Native frames in place of the RGB asked for, and the stream's values
  // the host converts them with.
  bool native_for_rgb_ = false;
  int stream_color_space_ = 0;
  int stream_color_range_ = 0;
  std::vector<cv_stream_info> streams_;
  int64_t num_frames_ = 0;
  bool count_estimated_ = false;  // approximate mode: duration x rate
  // Approximate mode's nominal timeline.
  AVRational frame_rate_{0, 1};
  int64_t begin_pts_ = 0;
  int64_t frame_duration_ = 1;
  // Where the header starts the stream, when the nominal timeline starts
  // later (the first frame shown video_delay frames late); else the begin.
  double header_begin_seconds_ = 0;
  int64_t lent_in_place_ = 0;
};

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_SESSION_H_
