// File: backends/cpu/av_enums.cc

#include "backends/cpu/av_enums.h"

extern "C" {
#include <libavcodec/codec_desc.h>
#include <libavutil/pixdesc.h>
}

namespace codecvisor::cpu {
namespace {

constexpr char kUnknown[] = "unknown";

const char* OrUnknown(const char* name) { return name != nullptr ? name : kUnknown; }

bool InRange(int value, int end) { return value >= 0 && value < end; }

}  // namespace

std::optional<AVPixelFormat> KnownPixelFormat(int value) {
  if (!InRange(value, AV_PIX_FMT_NB)) return std::nullopt;
  const auto format = static_cast<AVPixelFormat>(value);
  if (av_pix_fmt_desc_get(format) == nullptr) return std::nullopt;
  return format;
}

std::optional<AVCodecID> KnownCodecId(int value) {
  // Codec ids have gaps and no end marker: the known ones are those
  // libavcodec describes.
  for (const AVCodecDescriptor* d = avcodec_descriptor_next(nullptr); d != nullptr;
       d = avcodec_descriptor_next(d)) {
    if (EnumValue(d->id) == value) return d->id;
  }
  return std::nullopt;
}

std::optional<AVColorSpace> KnownColorSpace(int value) {
  if (!InRange(value, AVCOL_SPC_NB)) return std::nullopt;
  const auto space = static_cast<AVColorSpace>(value);
  if (av_color_space_name(space) == nullptr) return std::nullopt;
  return space;
}

std::optional<AVColorRange> KnownColorRange(int value) {
  if (!InRange(value, AVCOL_RANGE_NB)) return std::nullopt;
  return static_cast<AVColorRange>(value);
}

const char* PixelFormatName(int value) {
  const std::optional<AVPixelFormat> format = KnownPixelFormat(value);
  return format ? OrUnknown(av_get_pix_fmt_name(*format)) : kUnknown;
}

const char* CodecName(int value) {
  const std::optional<AVCodecID> id = KnownCodecId(value);
  return id ? OrUnknown(avcodec_get_name(*id)) : kUnknown;
}

const char* ColorSpaceName(int value) {
  const std::optional<AVColorSpace> space = KnownColorSpace(value);
  return space ? OrUnknown(av_color_space_name(*space)) : kUnknown;
}

const char* ColorRangeName(int value) {
  const std::optional<AVColorRange> range = KnownColorRange(value);
  return range ? OrUnknown(av_color_range_name(*range)) : kUnknown;
}

const char* ColorPrimariesName(int value) {
  if (!InRange(value, AVCOL_PRI_NB)) return kUnknown;
  return OrUnknown(av_color_primaries_name(static_cast<AVColorPrimaries>(value)));
}

const char* ColorTransferName(int value) {
  if (!InRange(value, AVCOL_TRC_NB)) return kUnknown;
  return OrUnknown(av_color_transfer_name(static_cast<AVColorTransferCharacteristic>(value)));
}

const char* MediaTypeName(int value) {
  if (!InRange(value, AVMEDIA_TYPE_NB)) return kUnknown;
  return OrUnknown(av_get_media_type_string(static_cast<AVMediaType>(value)));
}

}  // namespace codecvisor::cpu
