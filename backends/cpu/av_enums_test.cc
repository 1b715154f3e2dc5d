// File: backends/cpu/av_enums_test.cc
//
// Enum values read from files: known ones get FFmpeg's names, anything else
// (out of range, in a gap, negative) is "unknown" or nullopt, never a cast.

#include "backends/cpu/av_enums.h"

#include <climits>
#include <cstring>

#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

TEST(AvEnumsTest, EnumValueReadsWhatTheFieldHoldsEvenOutsideTheEnum) {
  AVColorSpace field = AVCOL_SPC_BT709;
  EXPECT_EQ(EnumValue(field), 1);
  const int raw = 254;  // what FFmpeg's AV1 parser stores from a crafted file
  std::memcpy(&field, &raw, sizeof(raw));
  EXPECT_EQ(EnumValue(field), 254);
}

TEST(AvEnumsTest, KnownValuesHaveFfprobesNames) {
  EXPECT_STREQ(ColorSpaceName(AVCOL_SPC_BT709), "bt709");
  EXPECT_STREQ(ColorSpaceName(AVCOL_SPC_SMPTE240M), "smpte240m");
  EXPECT_STREQ(ColorRangeName(AVCOL_RANGE_JPEG), "pc");
  EXPECT_STREQ(ColorRangeName(AVCOL_RANGE_MPEG), "tv");
  EXPECT_STREQ(ColorPrimariesName(AVCOL_PRI_BT470M), "bt470m");
  EXPECT_STREQ(ColorTransferName(AVCOL_TRC_SMPTE240M), "smpte240m");
  EXPECT_STREQ(PixelFormatName(AV_PIX_FMT_YUV420P10LE), "yuv420p10le");
  EXPECT_STREQ(CodecName(AV_CODEC_ID_AV1), "av1");
  EXPECT_STREQ(MediaTypeName(AVMEDIA_TYPE_AUDIO), "audio");
  EXPECT_EQ(KnownPixelFormat(AV_PIX_FMT_NV12), AV_PIX_FMT_NV12);
  EXPECT_EQ(KnownCodecId(AV_CODEC_ID_H264), AV_CODEC_ID_H264);
  EXPECT_EQ(KnownColorSpace(AVCOL_SPC_BT2020_NCL), AVCOL_SPC_BT2020_NCL);
  EXPECT_EQ(KnownColorRange(AVCOL_RANGE_UNSPECIFIED), AVCOL_RANGE_UNSPECIFIED);
}

TEST(AvEnumsTest, ValuesFfmpegDoesNotDefineAreUnknown) {
  for (int v : {-1, 254, 255, 1 << 20, INT_MAX, INT_MIN}) {
    SCOPED_TRACE(v);
    EXPECT_STREQ(ColorSpaceName(v), "unknown");
    EXPECT_STREQ(ColorRangeName(v), "unknown");
    EXPECT_STREQ(ColorPrimariesName(v), "unknown");
    EXPECT_STREQ(ColorTransferName(v), "unknown");
    EXPECT_STREQ(PixelFormatName(v), "unknown");
    EXPECT_STREQ(MediaTypeName(v), "unknown");
    EXPECT_FALSE(KnownPixelFormat(v).has_value());
    EXPECT_FALSE(KnownColorSpace(v).has_value());
    EXPECT_FALSE(KnownColorRange(v).has_value());
  }
  // FFmpeg names the reserved value 3 "reserved" (as ffprobe prints it);
  // primaries 13-21 are a gap it has no name for.
  EXPECT_STREQ(ColorSpaceName(3), "reserved");
  EXPECT_STREQ(ColorPrimariesName(3), "reserved");
  EXPECT_STREQ(ColorPrimariesName(15), "unknown");
  // Codec ids are sparse: 254 and 255 are video codecs, the last video id
  // is far below the first audio one.
  for (int v : {-1, AV_CODEC_ID_FIRST_AUDIO - 1, 1 << 20, INT_MAX, INT_MIN}) {
    SCOPED_TRACE(v);
    EXPECT_STREQ(CodecName(v), "unknown");
    EXPECT_FALSE(KnownCodecId(v).has_value());
  }
}

}  // namespace
}  // namespace codecvisor::cpu
