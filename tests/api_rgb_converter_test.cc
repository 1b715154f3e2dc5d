// RgbConverter end to end through the public API: the sandboxed cpu backend
// sends native frames of the streams the host converts (and RGB for every
// other stream), and the host's conversion is byte for byte the backend's
// own RGB, interleaved and planar, on videos made at test time with the
// ffmpeg CLI. Then what Convert refuses.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codecvisor/codecvisor.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"
#include "tools/common/subprocess.h"
#include "tools/common/test_video.h"

namespace codecvisor {
namespace {

struct Case {
  const char* name;
  const char* args;  // ffmpeg arguments before the output path
  bool native;       // whether the backend sends native frames
  const char* remux_of = nullptr;  // `args` are a stream copy's of this case's video
  // What the stream's metadata must say, so that the case tests what it names.
  const char* pixel_format = nullptr;
  const char* color = nullptr;  // "space range"
  double rotation = 0;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const Case kCases[] = {
    {"h264_odd_width.mp4",
     "-f lavfi -i testsrc2=size=638x360:rate=25 -frames:v 12 -c:v libx264 -preset veryfast -bf 2 -pix_fmt yuv420p",
     true, nullptr, "yuv420p"},
    {"bt709_full_range.mkv",
     "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 6 -c:v rawvideo -pix_fmt yuv420p -color_range pc "
     "-colorspace bt709",
     true, nullptr, "yuv420p", "bt709 pc"},
    {"bt470bg_limited_range.mkv",
     "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 6 -c:v rawvideo -pix_fmt yuv420p -color_range tv "
     "-colorspace bt470bg",
     true, nullptr, "yuv420p", "bt470bg tv"},
    // Widths with no whole number of swscale's blocks: 854 % 16 = 6.
    {"h264_854x480.mp4",
     "-f lavfi -i testsrc2=size=854x480:rate=25 -frames:v 4 -c:v libx264 -preset veryfast -pix_fmt yuv420p", true,
     nullptr, "yuv420p"},
    {"yuv420p_70x48.nut", "-f lavfi -i testsrc2=size=70x48:rate=10 -frames:v 4 -c:v rawvideo -pix_fmt yuv420p",
     true, nullptr, "yuv420p"},
    {"yuv420p_odd_size.nut", "-f lavfi -i testsrc2=size=321x241:rate=10 -frames:v 4 -c:v rawvideo -pix_fmt yuv420p",
     true, nullptr, "yuv420p"},
    {"yuv422p.nut", "-f lavfi -i testsrc2=size=66x50:rate=10 -frames:v 4 -c:v rawvideo -pix_fmt yuv422p", true,
     nullptr, "yuv422p"},
    {"yuv444p.nut", "-f lavfi -i testsrc2=size=66x50:rate=10 -frames:v 4 -c:v rawvideo -pix_fmt yuv444p", true,
     nullptr, "yuv444p"},
    {"nv12.nut", "-f lavfi -i testsrc2=size=66x50:rate=10 -frames:v 4 -c:v rawvideo -pix_fmt nv12", true, nullptr,
     "nv12"},
    {"nv21.nut", "-f lavfi -i testsrc2=size=66x50:rate=10 -frames:v 4 -c:v rawvideo -pix_fmt nv21", true, nullptr,
     "nv21"},
    {"gray.nut", "-f lavfi -i testsrc2=size=66x50:rate=10 -frames:v 4 -c:v rawvideo -pix_fmt gray", true, nullptr,
     "gray"},
    // Streams the host leaves to the backend.
    {"yuvj420p.avi", "-f lavfi -i testsrc2=size=80x60:rate=20 -frames:v 4 -c:v mjpeg -pix_fmt yuvj420p", false,
     nullptr, "yuvj420p"},
    {"yuv420p10le.nut", "-f lavfi -i testsrc2=size=66x50:rate=10 -frames:v 4 -c:v rawvideo -pix_fmt yuv420p10le",
     false, nullptr, "yuv420p10le"},
    {"rgb24.nut", "-f lavfi -i testsrc2=size=66x50:rate=10 -frames:v 4 -c:v rawvideo -pix_fmt rgb24", false, nullptr,
     "rgb24"},
    {"h264_rotation_90.mp4", "-c copy -metadata:s:v:0 rotate=90", false, "h264_odd_width.mp4", "yuv420p", nullptr,
     90},
    // An angle the backend does not apply (the CLI does not either): the
    // stream still says it, so the host does not convert it.
    {"h264_rotation_45.mp4", "-c copy -metadata:s:v:0 rotate=45", false, "h264_odd_width.mp4", "yuv420p", nullptr,
     45},
    // Widths of whole blocks: conversions straight into the caller's memory.
    {"yuv422p_64.nut", "-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 4 -c:v rawvideo -pix_fmt yuv422p", true,
     nullptr, "yuv422p"},
    {"nv12_64.nut", "-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 4 -c:v rawvideo -pix_fmt nv12", true, nullptr,
     "nv12"},
    {"gray_64.nut", "-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 4 -c:v rawvideo -pix_fmt gray", true, nullptr,
     "gray"},
};

std::string Video(const Case& c) {
  const std::string path = testing::TempPath(c.name);
  std::string args = c.args;
  if (c.remux_of != nullptr) {
    const auto source = std::find_if(std::begin(kCases), std::end(kCases),
                                     [&](const Case& k) { return std::string(k.name) == c.remux_of; });
    args = "-i " + Video(*source) + " " + args;
  }
  const absl::Status made = tools::MakeTestVideo(args, path);
  EXPECT_TRUE(made.ok()) << made;
  return path;
}

// Every frame as the ffmpeg CLI converts it to RGB24, one after another.
// Autorotated by quarter turns, as the backend does; other angles the CLI
// would interpolate (its rotate filter), which the backend leaves alone.
std::string CliFrames(const std::string& path, double rotation) {
  std::vector<std::string> argv = {"ffmpeg", "-nostdin", "-v", "error"};
  if (std::fmod(rotation, 90) != 0) argv.push_back("-noautorotate");
  argv.insert(argv.end(), {"-i", path, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"});
  absl::StatusOr<std::string> raw = tools::RunForOutput(argv);
  EXPECT_TRUE(raw.ok()) << raw.status();
  return raw.ok() ? *raw : "";
}

class RgbConverterTest : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() {
    HostOptions options;
    options.autoload = false;
    auto host = Host::Create(options);
    ASSERT_TRUE(host.ok()) << host.status().ToString();
    host_ = std::move(*host).release();
  }
  static void TearDownTestSuite() {
    delete host_;
    host_ = nullptr;
  }

  static std::unique_ptr<VideoDecoder> Open(const std::string& path, OutputFormat format, bool native) {
    DecoderOptions options;
    options.output_format = format;
    // One decoder thread: with frame threads, frames as small as these
    // come as RGB whatever the host offers.
    options.decoder_threads = 1;
    if (native) options.native_formats = RgbConverter::Formats();
    auto decoder = host_->OpenDecoder(path, options);
    EXPECT_TRUE(decoder.ok()) << decoder.status().ToString();
    return decoder.ok() ? *std::move(decoder) : nullptr;
  }

  static std::vector<Frame> AllFrames(VideoDecoder& d) {
    auto frames = d.GetFramesInRange(0, d.metadata().num_frames());
    EXPECT_TRUE(frames.ok()) << frames.status().ToString();
    return frames.ok() ? *std::move(frames) : std::vector<Frame>{};
  }

  static Host* host_;
};

Host* RgbConverterTest::host_ = nullptr;

TEST_P(RgbConverterTest, NativeFramesConvertToTheBackendsOwnRgb) {
  const Case& c = GetParam();
  const std::string path = Video(c);
  for (OutputFormat format : {OutputFormat::kRgb24, OutputFormat::kRgb24Planar}) {
    SCOPED_TRACE(OutputFormatName(format));
    std::unique_ptr<VideoDecoder> native = Open(path, format, true);
    std::unique_ptr<VideoDecoder> rgb = Open(path, format, false);
    ASSERT_TRUE(native && rgb);
    ASSERT_EQ(native->metadata(), rgb->metadata());
    const StreamMetadata& m = native->metadata();
    const std::string cli = CliFrames(path, c.rotation);
    EXPECT_EQ(m.pixel_format, c.pixel_format);
    if (c.color != nullptr) EXPECT_EQ(m.color_space + " " + m.color_range, c.color);
    EXPECT_EQ(std::abs(m.rotation_degrees), c.rotation);
    EXPECT_EQ(RgbConverter::Accepts(m), c.native);
    const std::vector<Frame> got = AllFrames(*native);
    const std::vector<Frame> want = AllFrames(*rgb);
    ASSERT_GE(want.size(), 4u);
    ASSERT_EQ(got.size(), want.size());
    const size_t bytes = size_t{m.width} * m.height * 3;
    RgbConverter converter(m);
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(i);
      ASSERT_EQ(want[i].format(), format);
      ASSERT_EQ(want[i].data().size(), bytes);
      if (format == OutputFormat::kRgb24) {  // the backend's own RGB is the CLI's
        ASSERT_GE(cli.size(), (i + 1) * bytes);
        EXPECT_EQ(std::memcmp(want[i].data().data(), cli.data() + i * bytes, bytes), 0);
      }
      if (!c.native) {
        ASSERT_EQ(got[i].format(), format);
        EXPECT_TRUE(std::equal(want[i].data().begin(), want[i].data().end(), got[i].data().begin()));
        continue;
      }
      ASSERT_EQ(got[i].format(), OutputFormat::kNative);
      EXPECT_EQ(got[i].pixel_format(), m.pixel_format);
      // With room to spill (straight into `out`), and without (a scratch
      // buffer): the same bytes, and nothing written past what was allowed.
      for (size_t room : {bytes + RgbConverter::kSlack, bytes}) {
        std::vector<uint8_t> out(room + 64, 0xa5);
        const Status s = converter.Convert(got[i], format, std::span<uint8_t>(out.data(), room));
        ASSERT_TRUE(s.ok()) << s.ToString();
        EXPECT_TRUE(std::equal(want[i].data().begin(), want[i].data().end(), out.begin())) << "room " << room;
        EXPECT_TRUE(std::all_of(out.begin() + room, out.end(), [](uint8_t b) { return b == 0xa5; }));
        if (room == bytes || format == OutputFormat::kRgb24Planar) {
          EXPECT_TRUE(std::all_of(out.begin() + bytes, out.end(), [](uint8_t b) { return b == 0xa5; }));
        }
      }
    }
    // An owned copy converts the same (its bytes are followed by padding too).
    if (c.native) {
      const Frame copy = got.back().CopyOut();
      std::vector<uint8_t> out(bytes);
      ASSERT_TRUE(converter.Convert(copy, format, out).ok());
      EXPECT_TRUE(std::equal(want.back().data().begin(), want.back().data().end(), out.begin()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Videos, RgbConverterTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.name;
                           std::replace_if(name.begin(), name.end(), [](char ch) { return !std::isalnum(ch); }, '_');
                           return name;
                         });

// Broadcast-style splices: three H.264 segments in one transport stream,
// BT.601 limited range, then BT.709 limited, then BT.709 full range. The
// host converts with the stream's colours (the first segment's), so at the
// first frame of the second segment the backend answers that its native
// frames no longer hold, and the decoder asks a new session for RGB: every
// frame still equals the CLI's, which converts each with its own colours.
TEST_F(RgbConverterTest, AStreamThatChangesColoursPartWayGoesOnInRgb) {
  std::string segments;
  const char* colours[] = {"-colorspace bt470bg -color_range tv", "-colorspace bt709 -color_range tv",
                           "-colorspace bt709 -color_range pc"};
  for (int i = 0; i < 3; ++i) {
    const std::string segment = testing::TempPath("segment" + std::to_string(i) + ".ts");
    const absl::Status made = tools::MakeTestVideo(
        std::string("-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 10 -c:v libx264 -preset veryfast -g 5 "
                    "-pix_fmt yuv420p ") +
            colours[i] + " -output_ts_offset " + std::to_string(0.48 * i),
        segment);
    ASSERT_TRUE(made.ok()) << made;
    segments += (i == 0 ? "concat:" : "|") + segment;
  }
  const std::string path = testing::TempPath("spliced.ts");
  ASSERT_TRUE(tools::MakeTestVideo("-i " + segments + " -c copy", path).ok());
  const std::string cli = CliFrames(path, 0);
  for (OutputFormat format : {OutputFormat::kRgb24, OutputFormat::kRgb24Planar}) {
    SCOPED_TRACE(OutputFormatName(format));
    std::unique_ptr<VideoDecoder> d = Open(path, format, true);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->metadata().color_space + " " + d->metadata().color_range, "bt470bg tv");
    RgbConverter converter(d->metadata());
    const size_t bytes = 64 * 48 * 3;
    std::vector<OutputFormat> formats;
    int64_t next = 0;
    const Status every = d->ForEachFrame(FrameSelection::InRange(0, 30), [&](Frame f) -> Status {
      const int64_t i = next++;
      formats.push_back(f.format());
      std::vector<uint8_t> rgb(bytes);
      if (f.format() == OutputFormat::kNative) {
        if (Status s = converter.Convert(f, OutputFormat::kRgb24, rgb); !s.ok()) return s;
      } else {
        EXPECT_EQ(f.format(), format);
        if (format == OutputFormat::kRgb24) {
          std::memcpy(rgb.data(), f.data().data(), bytes);
        } else {  // back to interleaved, to compare with the CLI's
          for (size_t p = 0; p < bytes / 3; ++p) {
            for (size_t c = 0; c < 3; ++c) rgb[p * 3 + c] = f.data()[c * (bytes / 3) + p];
          }
        }
      }
      EXPECT_EQ(std::memcmp(rgb.data(), cli.data() + i * bytes, bytes), 0) << "frame " << i;
      return Status();
    });
    ASSERT_TRUE(every.ok()) << every.ToString();
    ASSERT_EQ(formats.size(), 30u);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(formats[i], OutputFormat::kNative) << i;
    for (int i = 10; i < 30; ++i) EXPECT_EQ(formats[i], format) << i;
    EXPECT_EQ(d->retries(), 0u) << "a change of colours is not a failure";
    // The decoder stays on RGB: a later request starts where it left off.
    auto again = d->GetFrameAt(2);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(again->format(), format);
  }
}

TEST_F(RgbConverterTest, RefusesWhatIsNotOneOfTheStreamsNativeFrames) {
  const std::string path = Video(kCases[0]);  // 638x360 yuv420p
  const std::string other = Video(kCases[6]);  // 66x50 yuv422p
  std::unique_ptr<VideoDecoder> native = Open(path, OutputFormat::kRgb24, true);
  std::unique_ptr<VideoDecoder> rgb = Open(path, OutputFormat::kRgb24, false);
  std::unique_ptr<VideoDecoder> small = Open(other, OutputFormat::kRgb24, true);
  ASSERT_TRUE(native && rgb && small);
  auto frame = native->GetFrameAt(0);
  auto rgb_frame = rgb->GetFrameAt(0);
  auto other_frame = small->GetFrameAt(0);
  ASSERT_TRUE(frame.ok() && rgb_frame.ok() && other_frame.ok());
  RgbConverter converter(native->metadata());
  std::vector<uint8_t> out(638 * 360 * 3 + RgbConverter::kSlack, 0xa5);
  const std::vector<uint8_t> untouched = out;

  Status s = converter.Convert(*rgb_frame, OutputFormat::kRgb24, out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("rgb24 frame is RGB already"), std::string::npos) << s.ToString();
  s = converter.Convert(*other_frame, OutputFormat::kRgb24, out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("yuv422p frame of 66x50"), std::string::npos) << s.ToString();
  s = converter.Convert(*frame, OutputFormat::kNative, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  s = converter.Convert(*frame, static_cast<OutputFormat>(9), out);  // no OutputFormat
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  s = converter.Convert(*frame, OutputFormat::kRgb24, std::span<uint8_t>(out.data(), 638 * 360 * 3 - 1));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(out, untouched);

  // A converter for a stream that does not qualify converts nothing.
  StreamMetadata rotated = native->metadata();
  rotated.rotation_degrees = 90;
  EXPECT_FALSE(RgbConverter::Accepts(rotated));
  s = RgbConverter(rotated).Convert(*frame, OutputFormat::kRgb24, out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("Accepts is false"), std::string::npos) << s.ToString();
  s = RgbConverter(rotated).Convert(*rgb_frame, OutputFormat::kRgb24, out);
  EXPECT_NE(s.message().find("Accepts is false"), std::string::npos) << s.ToString();
  StreamMetadata ten_bit = native->metadata();
  ten_bit.pixel_format = "yuv420p10le";
  EXPECT_FALSE(RgbConverter::Accepts(ten_bit));
  // A converter moved from has nothing to convert with: an error, not a crash.
  RgbConverter taken = std::move(converter);
  s = converter.Convert(*frame, OutputFormat::kRgb24, out);  // NOLINT(bugprone-use-after-move): what is tested
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(out, untouched);
  EXPECT_TRUE(taken.Convert(*frame, OutputFormat::kRgb24, out).ok());
}

TEST(RgbConverterFormatsTest, AreEightBitYuvAndGreyFormats) {
  EXPECT_EQ(RgbConverter::Formats(),
            (std::vector<std::string>{"yuv420p", "yuv422p", "yuv444p", "nv12", "nv21", "gray"}));
}

}  // namespace
}  // namespace codecvisor
