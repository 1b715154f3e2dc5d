// File: backends/cpu/frame_output.cc

#include "backends/cpu/frame_output.h"

#include <utility>

namespace codecvisor::cpu {

absl::StatusOr<std::unique_ptr<FrameOutput>> FrameOutput::Create(const cv_frame_layout& layout,
                                                                 AVPixelFormat native,
                                                                 uint32_t coded_width,
                                                                 uint32_t coded_height,
                                                                 Rotation rotation, bool resized) {
  std::unique_ptr<FrameOutput> out(new FrameOutput(rotation));
  out->layout_ = layout;
  // As the CLI's filter graph: the decoder's pixels are rotated, then
  // converted. Only a format the rotation cannot move sample by sample
  // (4:2:2 by a quarter turn) is converted to RGB24 first and that rotated,
  // as the CLI converts before its transpose there.
  const bool convert_first = rotation != Rotation::kNone && layout.format != CV_OUTPUT_NATIVE && !resized &&
                             !CheckRotatable(rotation, native).ok();
  if (absl::Status s = CheckRotatable(rotation, convert_first ? AV_PIX_FMT_RGB24 : native);
      !s.ok()) {
    return s;
  }
  if (!convert_first) {
    out->converter_ = std::make_unique<FrameConverter>(layout, native);
    return out;
  }
  auto rgb_layout = ComputeLayout(CV_OUTPUT_RGB24, native, coded_width, coded_height);
  if (!rgb_layout.ok()) return rgb_layout.status();
  out->rgb_layout_ = *rgb_layout;
  out->rgb_converter_ = std::make_unique<FrameConverter>(out->rgb_layout_, native);
  // swscale may write past the last pixel (CV_BUFFER_PADDING, SDK header).
  out->rgb_.resize(out->rgb_layout_.size + CV_BUFFER_PADDING);
  out->rgb_view_ = MakeFrame();
  return out;
}

absl::Status FrameOutput::Write(const AVFrame* frame, uint8_t* dst) {
  if (converter_ != nullptr) {
    absl::StatusOr<const AVFrame*> rotated = rotator_.Apply(frame);
    if (!rotated.ok()) return rotated.status();
    return converter_->Convert(*rotated, dst);
  }
  if (absl::Status s = rgb_converter_->Convert(frame, rgb_.data()); !s.ok()) return s;
  AVFrame* view = rgb_view_.get();
  view->format = AV_PIX_FMT_RGB24;
  view->width = static_cast<int>(rgb_layout_.width);
  view->height = static_cast<int>(rgb_layout_.height);
  view->data[0] = rgb_.data();
  view->linesize[0] = static_cast<int>(rgb_layout_.plane_stride[0]);
  if (layout_.format == CV_OUTPUT_RGB24) {
    // Interleaved output: rotated straight into the caller's rows.
    uint8_t* const data[4] = {dst + layout_.plane_offset[0], nullptr, nullptr, nullptr};
    const int linesize[4] = {static_cast<int>(layout_.plane_stride[0]), 0, 0, 0};
    return rotator_.RotateInto(view, data, linesize);
  }
  absl::StatusOr<const AVFrame*> rotated = rotator_.Apply(view);
  if (!rotated.ok()) return rotated.status();
  WriteRgb24((*rotated)->data[0], (*rotated)->linesize[0], layout_, dst);
  return absl::OkStatus();
}

}  // namespace codecvisor::cpu
