// File: examples/vendor_backend/picture_converter.cc

#include "picture_converter.h"

#include <cstring>

extern "C" {
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace dav1d_plugin {
namespace {

// vf_scale's "let swscale decide" chroma position, and the vertical one it
// substitutes for progressive yuv420p (MPEG-2 siting).
constexpr int kChromaPositionAuto = -513;
constexpr int kYuv420pVerticalChroma = 128;

void CopyName(char (&out)[CV_NAME_BYTES], const char* name) { std::snprintf(out, sizeof(out), "%s", name); }

int VerticalChroma(AVPixelFormat f) { return f == AV_PIX_FMT_YUV420P ? kYuv420pVerticalChroma : kChromaPositionAuto; }

// The coefficient table vf_scale's "auto" colour matrix picks for an AV1
// matrix_coefficients value (the H.273 numbers, as AVColorSpace uses).
const int* MatrixCoefficients(int matrix) {
  if (matrix < 1 || matrix > 10 || matrix == 8) matrix = SWS_CS_ITU601;
  return sws_getCoefficients(matrix);
}

}  // namespace

AVPixelFormat PixelFormatOf(const Dav1dSequenceHeader& seq) {
  static constexpr AVPixelFormat kByLayout[4][3] = {
      {AV_PIX_FMT_GRAY8, AV_PIX_FMT_GRAY10LE, AV_PIX_FMT_GRAY12LE},
      {AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV420P10LE, AV_PIX_FMT_YUV420P12LE},
      {AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUV422P10LE, AV_PIX_FMT_YUV422P12LE},
      {AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUV444P10LE, AV_PIX_FMT_YUV444P12LE},
  };
  static constexpr AVPixelFormat kRgb[3] = {AV_PIX_FMT_GBRP, AV_PIX_FMT_GBRP10LE, AV_PIX_FMT_GBRP12LE};
  const int layout = static_cast<int>(seq.layout);
  const int depth = seq.hbd;
  if (layout < 0 || layout > 3 || depth < 0 || depth > 2) return AV_PIX_FMT_NONE;
  // libavcodec's wrapper calls 4:4:4 identity-matrix BT.709 sRGB "gbrp".
  if (seq.layout == DAV1D_PIXEL_LAYOUT_I444 && seq.mtrx == DAV1D_MC_IDENTITY && seq.pri == DAV1D_COLOR_PRI_BT709 &&
      seq.trc == DAV1D_TRC_SRGB) {
    return kRgb[depth];
  }
  return kByLayout[layout][depth];
}

Status PictureConverter::Create(cv_output_format format, AVPixelFormat native, uint32_t width, uint32_t height,
                                std::unique_ptr<PictureConverter>* out) {
  if (width == 0 || height == 0) {
    return Status(CV_ERROR_CORRUPT_DATA, Sprintf("the stream's frames are %ux%u", width, height));
  }
  if (width > kMaxSide || height > kMaxSide || uint64_t{width} * height > kMaxPixels) {
    return Status(CV_ERROR_UNSUPPORTED,
                  Sprintf("frames of %ux%u are larger than this backend decodes (%u per side, %llu pixels)", width,
                          height, kMaxSide, static_cast<unsigned long long>(kMaxPixels)));
  }
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(native);
  if (desc == nullptr) {
    return Status(CV_ERROR_UNSUPPORTED, "the stream's pixel format is unknown");
  }
  std::unique_ptr<PictureConverter> c(new PictureConverter());
  c->native_ = native;
  cv_frame_layout& l = c->layout_;
  l.width = width;
  l.height = height;
  l.format = format;
  if (format == CV_OUTPUT_RGB24) {
    c->target_ = AV_PIX_FMT_RGB24;
    CopyName(l.pixel_format, "rgb24");
    l.num_planes = 1;
    l.plane_stride[0] = 3 * width;
    l.plane_rows[0] = height;
  } else if (format == CV_OUTPUT_RGB24_PLANAR) {
    c->target_ = AV_PIX_FMT_RGB24;  // then split, see Convert
    CopyName(l.pixel_format, "rgbp");
    l.num_planes = 3;
    for (int p = 0; p < 3; ++p) {
      l.plane_stride[p] = width;
      l.plane_rows[p] = height;
    }
  } else if (format == CV_OUTPUT_NATIVE) {
    c->target_ = native;
    CopyName(l.pixel_format, desc->name);
    l.num_planes = static_cast<uint32_t>(av_pix_fmt_count_planes(native));
    const uint32_t sample_bytes = desc->comp[0].depth > 8 ? 2 : 1;
    for (uint32_t p = 0; p < l.num_planes; ++p) {
      // Planes 1 and 2 of the yuv formats are subsampled; gbrp's are not.
      const bool chroma = p > 0 && (desc->flags & AV_PIX_FMT_FLAG_RGB) == 0;
      const uint32_t w = chroma ? -((-static_cast<int64_t>(width)) >> desc->log2_chroma_w) : width;
      const uint32_t h = chroma ? -((-static_cast<int64_t>(height)) >> desc->log2_chroma_h) : height;
      l.plane_stride[p] = w * sample_bytes;
      l.plane_rows[p] = h;
    }
  } else {
    return Status(
        CV_ERROR_INVALID_ARGUMENT,
        Sprintf("output format %d is not rgb24 (0), rgb24 planar (1) or native (2)", static_cast<int>(format)));
  }
  uint64_t offset = 0;
  for (uint32_t p = 0; p < l.num_planes; ++p) {
    l.plane_offset[p] = offset;
    offset += uint64_t{l.plane_stride[p]} * l.plane_rows[p];
  }
  l.size = offset;
  *out = std::move(c);
  return Status();
}

PictureConverter::~PictureConverter() { sws_freeContext(sws_); }

Status PictureConverter::EnsureScaler(AVPixelFormat source, int width, int height) {
  if (sws_ != nullptr && source == sws_source_ && width == sws_width_ && height == sws_height_) {
    return Status();
  }
  sws_freeContext(sws_);
  sws_ = sws_alloc_context();
  if (sws_ == nullptr) return Status(CV_ERROR_RESOURCE_EXHAUSTED, "out of memory for swscale");
  sws_source_ = AV_PIX_FMT_NONE;
  // What the CLI's auto-inserted vf_scale sets, option by option.
  const struct {
    const char* name;
    int64_t value;
  } options[] = {
      {"srcw", width},
      {"srch", height},
      {"src_format", source},
      {"dstw", layout_.width},
      {"dsth", layout_.height},
      {"dst_format", target_},
      {"sws_flags", 0},  // the CLI passes none; swscale then uses bicubic
      {"threads", 1},    // sessions already run in parallel; slices do not change pixels
      {"src_h_chr_pos", kChromaPositionAuto},
      {"src_v_chr_pos", VerticalChroma(source)},
      {"dst_h_chr_pos", kChromaPositionAuto},
      {"dst_v_chr_pos", VerticalChroma(target_)},
  };
  for (const auto& o : options) av_opt_set_int(sws_, o.name, o.value, 0);
  av_opt_set_double(sws_, "param0", SWS_PARAM_DEFAULT, 0);
  av_opt_set_double(sws_, "param1", SWS_PARAM_DEFAULT, 0);
  if (int ret = sws_init_context(sws_, nullptr, nullptr); ret < 0) {
    sws_freeContext(sws_);
    sws_ = nullptr;
    return Status(CV_ERROR_CORRUPT_DATA, Sprintf("swscale cannot convert %dx%d %s pictures to %ux%u %s (error %d)",
                                                 width, height, av_get_pix_fmt_name(source), layout_.width,
                                                 layout_.height, av_get_pix_fmt_name(target_), ret));
  }
  sws_source_ = source;
  sws_width_ = width;
  sws_height_ = height;
  return Status();
}

void PictureConverter::CopyNative(const Dav1dPicture& picture, uint8_t* dst) const {
  for (uint32_t p = 0; p < layout_.num_planes; ++p) {
    const auto* src = static_cast<const uint8_t*>(picture.data[p]);
    const ptrdiff_t src_stride = picture.stride[p == 0 ? 0 : 1];
    uint8_t* row = dst + layout_.plane_offset[p];
    for (uint32_t y = 0; y < layout_.plane_rows[p]; ++y) {
      std::memcpy(row, src + y * src_stride, layout_.plane_stride[p]);
      row += layout_.plane_stride[p];
    }
  }
}

Status PictureConverter::Convert(const Dav1dPicture& picture, uint8_t* dst) {
  if (picture.seq_hdr == nullptr || picture.data[0] == nullptr || picture.p.w <= 0 || picture.p.h <= 0) {
    return Status(CV_ERROR_CORRUPT_DATA, "libdav1d returned an empty picture");
  }
  const Dav1dSequenceHeader& seq = *picture.seq_hdr;
  const AVPixelFormat source = PixelFormatOf(seq);
  if (source == AV_PIX_FMT_NONE) {
    return Status(CV_ERROR_UNSUPPORTED, Sprintf("a picture has an unknown layout (%d, %d bits)",
                                                static_cast<int>(seq.layout), picture.p.bpc));
  }
  if (layout_.format == CV_OUTPUT_NATIVE && source == native_ && static_cast<uint32_t>(picture.p.w) == layout_.width &&
      static_cast<uint32_t>(picture.p.h) == layout_.height) {
    CopyNative(picture, dst);
    return Status();
  }
  if (Status s = EnsureScaler(source, picture.p.w, picture.p.h); !s.ok()) return s;

  // vf_scale's per-frame colour setup: the frame's matrix both ways, and
  // its range (libavcodec marks every AV1 frame full or limited).
  int *inv_table = nullptr, *table = nullptr;
  int src_full = 0, dst_full = 0, brightness = 0, contrast = 0, saturation = 0;
  sws_getColorspaceDetails(sws_, &inv_table, &src_full, &table, &dst_full, &brightness, &contrast, &saturation);
  const int* matrix = MatrixCoefficients(static_cast<int>(seq.mtrx));
  sws_setColorspaceDetails(sws_, matrix, seq.color_range ? 1 : 0, matrix, dst_full, brightness, contrast, saturation);

  const uint8_t* src_planes[4] = {};
  int src_strides[4] = {};
  // For gbrp, libdav1d's Y, U, V planes are already gbrp's G, B, R.
  const int planes = seq.layout == DAV1D_PIXEL_LAYOUT_I400 ? 1 : 3;
  for (int p = 0; p < planes; ++p) {
    src_planes[p] = static_cast<const uint8_t*>(picture.data[p]);
    src_strides[p] = static_cast<int>(picture.stride[p == 0 ? 0 : 1]);
  }
  uint8_t* dst_planes[4] = {};
  int dst_strides[4] = {};
  if (layout_.format == CV_OUTPUT_RGB24_PLANAR) {
    // swscale's SIMD writers may write up to CV_BUFFER_PADDING bytes past
    // the last pixel; the runner's buffers have that slack, this one too.
    interleaved_.resize(size_t{layout_.width} * layout_.height * 3 + CV_BUFFER_PADDING);
    dst_planes[0] = interleaved_.data();
    dst_strides[0] = static_cast<int>(layout_.width * 3);
  } else {
    for (uint32_t p = 0; p < layout_.num_planes; ++p) {
      dst_planes[p] = dst + layout_.plane_offset[p];
      dst_strides[p] = static_cast<int>(layout_.plane_stride[p]);
    }
  }
  const int rows = sws_scale(sws_, src_planes, src_strides, 0, picture.p.h, dst_planes, dst_strides);
  if (rows <= 0) {
    return Status(CV_ERROR_CORRUPT_DATA,
                  Sprintf("swscale failed on a %dx%d picture (%d)", picture.p.w, picture.p.h, rows));
  }
  if (layout_.format == CV_OUTPUT_RGB24_PLANAR) {
    const size_t pixels = size_t{layout_.width} * layout_.height;
    for (int channel = 0; channel < 3; ++channel) {
      uint8_t* plane = dst + layout_.plane_offset[channel];
      const uint8_t* sample = interleaved_.data() + channel;
      for (size_t i = 0; i < pixels; ++i, sample += 3) plane[i] = *sample;
    }
  }
  return Status();
}

}  // namespace dav1d_plugin
