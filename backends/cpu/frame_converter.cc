// File: backends/cpu/frame_converter.cc

#include "backends/cpu/frame_converter.h"

#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "backends/cpu/av_enums.h"
#include "backends/cpu/av_util.h"
#include "media/cli_scaler.h"

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace codecvisor::cpu {
namespace {

void SetName(char (&out)[CV_NAME_BYTES], const char* name) {
  std::snprintf(out, sizeof(out), "%s", name);
}

bool CanOutputNative(const AVPixFmtDescriptor* desc) {
  return (desc->flags &
          (AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_BITSTREAM | AV_PIX_FMT_FLAG_PAL)) == 0;
}

}  // namespace

absl::StatusOr<cv_frame_layout> ComputeLayout(cv_output_format format, AVPixelFormat native,
                                              uint32_t width, uint32_t height) {
  // The size is the stream's: none is a broken header, too large one this
  // backend does not decode (as a codec it has no decoder for).
  if (width == 0 || height == 0) {
    return absl::DataLossError(absl::StrCat("the stream's frames are ", width, "x", height));
  }
  if (width > kMaxOutputSide || height > kMaxOutputSide || uint64_t{width} * height > kMaxOutputPixels) {
    return absl::UnimplementedError(absl::StrCat("frames of ", width, "x", height,
                                                 " are larger than this backend decodes (", kMaxOutputSide,
                                                 " per side, ", kMaxOutputPixels, " pixels)"));
  }
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(native);
  if (desc == nullptr) {
    return absl::UnimplementedError("the decoder did not report a pixel format");
  }
  if (!sws_isSupportedInput(native)) {
    return absl::UnimplementedError(
        absl::StrCat("pixel format ", desc->name, " cannot be converted"));
  }
  cv_frame_layout layout{};
  layout.width = width;
  layout.height = height;
  layout.format = format;
  uint64_t plane_bytes[CV_MAX_PLANES] = {};
  switch (format) {
    case CV_OUTPUT_RGB24:
      SetName(layout.pixel_format, "rgb24");
      layout.num_planes = 1;
      layout.plane_stride[0] = width * 3;
      layout.plane_rows[0] = height;
      break;
    case CV_OUTPUT_RGB24_PLANAR:
      SetName(layout.pixel_format, "rgbp");
      layout.num_planes = 3;
      for (int p = 0; p < 3; ++p) {
        layout.plane_stride[p] = width;
        layout.plane_rows[p] = height;
      }
      break;
    case CV_OUTPUT_NATIVE: {
      if (!sws_isSupportedOutput(native) || !CanOutputNative(desc)) {
        return absl::UnimplementedError(
            absl::StrCat("native output of pixel format ", desc->name, " is not supported"));
      }
      SetName(layout.pixel_format, desc->name);
      int linesizes[4] = {};
      if (av_image_fill_linesizes(linesizes, native, static_cast<int>(width)) < 0) {
        return absl::UnimplementedError(absl::StrCat("cannot lay out pixel format ", desc->name));
      }
      layout.num_planes = static_cast<uint32_t>(av_pix_fmt_count_planes(native));
      for (uint32_t p = 0; p < layout.num_planes && p < CV_MAX_PLANES; ++p) {
        layout.plane_stride[p] = static_cast<uint32_t>(linesizes[p]);
        // As av_image_fill_plane_sizes: planes 1 and 2 carry chroma.
        layout.plane_rows[p] =
            (p == 1 || p == 2) ? (height + (1u << desc->log2_chroma_h) - 1) >> desc->log2_chroma_h
                               : height;
      }
      break;
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat("output format ", static_cast<int>(format),
                                                     " is not one of cv_output_format"));
  }
  uint64_t offset = 0;
  for (uint32_t p = 0; p < layout.num_planes; ++p) {
    plane_bytes[p] = uint64_t{layout.plane_stride[p]} * layout.plane_rows[p];
    layout.plane_offset[p] = offset;
    offset += plane_bytes[p];
  }
  layout.size = offset;
  return layout;
}

void WriteRgb24(const uint8_t* rgb, int stride, const cv_frame_layout& layout, uint8_t* dst) {
  const int row_bytes = static_cast<int>(layout.width * 3);
  if (layout.format != CV_OUTPUT_RGB24_PLANAR) {
    av_image_copy_plane(dst + layout.plane_offset[0], static_cast<int>(layout.plane_stride[0]), rgb,
                        stride, row_bytes, static_cast<int>(layout.height));
    return;
  }
  media::SplitRgb24(rgb, stride, layout.width, layout.height, dst + layout.plane_offset[0],
                    dst + layout.plane_offset[1], dst + layout.plane_offset[2]);
}

FrameConverter::FrameConverter(const cv_frame_layout& layout, AVPixelFormat native)
    : layout_(layout), native_(native) {
  scaler_output_ = layout.format == CV_OUTPUT_NATIVE ? native : AV_PIX_FMT_RGB24;
}

FrameConverter::~FrameConverter() { sws_freeContext(scaler_); }

absl::Status FrameConverter::PrepareScaler(const AVFrame* frame) {
  if (scaler_ != nullptr && frame->width == scaler_width_ && frame->height == scaler_height_ &&
      frame->format == scaler_format_) {
    return absl::OkStatus();
  }
  sws_freeContext(scaler_);
  scaler_ = nullptr;
  const std::optional<AVPixelFormat> known = KnownPixelFormat(frame->format);
  if (!known || !sws_isSupportedInput(*known)) {
    return absl::DataLossError(absl::StrCat("a decoded frame has pixel format ",
                                            PixelFormatName(frame->format),
                                            ", which cannot be converted"));
  }
  absl::StatusOr<SwsContext*> s = media::NewCliScaler(
      frame->width, frame->height, *known, static_cast<int>(layout_.width),
      static_cast<int>(layout_.height), scaler_output_);
  if (!s.ok()) return s.status();
  scaler_ = *s;
  scaler_width_ = frame->width;
  scaler_height_ = frame->height;
  scaler_format_ = frame->format;
  scaler_default_full_ = media::InputFullRange(scaler_);
  return absl::OkStatus();
}

void FrameConverter::ApplyColorDetails(const AVFrame* frame) {
  media::SetCliColorDetails(scaler_, EnumValue(frame->colorspace), EnumValue(frame->color_range), scaler_default_full_);
}

absl::Status FrameConverter::Convert(const AVFrame* frame, uint8_t* dst) {
  if (frame->width <= 0 || frame->height <= 0 || frame->data[0] == nullptr) {
    return absl::DataLossError("the decoder returned an empty frame");
  }
  if (layout_.format == CV_OUTPUT_NATIVE && frame->format == native_ &&
      frame->width == static_cast<int>(layout_.width) &&
      frame->height == static_cast<int>(layout_.height)) {
    // Each row's pixels: a layout for pool pictures (picture_pool.h) has
    // strides wider than the rows.
    int row_bytes[4] = {};
    if (av_image_fill_linesizes(row_bytes, native_, static_cast<int>(layout_.width)) < 0) {
      return absl::InternalError("cannot lay out the native frame's rows");
    }
    for (uint32_t p = 0; p < layout_.num_planes; ++p) {
      av_image_copy_plane(dst + layout_.plane_offset[p], static_cast<int>(layout_.plane_stride[p]),
                          frame->data[p], frame->linesize[p], row_bytes[p],
                          static_cast<int>(layout_.plane_rows[p]));
    }
    return absl::OkStatus();
  }
  if (absl::Status s = PrepareScaler(frame); !s.ok()) return s;
  ApplyColorDetails(frame);

  uint8_t* planes[4] = {};
  int strides[4] = {};
  const int width = static_cast<int>(layout_.width);
  // Planar RGB, and rows swscale would leave short (media/cli_scaler.h),
  // go through interleaved rows with room for whole blocks.
  const bool via_scratch = layout_.format == CV_OUTPUT_RGB24_PLANAR ||
                           (layout_.format == CV_OUTPUT_RGB24 && !media::TightRgb24Rows(width));
  if (via_scratch) {
    // swscale may write past the last pixel (CV_BUFFER_PADDING, SDK header).
    scratch_.resize(uint64_t(media::Rgb24Stride(width)) * layout_.height + CV_BUFFER_PADDING);
    planes[0] = scratch_.data();
    strides[0] = media::Rgb24Stride(width);
  } else {
    for (uint32_t p = 0; p < layout_.num_planes; ++p) {
      planes[p] = dst + layout_.plane_offset[p];
      strides[p] = static_cast<int>(layout_.plane_stride[p]);
    }
  }
  int rows = sws_scale(scaler_, frame->data, frame->linesize, 0, frame->height, planes, strides);
  if (rows < 0) {
    return absl::DataLossError(absl::StrCat("swscale failed: ", AvErrorText(rows)));
  }
  if (via_scratch) WriteRgb24(planes[0], strides[0], layout_, dst);
  return absl::OkStatus();
}

}  // namespace codecvisor::cpu
