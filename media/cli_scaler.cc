// File: media/cli_scaler.cc

#include "media/cli_scaler.h"

#include <cstddef>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

extern "C" {
#include <libavutil/error.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace codecvisor::media {
namespace {

// vf_scale's option defaults (libavfilter/vf_scale.c, FFmpeg 5.1).
constexpr int kDefaultChromaPosition = -513;
// vf_scale's override for progressive yuv420p: MPEG-2 chroma siting.
constexpr int kYuv420pVerticalChromaPosition = 128;

int VerticalChromaPosition(AVPixelFormat format) {
  return format == AV_PIX_FMT_YUV420P ? kYuv420pVerticalChromaPosition : kDefaultChromaPosition;
}

const char* Name(AVPixelFormat format) {
  const char* name = av_get_pix_fmt_name(format);
  return name != nullptr ? name : "an unknown pixel format";
}

}  // namespace

absl::StatusOr<SwsContext*> NewCliScaler(int src_width, int src_height, AVPixelFormat src,
                                         int dst_width, int dst_height, AVPixelFormat dst) {
  const auto refused = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("cannot convert frames of ", src_width, "x", src_height,
                                            " ", Name(src), " to ", dst_width, "x", dst_height, " ",
                                            Name(dst), ": ", why));
  };
  // swscale's options take sizes from 1; it would keep its defaults for others.
  if (src_width <= 0 || src_height <= 0 || dst_width <= 0 || dst_height <= 0) {
    return refused("no pixels");
  }
  SwsContext* s = sws_alloc_context();
  if (s == nullptr) return absl::ResourceExhaustedError("out of memory for the scaler");
  av_opt_set_int(s, "srcw", src_width, 0);
  av_opt_set_int(s, "srch", src_height, 0);
  av_opt_set_int(s, "src_format", src, 0);
  av_opt_set_int(s, "dstw", dst_width, 0);
  av_opt_set_int(s, "dsth", dst_height, 0);
  av_opt_set_int(s, "dst_format", dst, 0);
  // The CLI's scalers get no flags (its debug log: "flags:''", "flags:0x0");
  // sws_init_context then picks SWS_BICUBIC. Passing 0 keeps whatever
  // default this libswscale has, as the CLI does.
  av_opt_set_int(s, "sws_flags", 0, 0);
  av_opt_set_double(s, "param0", SWS_PARAM_DEFAULT, 0);
  av_opt_set_double(s, "param1", SWS_PARAM_DEFAULT, 0);
  // One thread: callers run in parallel already. Slicing does not change
  // the result (the CLI's threaded filter output is identical).
  av_opt_set_int(s, "threads", 1, 0);
  av_opt_set_int(s, "src_h_chr_pos", kDefaultChromaPosition, 0);
  av_opt_set_int(s, "src_v_chr_pos", VerticalChromaPosition(src), 0);
  av_opt_set_int(s, "dst_h_chr_pos", kDefaultChromaPosition, 0);
  av_opt_set_int(s, "dst_v_chr_pos", VerticalChromaPosition(dst), 0);
  if (int ret = sws_init_context(s, nullptr, nullptr); ret < 0) {
    sws_freeContext(s);
    char error[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(ret, error, sizeof(error));
    return refused(error);
  }
  return s;
}

bool InputFullRange(SwsContext* scaler) {
  int* inv_table = nullptr;
  int* table = nullptr;
  int in_full = 0, out_full = 0, brightness = 0, contrast = 0, saturation = 0;
  sws_getColorspaceDetails(scaler, &inv_table, &in_full, &table, &out_full, &brightness, &contrast, &saturation);
  return in_full != 0;
}

