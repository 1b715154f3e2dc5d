// File: backends/cpu/session_delivery.cc
//
// CpuSession's delivery: a decoded frame into the caller's buffer, lent in
// place from the frame pool where the decoder wrote it there, else written
// (rotated and converted) into a buffer given or acquired late; and its
// frame info.

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "backends/cpu/av_enums.h"
#include "backends/cpu/av_util.h"
#include "backends/cpu/session.h"

namespace codecvisor::cpu {

absl::Status CpuSession::CheckNativeHolds(const AVFrame& frame, int64_t index) const {
  if (!native_for_rgb_) return absl::OkStatus();
  const int space = EnumValue(frame.colorspace), range = EnumValue(frame.color_range);
  if (absl::string_view(PixelFormatName(frame.format)) == layout_.pixel_format &&
      frame.width == static_cast<int>(layout_.width) && frame.height == static_cast<int>(layout_.height) &&
      space == stream_color_space_ && range == stream_color_range_) {
    return absl::OkStatus();
  }
  return absl::AbortedError(absl::StrCat("frame ", index, " is ", PixelFormatName(frame.format), " ", frame.width, "x",
                                         frame.height, ", colour space ", ColorSpaceName(space), ", range ",
                                         ColorRangeName(range), ", which the session's native ", layout_.pixel_format,
                                         " frames of the stream's colours cannot hold; the host asks again for RGB"));
}

absl::Status CpuSession::CheckCapacity(const cv_frame_buffer& buffer) const {
  if (buffer.capacity >= layout_.size) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("the frame buffer holds ", buffer.capacity, " bytes; the layout needs ", layout_.size));
}

bool CpuSession::LendInPlace(const AVFrame& frame, cv_frame_buffer* buffer) const {
  if (pictures_ == nullptr || buffer->data != nullptr) return false;
  uint8_t* slot = pictures_->SlotOf(frame);
  if (slot == nullptr) return false;
  // Refused when the host still holds this picture from an earlier frame
  // (a picture shown twice): then it is copied.
  cv_error error{};
  cv_frame_pool* pool = pictures_->pool();
  return pool->lend(pool, buffer, slot, &error) == CV_OK && buffer->data == slot;
}

absl::Status CpuSession::WriteFrame(const AVFrame& frame, cv_frame_buffer* buffer) {
  if (buffer->data == nullptr) {
    cv_error error{};
    if (cv_status st = buffer->acquire(buffer, &error); st != CV_OK) {
      return absl::Status(
          st == CV_ERROR_RESOURCE_EXHAUSTED ? absl::StatusCode::kResourceExhausted : absl::StatusCode::kInternal,
          error.message);
    }
    if (buffer->data == nullptr) return absl::InternalError("the runner's acquire() lent no frame buffer");
    if (absl::Status s = CheckCapacity(*buffer); !s.ok()) return s;
  }
  return output_->Write(&frame, buffer->data);
}

absl::Status CpuSession::CheckBuffer(const cv_frame_buffer& buffer) const {
  // A late buffer (data NULL) is acquired once the frame is decoded, just
  // before sws_scale writes it.
  if (buffer.data == nullptr) {
    if (buffer.acquire == nullptr) {
      return absl::InvalidArgumentError("the frame buffer has neither data nor an acquire function");
    }
    return absl::OkStatus();
  }
  return CheckCapacity(buffer);
}

absl::Status CpuSession::Deliver(const AVFrame& frame, int64_t index, cv_frame_buffer* buffer, cv_frame_info* info) {
  if (absl::Status s = CheckNativeHolds(frame, index); !s.ok()) return s;
  if (LendInPlace(frame, buffer)) {
    ++lent_in_place_;
  } else if (absl::Status s = WriteFrame(frame, buffer); !s.ok()) {
    return s;
  }
  if (info == nullptr) return absl::OkStatus();
  if (index_) return GetFrameInfo(index, info);
  const AVRational tb = demuxer_->stream()->time_base;
  info->index = index;
  info->pts = FrameTimestamp(&frame) != AV_NOPTS_VALUE ? FrameTimestamp(&frame) : NominalPts(index);
  info->pts_seconds = Seconds(info->pts, tb);
  info->duration_seconds = frame.pkt_duration > 0 ? Seconds(frame.pkt_duration, tb) : 1 / av_q2d(frame_rate_);
  info->key_frame = frame.key_frame ? 1 : 0;
  return absl::OkStatus();
}

}  // namespace codecvisor::cpu
