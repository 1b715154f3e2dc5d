#include "tools/cli/image_encoding.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

extern "C" {
#include <libavcodec/avcodec.h>
}

namespace codecvisor::cli {
namespace {

// A 3x2 RGB24 image with 2 bytes of padding per row (stride 11), the
// padding set to 0xEE so that a writer which copies it is caught.
struct TinyRgb {
  std::vector<uint8_t> bytes;
  ImageView view;
  TinyRgb() {
    for (int y = 0; y < 2; ++y) {
      for (int x = 0; x < 3; ++x) {
        for (int c = 0; c < 3; ++c) bytes.push_back(static_cast<uint8_t>(10 * y + 3 * x + c + 1));
      }
      bytes.push_back(0xEE);
      bytes.push_back(0xEE);
    }
    view = ImageView{3, 2, "rgb24", {{bytes, 11}}};
  }
  std::string Packed() const {
    std::string out;
    for (int y = 0; y < 2; ++y) out.append(reinterpret_cast<const char*>(bytes.data() + 11 * y), 9);
    return out;
  }
};

// Decodes a PNG file with libavcodec; the pixels as packed RGB24.
std::string DecodePng(const std::string& png, int* width, int* height) {
  const AVCodec* codec = avcodec_find_decoder(AV_CODEC_ID_PNG);
  AVCodecContext* context = avcodec_alloc_context3(codec);
  EXPECT_EQ(avcodec_open2(context, codec, nullptr), 0);
  AVPacket* packet = av_packet_alloc();
  EXPECT_EQ(av_new_packet(packet, static_cast<int>(png.size())), 0);
  std::copy(png.begin(), png.end(), packet->data);
  AVFrame* frame = av_frame_alloc();
  std::string pixels;
  EXPECT_EQ(avcodec_send_packet(context, packet), 0);
  if (avcodec_receive_frame(context, frame) == 0) {
    EXPECT_EQ(frame->format, AV_PIX_FMT_RGB24);
    *width = frame->width;
    *height = frame->height;
    for (int y = 0; y < frame->height; ++y) {
      pixels.append(reinterpret_cast<const char*>(frame->data[0] + y * frame->linesize[0]), 3 * frame->width);
    }
  } else {
    ADD_FAILURE() << "libavcodec could not decode the PNG";
  }
  av_frame_free(&frame);
  av_packet_free(&packet);
  avcodec_free_context(&context);
  return pixels;
}

TEST(PpmTest, ByteExactAndPaddingDropped) {
  TinyRgb rgb;
  auto ppm = EncodePpm(rgb.view);
  ASSERT_TRUE(ppm.ok()) << ppm.status();
  EXPECT_EQ(*ppm, "P6\n3 2\n255\n" + rgb.Packed());
  EXPECT_EQ(ppm->size(), 11u + 18u);
}

TEST(PpmTest, RejectsWhatItCannotWrite) {
  TinyRgb rgb;
  ImageView yuv = rgb.view;
  yuv.pixel_format = "yuv420p";
  EXPECT_EQ(EncodePpm(yuv).status().code(), absl::StatusCode::kInvalidArgument);
  ImageView short_plane = rgb.view;
  short_plane.planes[0].data = short_plane.planes[0].data.first(19);  // needs 11 + 9 = 20
  EXPECT_EQ(EncodePpm(short_plane).status().code(), absl::StatusCode::kInvalidArgument);
  ImageView narrow = rgb.view;
  narrow.planes[0].stride = 8;  // a row is 9 bytes
  EXPECT_EQ(EncodePpm(narrow).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(EncodePpm(ImageView{0, 2, "rgb24", {{rgb.bytes, 11}}}).ok());
}

TEST(PngTest, RoundTripsThroughLibavcodec) {
  TinyRgb rgb;
  PngEncoder encoder;
  auto png = encoder.Encode(rgb.view);
  ASSERT_TRUE(png.ok()) << png.status();
  ASSERT_GT(png->size(), 8u);
  EXPECT_EQ(png->substr(0, 8), "\x89PNG\r\n\x1a\n");
  int w = 0, h = 0;
  EXPECT_EQ(DecodePng(*png, &w, &h), rgb.Packed());
  EXPECT_EQ(w, 3);
  EXPECT_EQ(h, 2);
}

// The pHYs chunk: 4-byte x and y and a unit byte, after "pHYs".
std::string PhysChunk(const std::string& png) {
  const size_t at = png.find("pHYs");
  return at == std::string::npos ? "" : png.substr(at + 4, 9);
}

// Each file says the stream's pixel aspect ratio, as the ffmpeg CLI's do
// (its encoder writes pHYs from the stream's): it was always 0:1.
TEST(PngTest, TheStreamsPixelAspectRatioIsInEveryFile) {
  TinyRgb rgb;
  PngEncoder wide(Rational{108, 107});
  auto png = wide.Encode(rgb.view);
  ASSERT_TRUE(png.ok()) << png.status();
  EXPECT_EQ(PhysChunk(*png), std::string("\0\0\0\x6c\0\0\0\x6b\0", 9));
  PngEncoder unknown;  // as the CLI writes an unknown one
  png = unknown.Encode(rgb.view);
  ASSERT_TRUE(png.ok()) << png.status();
  EXPECT_EQ(PhysChunk(*png), std::string("\0\0\0\0\0\0\0\x01\0", 9));
}

TEST(PngTest, EncoderIsReusedAcrossSizes) {
  PngEncoder encoder;
  for (uint32_t size : {17u, 17u, 5u, 64u}) {
    std::vector<uint8_t> pixels(size * size * 3);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 31 + size);
    auto png = encoder.Encode(ImageView{size, size, "rgb24", {{pixels, size * 3}}});
    ASSERT_TRUE(png.ok()) << png.status();
    int w = 0, h = 0;
    EXPECT_EQ(DecodePng(*png, &w, &h), std::string(pixels.begin(), pixels.end())) << size;
    EXPECT_EQ(w, static_cast<int>(size));
  }
}

TEST(Y4mTest, HeaderAndFrameAreByteExact) {
  // A 3x3 yuv420p frame: chroma planes are 2x2 (rounded up), strides padded.
  std::vector<uint8_t> y = {1, 2, 3, 0xEE, 4, 5, 6, 0xEE, 7, 8, 9};
  std::vector<uint8_t> u = {20, 21, 0xEE, 22, 23};
  std::vector<uint8_t> v = {30, 31, 0xEE, 32, 33};
  ImageView image{3, 3, "yuv420p", {{y, 4}, {u, 3}, {v, 3}}};
  Y4mStreamInfo info{3, 3, {30000, 1001}, "yuv420p", "LIMITED", /*chroma_left=*/true};
  auto header = Y4mHeader(info);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(*header, "YUV4MPEG2 W3 H3 F30000:1001 Ip A0:0 C420mpeg2 XCOLORRANGE=LIMITED\n");
  std::string out;
  ASSERT_TRUE(AppendY4mFrame(info, image, &out).ok());
  EXPECT_EQ(out, std::string("FRAME\n") + "\1\2\3\4\5\6\7\10\11" + "\24\25\26\27" + "\36\37\40\41");
}

TEST(Y4mTest, HeaderVariants) {
  EXPECT_EQ(*Y4mHeader({4, 2, {25, 1}, "yuv444p", "", true}), "YUV4MPEG2 W4 H2 F25:1 Ip A0:0 C444\n");
  EXPECT_EQ(*Y4mHeader({4, 2, {25, 1}, "yuv420p", "", false}), "YUV4MPEG2 W4 H2 F25:1 Ip A0:0 C420jpeg\n");
  EXPECT_EQ(*Y4mHeader({4, 2, {25, 1}, "yuvj420p", "", false}),
            "YUV4MPEG2 W4 H2 F25:1 Ip A0:0 C420jpeg XCOLORRANGE=FULL\n");
  // A pixel shape the video says (anamorphic DV, 8:9), as ffmpeg writes it.
  EXPECT_EQ(*Y4mHeader({4, 2, {25, 1}, "yuv420p", "", true, {8, 9}}), "YUV4MPEG2 W4 H2 F25:1 Ip A8:9 C420mpeg2\n");
  EXPECT_FALSE(Y4mHeader({4, 2, {25, 1}, "rgb24", "", false}).ok());
  EXPECT_FALSE(Y4mHeader({4, 2, {0, 1}, "yuv420p", "", false}).ok());
  EXPECT_TRUE(CodecSitesChromaLeft("h264"));
  EXPECT_FALSE(CodecSitesChromaLeft("vp8"));
}

TEST(Y4mTest, FrameMustMatchTheStream) {
  std::vector<uint8_t> bytes(64, 1);
  Y4mStreamInfo info{4, 2, {25, 1}, "yuv420p", "", false};
  std::string out;
  EXPECT_FALSE(AppendY4mFrame(info, ImageView{4, 4, "yuv420p", {{bytes, 4}, {bytes, 2}, {bytes, 2}}}, &out).ok());
  EXPECT_FALSE(AppendY4mFrame(info, ImageView{4, 2, "yuv444p", {{bytes, 4}, {bytes, 4}, {bytes, 4}}}, &out).ok());
  EXPECT_TRUE(out.empty());
}

TEST(Yuv444Test, ConvertsKnownColours) {
  // Black, white, red, green, blue, grey: BT.601 limited range.
  const std::vector<uint8_t> rgb = {0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 255, 0, 0, 0, 255, 128, 128, 128};
  Yuv444Converter converter;
  auto yuv = converter.Convert(ImageView{6, 1, "rgb24", {{rgb, 18}}});
  ASSERT_TRUE(yuv.ok()) << yuv.status();
  ASSERT_EQ(yuv->pixel_format, "yuv444p");
  ASSERT_EQ(yuv->planes.size(), 3u);
  const int want_y[] = {16, 235, 81, 145, 41, 126};
  const int want_u[] = {128, 128, 90, 54, 240, 128};
  const int want_v[] = {128, 128, 240, 34, 110, 128};
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(yuv->planes[0].data[i], want_y[i], 1) << "Y of pixel " << i;
    EXPECT_NEAR(yuv->planes[1].data[i], want_u[i], 1) << "U of pixel " << i;
    EXPECT_NEAR(yuv->planes[2].data[i], want_v[i], 1) << "V of pixel " << i;
  }
}

TEST(FrameRateTest, ExactForCommonRates) {
  auto r = [](double fps) { return FrameRateAsRational(fps); };
  EXPECT_EQ(r(25), (Rational{25, 1}));
  EXPECT_EQ(r(30000.0 / 1001), (Rational{30000, 1001}));
  EXPECT_EQ(r(24000.0 / 1001), (Rational{24000, 1001}));
  EXPECT_EQ(r(60000.0 / 1001), (Rational{60000, 1001}));
  EXPECT_EQ(r(12.5), (Rational{25, 2}));
  EXPECT_EQ(r(23.976), (Rational{2997, 125}));
  EXPECT_EQ(r(0), std::nullopt);
  EXPECT_EQ(r(-25), std::nullopt);
  EXPECT_EQ(r(std::nan("")), std::nullopt);
}

}  // namespace
}  // namespace codecvisor::cli
