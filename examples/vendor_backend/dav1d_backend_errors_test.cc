// File: examples/vendor_backend/dav1d_backend_errors_test.cc
//
// The dav1d plugin on bad input and bad requests: every failure is an error
// return whose message names the file and the cause, never a crash.

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_support.h"

namespace dav1d_plugin::testing {
namespace {

using ::testing::HasSubstr;

std::string Av1Video() {
  return MakeVideo("err_av1.mkv",
                   "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 20 -c:v libaom-av1 "
                   "-cpu-used 8 -g 8 -pix_fmt yuv420p");
}

// A copy of `path` keeping its first `fraction` of bytes.
std::string Truncated(const std::string& path, const std::string& name, double fraction) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string out = TempDir() + "/" + name;
  std::ofstream(out, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() * fraction));
  return out;
}

std::string WriteFile(const std::string& name, const std::string& content) {
  const std::string out = TempDir() + "/" + name;
  std::ofstream(out, std::ios::binary) << content;
  return out;
}

// Colour values in the sequence header that no FFmpeg enum holds (the cpu
// backend's fuzzer seeds: matrix 254; primaries 200, transfer 201) are
// named "unknown", as ffprobe names them, and the frames still decode.
TEST(Dav1dBackendErrorsTest, ColourValuesNoFfmpegEnumHoldsAreUnknown) {
  const char* runfiles = std::getenv("TEST_SRCDIR");
  const std::string corpus = std::string(runfiles != nullptr ? runfiles : ".") +
                             "/codecvisor/backends/cpu/testdata/decode_corpus/";
  OpenVideo a;
  ASSERT_EQ(a.Open(corpus + "regression_ubsan_av1_colorspace_254.ivf", DefaultOptions()), CV_OK) << a.error();
  cv_stream_metadata m = a.Metadata();
  EXPECT_STREQ(m.color_space, "unknown");
  EXPECT_STREQ(m.color_primaries, "bt470m");
  EXPECT_STREQ(m.color_transfer, "smpte240m");
  OpenVideo b;
  ASSERT_EQ(b.Open(corpus + "regression_ubsan_av1_cicp_out_of_range.ivf", DefaultOptions()), CV_OK) << b.error();
  m = b.Metadata();
  EXPECT_STREQ(m.color_space, "unknown");
  EXPECT_STREQ(m.color_primaries, "unknown");
  EXPECT_STREQ(m.color_transfer, "unknown");
  EXPECT_EQ(m.num_frames_from_scan, 4);
}

TEST(Dav1dBackendErrorsTest, NotAVideo) {
  OpenVideo v;
  EXPECT_EQ(v.Open(WriteFile("notes.txt", std::string(4096, 'x')), DefaultOptions()), CV_ERROR_CORRUPT_DATA);
  EXPECT_THAT(v.error(), HasSubstr("video 'notes.txt': is not a readable video file"));
}

TEST(Dav1dBackendErrorsTest, EmptyFile) {
  OpenVideo v;
  EXPECT_EQ(v.Open(WriteFile("empty.mkv", ""), DefaultOptions()), CV_ERROR_CORRUPT_DATA);
  EXPECT_THAT(v.error(), HasSubstr("video 'empty.mkv': is empty"));
}

TEST(Dav1dBackendErrorsTest, OtherCodecsAreRefusedByName) {
  const std::string h264 = MakeVideo("h264.mp4",
                                     "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 5 -c:v libx264 "
                                     "-pix_fmt yuv420p");
  OpenVideo v;
  EXPECT_EQ(v.Open(h264, DefaultOptions()), CV_ERROR_UNSUPPORTED);
  EXPECT_THAT(v.error(), HasSubstr("video 'h264.mp4': dav1d backend decodes AV1 only; stream 0 is h264"));
}