void SetCliColorDetails(SwsContext* scaler, int colorspace, int color_range, bool unspecified_full) {
  int* inv_table = nullptr;
  int* table = nullptr;
  int in_full = 0, out_full = 0, brightness = 0, contrast = 0, saturation = 0;
  sws_getColorspaceDetails(scaler, &inv_table, &in_full, &table, &out_full, &brightness, &contrast,
                           &saturation);
  // vf_scale's parse_yuv_type("auto", frame->colorspace).
  if (colorspace < 1 || colorspace > 10 || colorspace == 8) colorspace = AVCOL_SPC_BT470BG;
  const int* coefficients = sws_getCoefficients(colorspace);
  in_full = color_range == AVCOL_RANGE_UNSPECIFIED ? unspecified_full : color_range == AVCOL_RANGE_JPEG;
  sws_setColorspaceDetails(scaler, coefficients, in_full, coefficients, out_full, brightness,
                           contrast, saturation);
}

namespace {

void SplitRows(const uint8_t* rgb, int stride, uint32_t width, uint32_t x0, uint32_t height,
               uint8_t* r, uint8_t* g, uint8_t* b) {
  for (uint32_t y = 0; y < height; ++y) {
    const uint8_t* row = rgb + ptrdiff_t{stride} * y;
    const size_t first = size_t{width} * y;
    for (uint32_t x = x0; x < width; ++x) {
      r[first + x] = row[3 * x];
      g[first + x] = row[3 * x + 1];
      b[first + x] = row[3 * x + 2];
    }
  }
}

#if defined(__x86_64__)
// 16 pixels at a time: three 16-byte loads hold R, G and B of 16 pixels;
// each output plane's 16 bytes gather from the three loads with one pshufb
// apiece (sample 3 * i + channel, from the load it falls in, or zero).
struct ShuffleMasks {
  alignas(16) int8_t mask[3][3][16];  // [channel][load][output byte]
};
constexpr ShuffleMasks MakeShuffleMasks() {
  ShuffleMasks m{};
  for (int channel = 0; channel < 3; ++channel) {
    for (int load = 0; load < 3; ++load) {
      for (int i = 0; i < 16; ++i) {
        const int at = 3 * i + channel - 16 * load;
        m.mask[channel][load][i] = at >= 0 && at < 16 ? static_cast<int8_t>(at) : int8_t{-128};
      }
    }
  }
  return m;
}
constexpr ShuffleMasks kShuffle = MakeShuffleMasks();

__attribute__((target("ssse3"))) void SplitRowsSsse3(const uint8_t* rgb, int stride, uint32_t width,
                                                      uint32_t height, uint8_t* r, uint8_t* g, uint8_t* b) {
  __m128i masks[3][3];
  for (int c = 0; c < 3; ++c) {
    for (int l = 0; l < 3; ++l) {
      masks[c][l] = _mm_load_si128(reinterpret_cast<const __m128i*>(kShuffle.mask[c][l]));
    }
  }
  uint8_t* const planes[3] = {r, g, b};
  const uint32_t whole = width / 16 * 16;
  for (uint32_t y = 0; y < height; ++y) {
    const uint8_t* row = rgb + ptrdiff_t{stride} * y;
    const size_t first = size_t{width} * y;
    for (uint32_t x = 0; x < whole; x += 16) {
      const uint8_t* in = row + size_t{3} * x;
      const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
      const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16));
      const __m128i v2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 32));
      for (int c = 0; c < 3; ++c) {
        const __m128i out = _mm_or_si128(
            _mm_or_si128(_mm_shuffle_epi8(v0, masks[c][0]), _mm_shuffle_epi8(v1, masks[c][1])),
            _mm_shuffle_epi8(v2, masks[c][2]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(planes[c] + first + x), out);
      }
    }
  }
  if (whole != width) SplitRows(rgb, stride, width, whole, height, r, g, b);
}
#endif

}  // namespace

void SplitRgb24(const uint8_t* rgb, int stride, uint32_t width, uint32_t height, uint8_t* r,
                uint8_t* g, uint8_t* b) {
#if defined(__x86_64__)
  static const bool ssse3 = __builtin_cpu_supports("ssse3");
  if (ssse3) return SplitRowsSsse3(rgb, stride, width, height, r, g, b);
#endif
  SplitRows(rgb, stride, width, 0, height, r, g, b);
}

}  // namespace codecvisor::media
