#include "tools/conformance/metadata_checks.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "tools/common/test_video.h"

namespace codecvisor::conformance {
namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// A 1-stream, untagged yuv420p YUV4MPEG2 file of 36 frames at 24 fps
// (ffprobe: 1.5 s, no nb_frames), with its ffprobe reference.
const Sample& Y4mSample() {
  static const Sample* sample = [] {
    const std::string path = TempDir() + "/untagged.y4m";
    EXPECT_TRUE(tools::MakeTestVideo("-f lavfi -i testsrc2=size=64x48:rate=24 -frames:v 36 -pix_fmt yuv420p", path)
                    .ok());
    absl::StatusOr<Sample> loaded = LoadSample(path, {});
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    return new Sample(loaded.ok() ? *std::move(loaded) : Sample{});
  }();
  return *sample;
}

// What the cpu backend reports for the file in exact mode.
ipc::StreamMetadata CpuExact() {
  ipc::StreamMetadata m;
  m.stream_index = 0;
  m.num_video_streams = 1;
  m.codec = "rawvideo";
  m.pixel_format = "yuv420p";
  m.width = 64;
  m.height = 48;
  m.num_frames_from_header = -1;
  m.num_frames_from_scan = 36;
  m.average_fps = 24;
  m.duration_seconds = 1.5;
  m.begin_stream_seconds = 0;
  m.end_stream_seconds = 1.5;
  m.color_space = m.color_range = m.color_primaries = m.color_transfer = "unknown";
  m.time_base = {1, 24};
  return m;
}

// ... and in approximate mode, from the header.
ipc::StreamMetadata CpuApproximate() {
  ipc::StreamMetadata m = CpuExact();
  m.num_frames_from_scan = -1;
  return m;
}

std::string Exact(const ipc::StreamMetadata& m, bool exact_output = true) {
  std::string detail;
  absl::Status s = CheckMetadata(m, Y4mSample(), exact_output, &detail);
  return s.ok() ? "" : std::string(s.message());
}

std::string Approximate(const ipc::StreamMetadata& m) {
  std::string detail;
  absl::Status s = CheckApproximateMetadata(m, Y4mSample(), &detail);
  return s.ok() ? "" : std::string(s.message());
}

TEST(MetadataChecksTest, FfprobeReadsTheHeaders) {
  ASSERT_TRUE(Y4mSample().header.has_value());
  const ProbedHeader& h = *Y4mSample().header;
  EXPECT_EQ(h.pixel_format, "yuv420p");
  EXPECT_EQ(h.color_space, "unknown");
  EXPECT_EQ(h.color_range, "unknown");
  EXPECT_EQ(h.num_frames, -1);
  EXPECT_NEAR(h.duration_seconds, 1.5, 1e-9);
  EXPECT_EQ(h.num_streams, 1);
  EXPECT_EQ(h.num_video_streams, 1);
}

TEST(MetadataChecksTest, TheCpuBackendsMetadataPasses) {
  EXPECT_EQ(Exact(CpuExact()), "");
  EXPECT_EQ(Approximate(CpuApproximate()), "");
  // Untagged may also be said as the SDK's other words for it, but not as
  // a range the file does not name.
  ipc::StreamMetadata m = CpuExact();
  m.color_space = "";
  m.color_primaries = "unspecified";
  EXPECT_EQ(Exact(m), "");
  m.color_range = "tv";
  EXPECT_NE(Exact(m).find("color_range 'tv', but the file carries no such tag"), std::string::npos) << Exact(m);
}

// The metadata of a vendor backend that passed the suite before these rules.
TEST(MetadataChecksTest, WrongMetadataFailsNamingTheField) {
  ipc::StreamMetadata m = CpuExact();
  m.duration_seconds = 2.25;
  EXPECT_NE(Exact(m).find("duration_seconds 2.25, but its frames span 1.5 s"), std::string::npos) << Exact(m);

  m = CpuExact();
  m.pixel_format = "nv12";
  EXPECT_NE(Exact(m).find("pixel_format 'nv12', ffprobe says 'yuv420p'"), std::string::npos) << Exact(m);
  EXPECT_EQ(Exact(m, /*exact_output=*/false), "") << "a hardware decoder may report its own layout";

  m = CpuExact();
  m.color_space = "bt709";
  EXPECT_NE(Exact(m).find("color_space 'bt709', but the file carries no such tag"), std::string::npos) << Exact(m);
  m = CpuExact();
  m.color_range = "pc";
  EXPECT_NE(Exact(m).find("color_range 'pc', but the file carries no such tag"), std::string::npos) << Exact(m);

  m = CpuExact();
  m.num_video_streams = 3;
  EXPECT_NE(Exact(m).find("num_video_streams 3, ffprobe finds 1"), std::string::npos) << Exact(m);
  m = CpuExact();
  m.streams.resize(2);
  EXPECT_NE(Exact(m).find("streams lists 2 streams, ffprobe finds 1"), std::string::npos) << Exact(m);

  m = CpuExact();
  m.num_frames_from_header = 54;
  EXPECT_NE(Exact(m).find("num_frames_from_header 54, the reference has 36"), std::string::npos) << Exact(m);
}

TEST(MetadataChecksTest, WrongApproximateMetadataFails) {
  // len() 54 for 36 frames: from a header count, or a duration.
  ipc::StreamMetadata m = CpuApproximate();
  m.num_frames_from_header = 54;
  EXPECT_NE(Approximate(m).find("frame count (len()) 54"), std::string::npos) << Approximate(m);
  m = CpuApproximate();
  m.duration_seconds = 2.25;
  m.end_stream_seconds = 2.25;
  EXPECT_NE(Approximate(m).find("duration_seconds 2.25"), std::string::npos) << Approximate(m);
  m = CpuApproximate();
  m.average_fps = 36;
  EXPECT_NE(Approximate(m).find("average_fps 36, the header says 24"), std::string::npos) << Approximate(m);
  // Within a frame's rounding, an estimate passes.
  m = CpuApproximate();
  m.duration_seconds = 1.52;
  EXPECT_EQ(Approximate(m), "");
  m = CpuApproximate();
  m.duration_seconds = 0;
  EXPECT_NE(Approximate(m).find("duration_seconds 0"), std::string::npos) << Approximate(m);
}

// len() is counted from the header's times, as the Python package counts
// it: a vendor's backend whose get_header_times said 0 s while its metadata
// said the container's 2 s passed, and its len() was unknown in Python.
TEST(MetadataChecksTest, TheApproximateCountIsTheHeaderTimesOne) {
  ipc::StreamMetadata m = CpuApproximate();
  m.num_frames_from_header = -1;
  m.header_times = ipc::HeaderTimes{m.duration_seconds, m.begin_stream_seconds};
  EXPECT_EQ(Approximate(m), "");
  m.header_times = ipc::HeaderTimes{0, 0};
  EXPECT_NE(Approximate(m).find("no header duration (get_header_times says 0 s)"), std::string::npos) << Approximate(m);
  m.header_times = ipc::HeaderTimes{2.25, 0};
  EXPECT_NE(Approximate(m).find("frame count (len()) 54 (num_frames_from_header -1, header duration 2.25 s"),
            std::string::npos)
      << Approximate(m);
}

// A Matroska file starting at 0.5 s has no stream duration; its segment
// lasts 2.0 s from 0. A duration of the frames' 1.5 s and one of the
// container's 2.0 s both pass (the dav1d example reports the latter in
// approximate mode), within a frame and a millisecond; 2.25 s does not.
TEST(MetadataChecksTest, MatroskaDurationsWithinTheirTolerance) {
  absl::StatusOr<Sample> sample = MakeSample("h264", TempDir());
  ASSERT_TRUE(sample.ok()) << sample.status();
  ASSERT_TRUE(sample->header.has_value());
  EXPECT_LT(sample->header->duration_seconds, 0) << "no stream duration in Matroska";
  ipc::StreamMetadata m = CpuExact();
  m.codec = "h264";
  m.width = 128;
  m.height = 96;
  m.num_frames_from_scan = -1;
  m.begin_stream_seconds = 0.5;
  m.time_base = {1, 1000};
  std::string detail;
  for (double duration : {1.5, 2.0, 1.5 + 1.0 / 24}) {
    m.duration_seconds = duration;
    m.end_stream_seconds = 0.5 + duration;
    EXPECT_TRUE(CheckApproximateMetadata(m, *sample, &detail).ok()) << duration;
  }
  m.duration_seconds = 2.25;
  EXPECT_FALSE(CheckApproximateMetadata(m, *sample, &detail).ok());
}

}  // namespace
}  // namespace codecvisor::conformance
