// File: backends/cpu/session.cc

#include "backends/cpu/session.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "backends/cpu/av_enums.h"
#include "backends/cpu/av_util.h"
#include "backends/cpu/decode_times.h"
#include "backends/cpu/leading_frames.h"
#include "backends/cpu/mpeg4_bitstream.h"
#include "backends/cpu/packet_scan.h"
#include "backends/cpu/stream_metadata.h"

extern "C" {
#include <libavutil/pixdesc.h>
}

namespace codecvisor::cpu {
namespace {

// The C ABI layer has checked the enum fields (see cpu_backend.cc).
absl::Status ValidateOptions(const cv_open_options& options) {
  if (options.output_width > kMaxOutputSide || options.output_height > kMaxOutputSide) {
    return absl::InvalidArgumentError(absl::StrCat("output size ", options.output_width, "x",
                                                   options.output_height, " is above the limit of ",
                                                   kMaxOutputSide, " per side"));
  }
  return absl::OkStatus();
}

// A caller passing its core count on a large machine gets the most this
// backend starts instead of an error: threads change speed, not frames.
uint32_t DecoderThreads(const cv_open_options& options) {
  return std::min(options.decoder_threads, kMaxDecoderThreads);
}

std::atomic<int64_t> frame_threaded_native_min_pixels{kFrameThreadedNativeMinPixels};

// Whether libavcodec decodes this stream on frame threads: the session
// thread hands packets to them and waits for their pictures.
bool FrameThreaded(const AVCodecContext* ctx) {
  return (ctx->active_thread_type & FF_THREAD_FRAME) != 0 && ctx->thread_count > 1;
}

// What the session outputs: native frames instead of RGB when the host
// converts this stream's native format itself and nothing but a conversion
// would happen here (no rotation or mirror, and a matrix angle of 0: the
// host converts only streams whose metadata says rotation 0, which an angle
// this backend does not apply, 45 degrees say, is not; no resizing), unless
// the frames are small and frame-threaded (kFrameThreadedNativeMinPixels);
// else what was asked for.
cv_output_format OutputFormatFor(const cv_open_options& options, AVPixelFormat native,
                                 double rotation_degrees, Rotation rotation, const AVCodecContext* decoder) {
  const char* name = av_get_pix_fmt_name(native);
  if (options.output_format == CV_OUTPUT_NATIVE || rotation_degrees != 0 || rotation != Rotation::kNone ||
      options.output_width != 0 || options.output_height != 0 || name == nullptr ||
      options.native_formats == nullptr) {
    return options.output_format;
  }
  if (FrameThreaded(decoder) && int64_t{decoder->width} * decoder->height <
                                    frame_threaded_native_min_pixels.load(std::memory_order_relaxed)) {
    return options.output_format;
  }
  for (absl::string_view f : absl::StrSplit(options.native_formats, ',')) {
    if (f == name) return CV_OUTPUT_NATIVE;
  }
  return options.output_format;
}

// The dts of the first I-, P- or S-VOP after the stream's first packet,
// among its first 16 (nullopt if none). Reads from the start and goes back
// there; an error if it cannot (the demuxer would be part way in).
absl::StatusOr<std::optional<int64_t>> NextAnchorDts(Demuxer& demuxer) {
  PacketPtr packet = MakePacket();
  std::optional<int64_t> dts;
  for (int i = 0; i < 16 && !dts.has_value() && demuxer.ReadPacket(packet.get()); ++i) {
    const std::span<const uint8_t> data(packet->data, packet->data != nullptr ? packet->size : 0);
    const int type = FirstVop(data, 0).coding_type;
    if (i > 0 && type >= 0 && type != kBVop && packet->dts != AV_NOPTS_VALUE) dts = packet->dts;
    av_packet_unref(packet.get());
  }
  if (absl::Status s = demuxer.Reopen(); !s.ok()) return s;
  return dts;
}

}  // namespace

void SetFrameThreadedNativeMinPixelsForTest(int64_t pixels) {
  frame_threaded_native_min_pixels.store(pixels, std::memory_order_relaxed);
}

void CpuSession::MakeCursor(const FrameIndex* index, bool at_start) {
  cursor_ = std::make_unique<FrameCursor>(demuxer_.get(), decoder_.get(), index, at_start);
  if (cv_cancel_check* check = cancel_check_; check != nullptr && check->cancelled != nullptr) {
    cursor_->set_stop_check([check] { return check->cancelled(check) != 0; });
  }
}

absl::StatusOr<std::unique_ptr<CpuSession>> CpuSession::Open(int fd,
                                                             const cv_open_options& options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  std::unique_ptr<CpuSession> session(new CpuSession());
  session->cancel_check_ = options.cancel_check;
  auto demuxer = Demuxer::Open(fd, options.stream_index);
  if (!demuxer.ok()) return demuxer.status();
  session->demuxer_ = *std::move(demuxer);
  const AVStream* stream = session->demuxer_->stream();
  const AVCodecParameters* par = stream->codecpar;
  if (stream->time_base.num <= 0 || stream->time_base.den <= 0) {
    return absl::DataLossError(absl::StrCat("stream ", stream->index, " has no valid time base"));
  }
  const std::optional<AVPixelFormat> native = KnownPixelFormat(par->format);
  if (par->width <= 0 || par->height <= 0 || !native) {
    return absl::DataLossError(
        absl::StrCat("stream ", stream->index, " (", CodecName(EnumValue(par->codec_id)),
                     ") has no frame size or pixel format: its header could not be decoded",
                     par->width > 0 && par->height > 0 ? ", or the track holds no frames" : ""));
  }
  auto decoder = VideoDecoder::Open(stream, DecoderThreads(options));
  if (!decoder.ok()) return decoder.status();
  session->decoder_ = *std::move(decoder);

  // Rotated as the CLI autorotates (FrameOutput): sizes are post-rotation.
  const Rotation rotation = RotationFromMatrix(DisplayMatrix(stream));
  const bool swap = SwapsSides(rotation);
  const uint32_t width = static_cast<uint32_t>(swap ? par->height : par->width);
  const uint32_t height = static_cast<uint32_t>(swap ? par->width : par->height);
  auto layout = ComputeLayout(OutputFormatFor(options, *native, DisplayMatrixDegrees(stream), rotation,
                                             session->decoder_->context()),
                              *native,
                              options.output_width != 0 ? options.output_width : width,
                              options.output_height != 0 ? options.output_height : height);
  if (!layout.ok()) return layout.status();
  session->layout_ = *layout;
  session->native_for_rgb_ = layout->format == CV_OUTPUT_NATIVE && options.output_format != CV_OUTPUT_NATIVE;
  if (session->native_for_rgb_ && options.frame_pool != nullptr &&
      DecodesIntoFreshPictures(session->decoder_->context()->codec_id)) {
    // Frames the host converts itself are decoded straight into the
    // runner's frame pool where they fit (picture_pool.h), and copied when
    // they do not: the layout leaves room for the decoder's pictures.
    absl::StatusOr<cv_frame_layout> pooled = PoolLayout(session->decoder_->context(), *native, session->layout_);
    if (pooled.ok()) {
      session->layout_ = *pooled;
      session->pictures_ = std::make_unique<PicturePool>(options.frame_pool, session->layout_, *native);
      session->decoder_->UsePictures(session->pictures_.get());
    }
  }
  session->stream_color_space_ = EnumValue(par->color_space);
  session->stream_color_range_ = EnumValue(par->color_range);
  // Before the scan: a rotation it cannot reproduce is refused at once.
  auto output = FrameOutput::Create(session->layout_, *native, static_cast<uint32_t>(par->width),
                                    static_cast<uint32_t>(par->height), rotation,
                                    options.output_width != 0 || options.output_height != 0);
  if (!output.ok()) return output.status();
  session->output_ = *std::move(output);

  const AVRational fps = HeaderFrameRate(stream);
  // A packed MPEG-4 bitstream's container times are not the times its
  // frames are shown at, which approximate mode's nominal timeline counts
  // on: it is scanned as exact mode scans (FrameIndex), which costs one
  // read of its packets and gives every frame.
  // So is a stream whose container times are decode times.
  bool approximate = options.seek_mode == CV_SEEK_APPROXIMATE && !IsPackedMpeg4(*stream->codecpar);
  if (approximate) {
    absl::StatusOr<bool> decode_times = FirstPtsIsADecodeTime(*session->demuxer_);
    if (!decode_times.ok()) return decode_times.status();
    approximate = !*decode_times;
    stream = session->demuxer_->stream();  // if the seek opened it again: another AVStream
  }
  if (!approximate) {
    const int64_t fallback = fps.num > 0 ? av_rescale_q(1, av_inv_q(fps), stream->time_base) : 1;
    const unsigned threads = DecoderThreads(options);
    auto index = FrameIndex::Scan(*session->demuxer_, fallback, [threads](Demuxer& demuxer, int64_t count) {
      return FramesMadeFromStart(demuxer, count, threads);
    });
    if (!index.ok()) return index.status();
    session->index_ = *std::move(index);
    session->num_frames_ = session->index_->size();
  }
  session->metadata_ =
      DescribeStream(*session->demuxer_, session->index_ ? &*session->index_ : nullptr);
  session->streams_ = DescribeStreams(session->demuxer_->format());
  session->header_begin_seconds_ = session->metadata_.begin_stream_seconds;
  if (!approximate) {
    session->MakeCursor(&*session->index_, /*at_start=*/false);
  } else if (absl::Status s = session->StartNominalTimeline(); !s.ok()) {
    return s;
  }
  return session;
}

absl::Status CpuSession::StartNominalTimeline() {
  const AVStream* stream = demuxer_->stream();
  const AVRational fps = HeaderFrameRate(stream);
  if (fps.num <= 0) {
    return absl::UnimplementedError(absl::StrCat(
        "stream ", stream->index,
        " has no frame rate in its header, which approximate mode needs; open it in exact mode"));
  }
  if (av_q2d(fps) > kMaxHeaderFrameRate) {
    return absl::UnimplementedError(absl::StrFormat(
        "stream %d has a frame rate of %.6g a second in its header, more than any video's (%.6g at most), which "
        "approximate mode would place its frames by; open it in exact mode",
        stream->index, av_q2d(fps), kMaxHeaderFrameRate));
  }
  frame_rate_ = fps;
  begin_pts_ = stream->start_time != AV_NOPTS_VALUE ? stream->start_time : 0;
  frame_duration_ = std::max<int64_t>(1, av_rescale_q(1, av_inv_q(fps), stream->time_base));
  if (stream->nb_frames > 0) {
    num_frames_ = std::min(stream->nb_frames, FrameIndex::kMaxFrames);
  } else if (metadata_.duration_seconds > 0) {
    // As torchcodec estimates it, rounded (StreamMetadata::num_frames()
    // in the public API computes the same from the metadata).
    count_estimated_ = true;
    num_frames_ = std::clamp<int64_t>(ClampToInt64(std::round(metadata_.duration_seconds * av_q2d(fps))), 0,
                                      FrameIndex::kMaxFrames);
  } else {
    return absl::UnimplementedError(absl::StrCat(
        "stream ", stream->index,
        " has neither a frame count nor a duration in its header, which approximate mode "
        "needs; open it in exact mode"));
  }
  if (metadata_.duration_seconds <= 0) {
    // Only a frame count in the header: the nominal timeline gives the end.
    metadata_.duration_seconds = num_frames_ / av_q2d(fps);
    metadata_.end_stream_seconds = metadata_.begin_stream_seconds + metadata_.duration_seconds;
  }
  // MPEG-4 Part 2 shows its first frame when the next I- or P-VOP is
  // sent, with that packet's dts: an AVI unpacked by mpeg4_unpack_bframes
  // skips slots after the first picture, which video_delay frames (below)
  // do not cover. Read before the cursor, which holds the demuxer's state.
  // Only AVI: the containers whose packets have no presentation times.
  std::optional<int64_t> anchor;
  if (stream->codecpar->video_delay > 0 && stream->codecpar->codec_id == AV_CODEC_ID_MPEG4 &&
      std::string_view(demuxer_->format()->iformat->name) == "avi") {
    absl::StatusOr<std::optional<int64_t>> read = NextAnchorDts(*demuxer_);
    if (!read.ok()) return read.status();
    anchor = *read;
    stream = demuxer_->stream();  // reopened: another AVStream
  }
  MakeCursor(/*index=*/nullptr, /*at_start=*/true);
  if (stream->codecpar->video_delay <= 0) return absl::OkStatus();
  // A container without presentation times (AVI) starts the stream at its
  // first decode time; with B-frames the decoder shows the first frame
  // video_delay frames later, where the nominal timeline must start too.
  const AVPacket* first = cursor_->PeekPacket();
  if (first == nullptr || first->pts != AV_NOPTS_VALUE || first->dts == AV_NOPTS_VALUE || first->dts != begin_pts_ ||
      frame_duration_ > std::numeric_limits<int64_t>::max() / 16) {
    return absl::OkStatus();
  }
  int64_t shift = std::min(stream->codecpar->video_delay, 16) * frame_duration_;
  if (anchor.has_value() && *anchor > first->dts && *anchor - first->dts <= 16 * frame_duration_) {
    shift = *anchor - first->dts;
  }
  begin_pts_ = SaturatingAdd(begin_pts_, shift);
  cursor_->set_display_delay(shift);
  // The stream plays from there too (index_at_seconds counts from it).
  const double seconds = Seconds(shift, stream->time_base);
  metadata_.begin_stream_seconds += seconds;
  metadata_.end_stream_seconds += seconds;
  return absl::OkStatus();
}

absl::Status CpuSession::CheckIndex(int64_t index) const {
  if (index >= 0 && index < num_frames_) return absl::OkStatus();
  if (index < 0) {
    return absl::OutOfRangeError(
        absl::StrCat("frame ", index, " is out of range: indices start at 0"));
  }
  if (count_estimated_) {
    return absl::OutOfRangeError(absl::StrFormat(
        "frame %d is past the end: the stream has about %d frames, estimated from its duration "
        "(%.6g s) and frame rate (%.6g/s) because its header has no frame count; exact mode "
        "counts them",
        index, num_frames_, metadata_.duration_seconds, metadata_.average_fps));
  }
  return absl::OutOfRangeError(absl::StrCat("frame ", index, " is past the end: the stream has ",
                                            num_frames_, " frames",
                                            index_ ? "" : " according to its header"));
}

int64_t CpuSession::NominalPts(int64_t index) const {
  return SaturatingAdd(begin_pts_,
                       av_rescale_q(index, av_inv_q(frame_rate_), demuxer_->stream()->time_base));
}

absl::Status CpuSession::GetFrameInfo(int64_t index, cv_frame_info* out) const {
  if (absl::Status s = CheckIndex(index); !s.ok()) return s;
  const AVRational tb = demuxer_->stream()->time_base;
  cv_frame_info info{};
  info.index = index;
  if (index_) {
    const FrameEntry& e = (*index_)[index];
    info.pts = e.pts;
    info.duration_seconds = Seconds(e.duration, tb);
    info.key_frame = e.key ? 1 : 0;
  } else {
    info.pts = NominalPts(index);
    info.duration_seconds = 1 / av_q2d(frame_rate_);
    info.key_frame = 0;  // unknown without reading the stream
  }
  info.pts_seconds = Seconds(info.pts, tb);
  *out = info;
  return absl::OkStatus();
}

int64_t CpuSession::TicksAt(double seconds) const {
  const AVRational tb = demuxer_->stream()->time_base;
  const double ticks = seconds * tb.den / tb.num;
  // Tolerates the rounding of a time computed as pts * time_base.
  return ClampToInt64(std::floor(ticks + std::max(1e-6, std::fabs(ticks) * 1e-12)));
}

absl::StatusOr<int64_t> CpuSession::IndexAtSeconds(double seconds) const {
  if (std::isnan(seconds)) return absl::InvalidArgumentError("time is NaN");
  const double begin = metadata_.begin_stream_seconds;
  const double end = metadata_.end_stream_seconds;
  // Approximate mode: the first frame is shown from the header's start.
  const double earliest = index_ ? begin : std::min(begin, header_begin_seconds_);
  auto out_of_range = [&] {
    return absl::OutOfRangeError(
        absl::StrFormat("time %.9g s is outside the stream, which plays from %.9g s to %.9g s",
                        seconds, earliest, end));
  };
  if (seconds < earliest || seconds >= end) return out_of_range();
  if (seconds < begin) return num_frames_ > 0 ? absl::StatusOr<int64_t>(0) : out_of_range();
  int64_t index;
  if (index_) {
    index = index_->FindAtOrBefore(TicksAt(seconds));
  } else {
    index = ClampToInt64(std::floor((seconds - begin) * av_q2d(frame_rate_) + 1e-9));
    // Nominal times are rounded to the time base (get_frame_info's pts):
    // the frame playing is the last whose rounded time is <= seconds.
    const AVRational tb = demuxer_->stream()->time_base;
    if (index >= 0 && index + 1 < num_frames_ && Seconds(NominalPts(index + 1), tb) <= seconds) ++index;
    if (index > 0 && index < num_frames_ && Seconds(NominalPts(index), tb) > seconds) --index;
    // A time before the end is in a frame: one a hair before it (end -
    // 1e-12) rounds up to the count, and a header's count may be short of
    // duration x rate. It is the last frame's.
    if (index >= num_frames_ && num_frames_ > 0) index = num_frames_ - 1;
  }
  if (index < 0 || index >= num_frames_) return out_of_range();
  return index;
}

absl::Status CpuSession::DecodeFrame(int64_t index, cv_frame_buffer* buffer, cv_frame_info* info) {
  if (absl::Status s = CheckBuffer(*buffer); !s.ok()) return s;
  // Reading on from a frame found by time follows the stream, not the
  // header's count: the frames' nominal labels can run out before the
  // frames do (a variable-rate stream with bursts faster than its average).
  const bool reads_on = std::exchange(reading_on_from_time_, false) && index == cursor_->last_index() + 1;
  if (!reads_on) {
    if (absl::Status s = CheckIndex(index); !s.ok()) return s;
  }
  // The header's count is exact: its last index is the stream's last frame,
  // wherever the nominal timeline puts it.
  const bool last_counted = !count_estimated_ && index == num_frames_ - 1;
  absl::StatusOr<const AVFrame*> frame =
      index_ ? cursor_->DecodeExact(index)
             : cursor_->DecodeApproximate(index, NominalPts(index), frame_duration_, last_counted,
                                          /*counted=*/index < num_frames_);
  if (!frame.ok()) return frame.status();
  if (absl::Status s = Deliver(**frame, index, buffer, info); !s.ok()) return s;
  reading_on_from_time_ = reads_on;
  return absl::OkStatus();
}

absl::Status CpuSession::DecodeFrameAtSeconds(double seconds, cv_frame_buffer* buffer, cv_frame_info* info) {
  reading_on_from_time_ = false;
  absl::StatusOr<int64_t> index = IndexAtSeconds(seconds);
  if (!index.ok()) return index.status();
  // Exact mode: the scan has placed every frame on the timeline.
  if (index_) return DecodeFrame(*index, buffer, info);
  if (absl::Status s = CheckBuffer(*buffer); !s.ok()) return s;
  // (A seek may open the container again, and replace its stream.)
  const AVRational time_base = demuxer_->stream()->time_base;
  const int64_t last = std::max<int64_t>(num_frames_ - 1, 0);
  auto nominal_index = [&](int64_t pts) {
    const int64_t i = av_rescale_q_rnd(SaturatingSub(pts, begin_pts_), time_base, av_inv_q(frame_rate_),
                                       static_cast<AVRounding>(AV_ROUND_NEAR_INF | AV_ROUND_PASS_MINMAX));
    return std::clamp<int64_t>(i, 0, last);
  };
  absl::StatusOr<const AVFrame*> frame = cursor_->DecodePlayedAt(TicksAt(seconds), frame_duration_, nominal_index);
  if (!frame.ok()) return frame.status();
  if (absl::Status s = Deliver(**frame, cursor_->last_index(), buffer, info); !s.ok()) return s;
  reading_on_from_time_ = true;
  return absl::OkStatus();
}

}  // namespace codecvisor::cpu
