// File: backends/cpu/frame_converter.cc

#include "backends/cpu/frame_converter.h"

#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "backends/cpu/av_enums.h"
#include "backends/cpu/av_util.h"

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace codecvisor::cpu {
namespace {

// vf_scale's option defaults (libavfilter/vf_scale.c, FFmpeg 5.1).
constexpr int kDefaultChromaPosition = -513;
// vf_scale's override for progressive yuv420p: MPEG-2 chroma siting.
constexpr int kYuv420pVerticalChromaPosition = 128;

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
  if (width == 0 || height == 0 || width > kMaxOutputSide || height > kMaxOutputSide ||
      uint64_t{width} * height > kMaxOutputPixels) {
    return absl::InvalidArgumentError(absl::StrCat("output size ", width, "x", height,
                                                   " is outside 1x1..", kMaxOutputSide, "x",
                                                   kMaxOutputSide));
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
  uint8_t* r = dst + layout.plane_offset[0];
  uint8_t* g = dst + layout.plane_offset[1];
  uint8_t* b = dst + layout.plane_offset[2];
  for (uint32_t y = 0; y < layout.height; ++y) {
    const uint8_t* row = rgb + ptrdiff_t{stride} * y;
    const size_t first = size_t{layout.width} * y;
    for (uint32_t x = 0; x < layout.width; ++x) {
      r[first + x] = row[3 * x];
      g[first + x] = row[3 * x + 1];
      b[first + x] = row[3 * x + 2];
    }
  }
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
  const AVPixelFormat source = *known;
  SwsContext* s = sws_alloc_context();
  if (s == nullptr) return absl::ResourceExhaustedError("out of memory for the scaler");
  // Option for option what vf_scale's config_props sets (see the header).
  av_opt_set_int(s, "srcw", frame->width, 0);
  av_opt_set_int(s, "srch", frame->height, 0);
  av_opt_set_int(s, "src_format", source, 0);
  av_opt_set_int(s, "dstw", layout_.width, 0);
  av_opt_set_int(s, "dsth", layout_.height, 0);
  av_opt_set_int(s, "dst_format", scaler_output_, 0);
  // The CLI's scalers get no flags (its debug log: "flags:''", "flags:0x0");
  // sws_init_context then picks SWS_BICUBIC. Passing 0 keeps whatever
  // default this libswscale has, as the CLI does.
  av_opt_set_int(s, "sws_flags", 0, 0);
  av_opt_set_double(s, "param0", SWS_PARAM_DEFAULT, 0);
  av_opt_set_double(s, "param1", SWS_PARAM_DEFAULT, 0);
  // One thread: sessions run in parallel already. Slicing does not change
  // the result (the CLI's threaded filter output is identical).
  av_opt_set_int(s, "threads", 1, 0);
  av_opt_set_int(s, "src_h_chr_pos", kDefaultChromaPosition, 0);
  av_opt_set_int(
      s, "src_v_chr_pos",
      source == AV_PIX_FMT_YUV420P ? kYuv420pVerticalChromaPosition : kDefaultChromaPosition, 0);
  av_opt_set_int(s, "dst_h_chr_pos", kDefaultChromaPosition, 0);
  av_opt_set_int(s, "dst_v_chr_pos",
                 scaler_output_ == AV_PIX_FMT_YUV420P ? kYuv420pVerticalChromaPosition
                                                      : kDefaultChromaPosition,
                 0);
  int ret = sws_init_context(s, nullptr, nullptr);
  if (ret < 0) {
    sws_freeContext(s);
    return absl::DataLossError(absl::StrCat("cannot convert frames of ", frame->width, "x",
                                            frame->height, " ", av_get_pix_fmt_name(source), ": ",
                                            AvErrorText(ret)));
  }
  scaler_ = s;
  scaler_width_ = frame->width;
  scaler_height_ = frame->height;
  scaler_format_ = frame->format;
  return absl::OkStatus();
}

void FrameConverter::ApplyColorDetails(const AVFrame* frame) {
  int* inv_table = nullptr;
  int* table = nullptr;
  int in_full = 0, out_full = 0, brightness = 0, contrast = 0, saturation = 0;
  sws_getColorspaceDetails(scaler_, &inv_table, &in_full, &table, &out_full, &brightness, &contrast,
                           &saturation);
  // vf_scale's parse_yuv_type("auto", frame->colorspace).
  // Both are read as integers: decoders copy them from the bitstream.
  int colorspace = EnumValue(frame->colorspace);
  if (colorspace < 1 || colorspace > 10 || colorspace == 8) colorspace = AVCOL_SPC_BT470BG;
  const int* coefficients = sws_getCoefficients(colorspace);
  const int range = EnumValue(frame->color_range);
  if (range != AVCOL_RANGE_UNSPECIFIED) in_full = range == AVCOL_RANGE_JPEG;
  sws_setColorspaceDetails(scaler_, coefficients, in_full, coefficients, out_full, brightness,
                           contrast, saturation);
}

absl::Status FrameConverter::Convert(const AVFrame* frame, uint8_t* dst) {
  if (frame->width <= 0 || frame->height <= 0 || frame->data[0] == nullptr) {
    return absl::DataLossError("the decoder returned an empty frame");
  }
  if (layout_.format == CV_OUTPUT_NATIVE && frame->format == native_ &&
      frame->width == static_cast<int>(layout_.width) &&
      frame->height == static_cast<int>(layout_.height)) {
    for (uint32_t p = 0; p < layout_.num_planes; ++p) {
      av_image_copy_plane(dst + layout_.plane_offset[p], static_cast<int>(layout_.plane_stride[p]),
                          frame->data[p], frame->linesize[p],
                          static_cast<int>(layout_.plane_stride[p]),
                          static_cast<int>(layout_.plane_rows[p]));
    }
    return absl::OkStatus();
  }
  if (absl::Status s = PrepareScaler(frame); !s.ok()) return s;
  ApplyColorDetails(frame);

  uint8_t* planes[4] = {};
  int strides[4] = {};
  if (layout_.format == CV_OUTPUT_RGB24_PLANAR) {
    // swscale may write past the last pixel (CV_BUFFER_PADDING, SDK header).
    scratch_.resize(uint64_t{layout_.width} * layout_.height * 3 + CV_BUFFER_PADDING);
    planes[0] = scratch_.data();
    strides[0] = static_cast<int>(layout_.width * 3);
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
  if (layout_.format == CV_OUTPUT_RGB24_PLANAR) WriteRgb24(planes[0], strides[0], layout_, dst);
  return absl::OkStatus();
}

}  // namespace codecvisor::cpu