TEST(Dav1dBackendErrorsTest, PicksTheAv1StreamAndChecksStreamIndices) {
  const std::string mixed =
      MakeVideo("mixed.mkv",
                "-f lavfi -i testsrc2=size=64x48:rate=25 -f lavfi -i testsrc=size=48x32:rate=25 "
                "-f lavfi -i sine=frequency=440:sample_rate=8000 -map 0:v -map 1:v -map 2:a -t 0.4 "
                "-c:v:0 mpeg4 -c:v:1 libaom-av1 -cpu-used 8 -c:a pcm_s16le -pix_fmt yuv420p");
  OpenVideo best;
  ASSERT_EQ(best.Open(mixed, DefaultOptions()), CV_OK) << best.error();
  EXPECT_EQ(best.Metadata().stream_index, 1);
  EXPECT_EQ(best.Metadata().num_video_streams, 2u);
  EXPECT_EQ(best.Metadata().width, 48u);
  std::vector<uint8_t> frame;
  EXPECT_EQ(best.Decode(3, &frame), CV_OK) << best.error();
  // Every stream of the file is listed, whichever one is open.
  const std::vector<cv_stream_info> streams = best.Streams();
  ASSERT_EQ(streams.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(streams[i].index, i);
  EXPECT_EQ(streams[0].type, CV_STREAM_VIDEO);
  EXPECT_STREQ(streams[0].codec, "mpeg4");
  EXPECT_EQ(streams[0].width, 64u);
  EXPECT_EQ(streams[0].height, 48u);
  EXPECT_EQ(streams[1].type, CV_STREAM_VIDEO);
  EXPECT_STREQ(streams[1].codec, "av1");
  EXPECT_EQ(streams[1].width, 48u);
  EXPECT_EQ(streams[2].type, CV_STREAM_AUDIO);
  EXPECT_STREQ(streams[2].codec, "pcm_s16le");
  EXPECT_EQ(streams[2].sample_rate, 8000u);
  EXPECT_EQ(streams[2].channels, 1u);
  EXPECT_EQ(streams[2].width, 0u);
  ASSERT_EQ(best.Streams(2).size(), 2u) << "a list longer than the room given is cut to it";

  cv_open_options o = DefaultOptions();
  o.stream_index = 0;
  OpenVideo mpeg4;
  EXPECT_EQ(mpeg4.Open(mixed, o), CV_ERROR_UNSUPPORTED);
  EXPECT_THAT(mpeg4.error(), HasSubstr("dav1d backend decodes AV1 only; stream 0 is mpeg4"));
  o.stream_index = 2;
  OpenVideo audio;
  EXPECT_EQ(audio.Open(mixed, o), CV_ERROR_NOT_FOUND);
  EXPECT_THAT(audio.error(), HasSubstr("stream 2 is not a video stream (it is audio)"));
  o.stream_index = 7;
  OpenVideo missing;
  EXPECT_EQ(missing.Open(mixed, o), CV_ERROR_NOT_FOUND);
  EXPECT_THAT(missing.error(), HasSubstr("has no stream 7"));
}

TEST(Dav1dBackendErrorsTest, TruncatedMp4) {
  // The moov box is at the end: half a file has no index at all.
  const std::string mp4 = MakeVideo("whole.mp4",
                                    "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 20 -c:v libaom-av1 "
                                    "-cpu-used 8 -pix_fmt yuv420p");
  OpenVideo v;
  EXPECT_EQ(v.Open(Truncated(mp4, "half.mp4", 0.5), DefaultOptions()), CV_ERROR_CORRUPT_DATA);
  EXPECT_THAT(v.error(), HasSubstr("video 'half.mp4': "));
  EXPECT_THAT(v.error(), HasSubstr("truncated"));
}

TEST(Dav1dBackendErrorsTest, TruncatedMkvDecodesWhatIsThereOrSaysWhy) {
  const std::string cut = Truncated(Av1Video(), "cut.mkv", 0.6);
  OpenVideo v;
  ASSERT_EQ(v.Open(cut, DefaultOptions()), CV_OK) << v.error();
  const int64_t n = v.Metadata().num_frames_from_scan;
  EXPECT_GT(n, 0);
  EXPECT_LT(n, 20);
  std::vector<uint8_t> frame;
  for (int64_t i = n - 1; i >= 0; --i) {
    cv_status s = v.Decode(i, &frame);
    EXPECT_TRUE(s == CV_OK || s == CV_ERROR_CORRUPT_DATA) << s << " " << v.error();
    if (s != CV_OK) EXPECT_THAT(v.error(), HasSubstr("video 'cut.mkv': frame "));
  }
  EXPECT_EQ(v.Decode(0, &frame), CV_OK) << v.error();
  // Approximate mode believes the header's frame count, then finds the end.
  cv_open_options o = DefaultOptions();
  o.seek_mode = CV_SEEK_APPROXIMATE;
  OpenVideo a;
  if (a.Open(cut, o) == CV_OK) {
    for (int64_t i = 0; i < 30; ++i) {
      cv_status s = a.Decode(i, &frame);
      if (s == CV_OK) continue;
      EXPECT_TRUE(s == CV_ERROR_OUT_OF_RANGE || s == CV_ERROR_CORRUPT_DATA) << a.error();
      break;
    }
  }
}

TEST(Dav1dBackendErrorsTest, CorruptPacketsAreErrorsNotCrashes) {
  // Garbage over the middle of an IVF file (its 32-byte header intact).
  const std::string ivf = MakeVideo("clean.ivf",
                                    "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 20 -c:v libaom-av1 "
                                    "-cpu-used 8 -g 5 -pix_fmt yuv420p");
  std::ifstream in(ivf, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint32_t state = 12345;
  for (size_t i = bytes.size() / 3; i < bytes.size() * 2 / 3; i += 7) {
    state = state * 1103515245 + 12345;
    bytes[i] = static_cast<char>(state >> 24);
  }
  const std::string bad = WriteFile("garbled.ivf", bytes);
  OpenVideo v;
  cv_status s = v.Open(bad, DefaultOptions());
  ASSERT_TRUE(s == CV_OK || s == CV_ERROR_CORRUPT_DATA) << v.error();
  if (s != CV_OK) return;
  std::vector<uint8_t> frame;
  const int64_t n = v.Metadata().num_frames_from_scan;
  for (int64_t i = 0; i < n; ++i) {
    s = v.Decode(i, &frame);
    EXPECT_TRUE(s == CV_OK || s == CV_ERROR_CORRUPT_DATA) << s << " " << v.error();
  }
}

TEST(Dav1dBackendErrorsTest, OutOfRangeIndices) {
  OpenVideo v;
  ASSERT_EQ(v.Open(Av1Video(), DefaultOptions()), CV_OK) << v.error();
  std::vector<uint8_t> frame;
  EXPECT_EQ(v.Decode(20, &frame), CV_ERROR_OUT_OF_RANGE);
  EXPECT_THAT(v.error(), HasSubstr("video 'err_av1.mkv': frame 20 is past the end: the stream has 20 frames"));
  EXPECT_EQ(v.Decode(-1, &frame), CV_ERROR_OUT_OF_RANGE);
  EXPECT_THAT(v.error(), HasSubstr("frame -1 is out of range"));
  EXPECT_EQ(v.Decode(19, &frame), CV_OK) << v.error();  // still usable
}

TEST(Dav1dBackendErrorsTest, BadRequests) {
  const std::string path = Av1Video();
  cv_open_options o = DefaultOptions();
  o.seek_mode = 9;
  OpenVideo seek;
  EXPECT_EQ(seek.Open(path, o), CV_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(seek.error(), HasSubstr("seek mode 9"));
  o = DefaultOptions();
  o.output_format = 17;
  OpenVideo format;
  EXPECT_EQ(format.Open(path, o), CV_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(format.error(), HasSubstr("output format 17"));
  o = DefaultOptions();
  o.decoder_threads = 100000;
  OpenVideo threads;
  EXPECT_EQ(threads.Open(path, o), CV_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(threads.error(), HasSubstr("decoder_threads 100000"));
  o = DefaultOptions();
  o.output_width = 100000;
  OpenVideo size;
  EXPECT_EQ(size.Open(path, o), CV_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(size.error(), HasSubstr("output size 100000x0 asked for"));

  OpenVideo v;
  ASSERT_EQ(v.Open(path, DefaultOptions()), CV_OK) << v.error();
  std::vector<uint8_t> small(10);
  cv_frame_buffer buffer{.data = small.data(), .capacity = small.size()};
  cv_error error{};
  EXPECT_EQ(Backend().decode_frame(v.get(), 0, &buffer, nullptr, &error), CV_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(error.message, HasSubstr("the frame buffer holds 10 bytes"));
  EXPECT_EQ(Backend().decode_frame(nullptr, 0, &buffer, nullptr, &error), CV_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Backend().get_metadata(v.get(), nullptr, &error), CV_ERROR_INVALID_ARGUMENT);
}

TEST(Dav1dBackendErrorsTest, OlderSmallerOptionsStructStillOpens) {
  // A runner built against an older header passes fewer fields.
  cv_open_options o = DefaultOptions();
  o.struct_size = offsetof(cv_open_options, output_width);
  OpenVideo v;
  ASSERT_EQ(v.Open(Av1Video(), o), CV_OK) << v.error();
  EXPECT_EQ(v.Layout().width, 64u);
}

}  // namespace
}  // namespace dav1d_plugin::testing
