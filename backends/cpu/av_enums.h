// File: backends/cpu/av_enums.h
//
// Enum fields of libav* structs read as the integers they hold. A demuxer or
// parser often stores a raw bitstream value in such a field without checking
// it (FFmpeg's AV1 parser copies the sequence header's 8-bit
// matrix_coefficients into AVCodecParameters::color_space), and in C++
// loading a value outside an enum's range through the enum type, or casting
// such an integer to it, is undefined behaviour. So every enum that comes
// from a file is read with EnumValue() and checked against the values FFmpeg
// knows before it is converted, named or switched on. Thread-safe: no state.

#ifndef CODECVISOR_BACKENDS_CPU_AV_ENUMS_H_
#define CODECVISOR_BACKENDS_CPU_AV_ENUMS_H_

#include <cstdint>  // before libav*: their headers need UINT64_C
#include <cstring>
#include <optional>
#include <type_traits>

extern "C" {
#include <libavcodec/codec_id.h>
#include <libavutil/avutil.h>
#include <libavutil/pixfmt.h>
}

namespace codecvisor::cpu {

// The integer stored in an enum-typed field, whatever it is.
template <typename Enum>
int EnumValue(const Enum& field) {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int));
  int value;
  std::memcpy(&value, &field, sizeof(value));
  return value;
}

// The enum for `value` when FFmpeg defines it, else nullopt.
std::optional<AVPixelFormat> KnownPixelFormat(int value);
std::optional<AVCodecID> KnownCodecId(int value);
std::optional<AVColorSpace> KnownColorSpace(int value);
std::optional<AVColorRange> KnownColorRange(int value);

// FFmpeg's name for a value (what ffprobe prints), or "unknown" for a value
// it does not define. Never null.
const char* PixelFormatName(int value);
const char* CodecName(int value);
const char* ColorSpaceName(int value);
const char* ColorRangeName(int value);
const char* ColorPrimariesName(int value);
const char* ColorTransferName(int value);
const char* MediaTypeName(int value);

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_AV_ENUMS_H_
