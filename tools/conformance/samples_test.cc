#include "tools/conformance/samples.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "core/manifest.h"
#include "tools/common/test_video.h"

namespace codecvisor::conformance {
namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

TEST(PsnrTest, IdenticalIsInfiniteAndNoiseIsFinite) {
  std::vector<uint8_t> a(300, 100), b = a;
  EXPECT_TRUE(std::isinf(Psnr(a, b)));
  b[0] = 110;  // MSE = 100 / 300
  EXPECT_NEAR(Psnr(a, b), 10 * std::log10(255.0 * 255.0 * 3), 1e-9);
  EXPECT_EQ(Psnr(a, std::vector<uint8_t>(10)), 0) << "different sizes never pass a threshold";
}

TEST(MakeSampleTest, H264SampleAndItsReference) {
  absl::StatusOr<Sample> sample = MakeSample("h264", TempDir());
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_EQ(sample->stream.codec, "h264");
  EXPECT_EQ(sample->stream.width, 128u);
  EXPECT_EQ(sample->stream.height, 96u);
  EXPECT_NEAR(sample->stream.average_fps, 24, 1e-9);
  // Matroska's: the time base ffprobe's pts are in, which the backend must report.
  EXPECT_EQ(sample->time_base_num, 1);
  EXPECT_EQ(sample->time_base_den, 1000);
  ASSERT_EQ(sample->num_frames(), 36);
  EXPECT_EQ(sample->rgb24.size(), 36u * 128 * 96 * 3);
  for (int64_t i = 1; i < sample->num_frames(); ++i) {
    EXPECT_GT(sample->pts[i], sample->pts[i - 1]) << "presentation order, frame " << i;
    EXPECT_GT(sample->durations[i], 0);
  }
  EXPECT_GT(sample->pts[0], 0) << "the sample starts at 0.5 s";
  // testsrc2 moves: consecutive frames differ.
  EXPECT_FALSE(std::equal(sample->Frame(0).begin(), sample->Frame(0).end(), sample->Frame(1).begin()));
}

TEST(MakeSampleTest, UnknownCodecIsAnErrorThatPointsAtOwnSamples) {
  absl::Status status = MakeSample("y4m", TempDir()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--sample"), std::string::npos) << status;
}

TEST(EncoderArgsTest, EveryManifestCodecHasEncoderSettings) {
  for (const char* codec : kConformanceSampleCodecs) {
    absl::StatusOr<std::vector<std::string>> args = EncoderArgs(codec);
    ASSERT_TRUE(args.ok()) << codec << ": " << args.status();
    EXPECT_EQ((*args)[0], "-c:v") << codec;
  }
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(ParseTimestampsTest, KeysAndFrames) {
  Sample sample;
  ASSERT_TRUE(ParseTimestamps("# a comment\nwidth 4\nheight 2\ntime_base 1/25  # trailing\ncodec raw\n"
                              "0 1\n1 1\n\n2 2\n",
                              "t.txt", &sample)
                  .ok());
  EXPECT_EQ(sample.stream.width, 4u);
  EXPECT_EQ(sample.stream.height, 2u);
  EXPECT_EQ(sample.stream.codec, "raw");
  EXPECT_EQ(sample.time_base_num, 1);
  EXPECT_EQ(sample.time_base_den, 25);
  EXPECT_EQ(sample.pts, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(sample.durations, (std::vector<int64_t>{1, 1, 2}));
  EXPECT_NEAR(sample.stream.average_fps, 3 * 25 / 4.0, 1e-9) << "frames over the summed durations";
}

TEST(ParseTimestampsTest, ErrorsNameTheFileAndLine) {
  const std::string head = "width 4\nheight 2\ntime_base 1/25\n";
  for (const std::string& bad : {head + "0 1\n0 1\n", head + "0 0\n", head + "0 1 2\n", head + "speed 3\n",
                                std::string("width 4\nheight 2\n0 1\n"), head, head + "time_base 0/1\n0 1\n"}) {
    Sample sample;
    absl::Status status = ParseTimestamps(bad, "t.txt", &sample);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("t.txt"), std::string::npos) << status;
  }
}

TEST(LoadSampleTest, FfmpegReadsTheFile) {
  const std::string path = TempDir() + "/own.y4m";
  ASSERT_TRUE(tools::MakeTestVideo("-f lavfi -i testsrc2=size=64x48:rate=24 -frames:v 14 -pix_fmt yuv420p", path).ok());
  absl::StatusOr<Sample> sample = LoadSample(path, {});
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_EQ(sample->codec, "own.y4m");
  EXPECT_EQ(sample->stream.codec, "rawvideo");
  EXPECT_EQ(sample->num_frames(), 14);
  EXPECT_EQ(sample->rgb24.size(), 14u * 64 * 48 * 3);
}

// An MPEG-TS file lists its streams twice to ffprobe (under its program
// too): counted once, where a correct backend failed for saying 1.
TEST(LoadSampleTest, AProgramsStreamsAreCountedOnce) {
  const std::string ts = TempDir() + "/program.ts";
  ASSERT_TRUE(tools::MakeTestVideo("-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 14 -c:v libx264 -bf 2", ts).ok());
  absl::StatusOr<Sample> sample = LoadSample(ts, {});
  ASSERT_TRUE(sample.ok()) << sample.status();
  ASSERT_TRUE(sample->header.has_value());
  EXPECT_EQ(sample->header->num_video_streams, 1);
  EXPECT_EQ(sample->header->num_streams, 1);
}

TEST(LoadSampleTest, VendorReference) {
  const std::string dir = TempDir();
  Write(dir + "/cam.raw", "a camera's own format");
  std::string stamps = "width 2\nheight 2\ntime_base 1/30\n";
  for (int i = 0; i < 12; ++i) stamps += std::to_string(i * 2) + " 2\n";
  Write(dir + "/cam.timestamps", stamps);
  Write(dir + "/cam.rgb24", std::string(12 * 2 * 2 * 3, 'x'));
  absl::StatusOr<Sample> sample = LoadSample(dir + "/cam.raw", {dir + "/cam.rgb24", dir + "/cam.timestamps"});
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_EQ(sample->num_frames(), 12);
  EXPECT_NEAR(sample->stream.average_fps, 15, 1e-9);
  EXPECT_TRUE(sample->stream.codec.empty());

  Write(dir + "/short.rgb24", std::string(100, 'x'));
  absl::Status status = LoadSample(dir + "/cam.raw", {dir + "/short.rgb24", dir + "/cam.timestamps"}).status();
  EXPECT_NE(status.message().find("100 bytes"), std::string::npos) << status;

  // A reference of too few frames is the reference's fault, not the sample's.
  Write(dir + "/one.timestamps", "width 2\nheight 2\ntime_base 1/30\n0 2\n");
  Write(dir + "/one.rgb24", std::string(2 * 2 * 3, 'x'));
  status = LoadSample(dir + "/cam.raw", {dir + "/one.rgb24", dir + "/one.timestamps"}).status();
  EXPECT_NE(status.message().find("the reference for sample " + dir + "/cam.raw (" + dir +
                                  "/one.timestamps) lists 1 frames; the suite needs at least 12"),
            std::string::npos)
      << status;

  status = LoadSample(dir + "/cam.raw", {}).status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("--reference"), std::string::npos) << "FFmpeg cannot read it: " << status;
}

// AVI keeps decode times only: ffprobe gives the frames B-frames reorder
// no time, which the suite needs for each. The error says so and how to
// choose a sample that works, where it said "unreadable frame line 'N/A,1,'".
TEST(LoadSampleTest, FramesWithoutTimesNameTheRemedy) {
  const std::string path = TempDir() + "/bframes.avi";
  ASSERT_TRUE(
      tools::MakeTestVideo("-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 14 -c:v libx264 -bf 3", path).ok());
  absl::Status status = LoadSample(path, {}).status();
  EXPECT_NE(status.message().find("bframes.avi no presentation time"), std::string::npos) << status;
  EXPECT_NE(status.message().find("use a sample whose container times every frame"), std::string::npos) << status;
}

TEST(LoadSampleTest, TooFewFrames) {
  const std::string path = TempDir() + "/short.y4m";
  ASSERT_TRUE(tools::MakeTestVideo("-f lavfi -i testsrc2=size=64x48:rate=24 -frames:v 5 -pix_fmt yuv420p", path).ok());
  absl::Status status = LoadSample(path, {}).status();
  EXPECT_NE(status.message().find("at least 12"), std::string::npos) << status;
}

TEST(DifferenceTest, FindsTheChannelAndTheBlock) {
  const uint32_t w = 40, h = 20;
  std::vector<uint8_t> a(size_t{w} * h * 3, 50), b = a;
  b[(size_t{18} * w + 35) * 3 + 2] = 90;  // blue, x=35 y=18
  b[(size_t{17} * w + 33) * 3 + 2] = 60;
  FrameDifference d = Difference(b, a, w, h);
  EXPECT_TRUE(std::isinf(d.channel_psnr[0]));
  EXPECT_TRUE(std::isinf(d.channel_psnr[1]));
  EXPECT_FALSE(std::isinf(d.channel_psnr[2]));
  EXPECT_EQ(d.max_difference, 40);
  EXPECT_EQ(d.max_x, 35u);
  EXPECT_EQ(d.max_y, 18u);
  EXPECT_EQ(d.worst_block_x, 32u);
  EXPECT_EQ(d.worst_block_y, 16u);
  EXPECT_NEAR(d.psnr, Psnr(b, a), 1e-9);
  EXPECT_NE(Describe(d).find("worst 16x16 block at x=32 y=16"), std::string::npos) << Describe(d);
}

}  // namespace
}  // namespace codecvisor::conformance
