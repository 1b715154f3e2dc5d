// File: backends/cpu/cpu_backend_errors_test.cc
//
// Bad input to the cpu backend: files that are not video, have no video
// stream, are truncated or corrupt; bad options, descriptors, indices, times
// and buffers. Each must give the documented cv_status with a message naming
// the file label, never crash, and leave the process able to decode a good
// file in a fresh session (checked after every case).

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/ffmpeg_log.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

extern "C" {
#include <libavutil/log.h>
}

namespace codecvisor::cpu {
namespace {

using testing::CliAllFrames;
using testing::CliFrame;
using testing::GoodMp4;
using testing::MakeVideo;
using testing::ReadFile;
using testing::TestSession;
using testing::WriteFile;

std::string GoodMkv() {
  return MakeVideo("good.mkv",
                   "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 40 -c:v libx264 "
                   "-preset veryfast -bf 2 -g 10 -pix_fmt yuv420p");
}

// A committed input of the decode fuzzer's seed corpus (testdata/decode_corpus).
std::string CorpusFile(const std::string& name) {
  const char* runfiles = std::getenv("TEST_SRCDIR");
  return absl::StrCat(runfiles != nullptr ? runfiles : ".",
                      "/codecvisor/backends/cpu/testdata/decode_corpus/", name);
}

class BadInputTest : public ::testing::Test {
 protected:
  // Every test ends by proving the backend still decodes a good file.
  void TearDown() override {
    TestSession s(GoodMp4());
    ASSERT_TRUE(s.ok()) << s.open_message();
    EXPECT_TRUE(s.DecodeOrFail(17) == CliFrame(GoodMp4(), 0, 17, "format=rgb24", 64 * 48 * 3));
  }

  // Opens `path` expecting `status` and a message naming `label`.
  void ExpectOpenFails(const std::string& path, cv_status status, const std::string& label,
                       const std::string& cause = "") {
    TestSession s(path, TestSession::Options(), label);
    EXPECT_EQ(s.open_status(), status) << s.open_message();
    EXPECT_NE(s.open_message().find("'" + label + "'"), std::string::npos) << s.open_message();
    EXPECT_NE(s.open_message().find(cause), std::string::npos) << s.open_message();
  }
};

// The decode fuzzer's finding under UBSan: FFmpeg's AV1 parser copies the
// sequence header's colour values into AVCodecParameters unchecked, and
// 254 is in none of FFmpeg's enums; reading it through the enum type was
// undefined behaviour. The files are 3- and 4-frame 64x48 AV1 streams whose
// matrix_coefficients (and in the second, primaries 200 and transfer 201)
// were rewritten in the sequence header. ffprobe says "unknown" for such
// values, and the CLI converts with BT.601, as for an unspecified matrix.
TEST_F(BadInputTest, ColourValuesNoEnumHoldsAreUnknownAndConvertAsUnspecified) {
  struct Case {
    const char* file;
    const char* primaries;
    const char* transfer;
    int64_t frames;
  };
  for (const Case& c : {Case{"regression_ubsan_av1_colorspace_254.ivf", "bt470m", "smpte240m", 3},
                        Case{"regression_ubsan_av1_cicp_out_of_range.ivf", "unknown", "unknown", 4}}) {
    SCOPED_TRACE(c.file);
    const std::string path = CorpusFile(c.file);
    TestSession s(path);
    ASSERT_TRUE(s.ok()) << s.open_message();
    const cv_stream_metadata m = s.Metadata();
    EXPECT_STREQ(m.codec, "av1");
    EXPECT_STREQ(m.pixel_format, "yuv420p");
    EXPECT_STREQ(m.color_space, "unknown");
    EXPECT_STREQ(m.color_range, "tv");
    EXPECT_STREQ(m.color_primaries, c.primaries);
    EXPECT_STREQ(m.color_transfer, c.transfer);
    EXPECT_EQ(m.width, 64u);
    EXPECT_EQ(m.height, 48u);
    EXPECT_EQ(m.num_frames_from_scan, c.frames);
    for (int64_t i = 0; i < c.frames; ++i) {
      EXPECT_TRUE(s.DecodeOrFail(i) == CliFrame(path, 0, i, "format=rgb24", 64 * 48 * 3)) << i;
    }
  }
}

// With the backend's memory short, FFmpeg's H.264 decoder goes on past an
// allocation that failed (error concealment's "guess_dc() is out of
// memory", then pictures without their references), and its frames are
// garbage that no error reports (hundreds of wrong frames a minute under
// memory_mb = 500, none of them an error). A failure reported (here FFmpeg's
// own line, logged at the quiet default) fails the next frame with
// kResourceExhausted, and the request after starts again from a key frame
// and gives the CLI's frames, in either mode.
TEST_F(BadInputTest, FramesAfterAnAllocationFailedAreRefusedThenDecodedAfresh) {
  const std::string good = GoodMp4();
  for (bool approximate : {false, true}) {
    SCOPED_TRACE(approximate ? "approximate" : "exact");
    TestSession s(good, approximate ? TestSession::Approximate() : TestSession::Options());
    ASSERT_TRUE(s.ok()) << s.open_message();
    std::string pixels, message;
    for (int64_t i = 0; i < 5; ++i) ASSERT_EQ(s.Decode(i, &pixels, nullptr, &message), CV_OK) << message;
    av_log(nullptr, AV_LOG_ERROR, "guess_dc() is out of memory\n");
    EXPECT_EQ(s.Decode(5, &pixels, nullptr, &message), CV_ERROR_RESOURCE_EXHAUSTED) << message;
    EXPECT_NE(message.find("the decoder ran out of memory"), std::string::npos) << message;
    for (int64_t i : {5, 6, 20})
      EXPECT_TRUE(s.DecodeOrFail(i) == CliFrame(good, 0, i, "format=rgb24", 64 * 48 * 3)) << i;
    // By time, a frame or two on: the frame before is not given instead.
    av_log(nullptr, AV_LOG_ERROR, "guess_dc() is out of memory\n");
    EXPECT_EQ(s.DecodeAt(0.85, &pixels, nullptr, &message), CV_ERROR_RESOURCE_EXHAUSTED) << message;
    ASSERT_EQ(s.DecodeAt(0.85, &pixels, nullptr, &message), CV_OK) << message;
    EXPECT_TRUE(pixels == CliFrame(good, 0, 21, "format=rgb24", 64 * 48 * 3));
  }
}

TEST_F(BadInputTest, TextFileIsNotAVideo) {
  std::string path = WriteFile("notes.txt", "These are not the frames you are looking for.\n");
  ExpectOpenFails(path, CV_ERROR_CORRUPT_DATA, "notes.txt", "cannot be demuxed");
}

// A sound file whose frames are past the backend's 16384 per side: not
// decodable here, as a codec without a decoder is, and not corrupt.
TEST_F(BadInputTest, FramesLargerThanTheBackendDecodesAreUnsupported) {
  ExpectOpenFails(MakeVideo("wide.mkv", "-f lavfi -i color=red:size=16400x16:rate=5 -frames:v 3 -c:v ffv1"),
                  CV_ERROR_UNSUPPORTED, "wide.mkv", "frames of 16400x16 are larger than this backend decodes");
}

// An MP4 whose time-to-sample table claims 2^32 - 1 entries: FFmpeg
// refuses the size with ENOMEM, allocating nothing. With memory to spare
// that is the file's fault (a batch job skips it), not a backend short of
// memory to replace.
TEST_F(BadInputTest, ASizeFfmpegRefusesAsTooLargeIsTheFilesFault) {
  std::string bytes = ReadFile(GoodMp4());
  const size_t stts = bytes.find("stts");
  ASSERT_NE(stts, std::string::npos);
  // The box: size, "stts", version and flags, the entry count.
  bytes.replace(stts + 8, 4, std::string(4, '\xff'));
  const uint64_t failures = AllocationFailures();
  ExpectOpenFails(WriteFile("stts.mp4", bytes), CV_ERROR_CORRUPT_DATA, "stts.mp4",
                  "FFmpeg refused a size in its header as too large");
  EXPECT_EQ(AllocationFailures(), failures) << "counted as the backend's memory running out";
}

TEST_F(BadInputTest, EmptyFile) {
  ExpectOpenFails(WriteFile("empty.mp4", ""), CV_ERROR_CORRUPT_DATA, "empty.mp4",
                  "cannot be demuxed");
}

TEST_F(BadInputTest, RandomBytes) {
  std::mt19937 rng(1234);
  std::string bytes(100000, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  TestSession s(WriteFile("noise.bin", bytes), TestSession::Options(), "noise.bin");
  EXPECT_TRUE(s.open_status() == CV_ERROR_CORRUPT_DATA || s.open_status() == CV_ERROR_NOT_FOUND)
      << s.open_message();
  EXPECT_NE(s.open_message().find("'noise.bin'"), std::string::npos);
}

// SECURITY: containers that name other resources must not make the backend
// open them (the sandbox would refuse too; the demuxer refuses first).
TEST_F(BadInputTest, ReferencesToOtherFilesAndUrlsAreRefused) {
  const std::string good = GoodMp4();
  struct Case {
    const char* name;
    std::string text;
  } cases[] = {
      {"playlist.m3u8", "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nfile://" + good +
                            "\n#EXT-X-ENDLIST\n"},
      {"list.ffconcat", "ffconcat version 1.0\nfile '" + good + "'\n"},
      {"stream.sdp",
       "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nt=0 0\n"
       "m=video 5004 RTP/AVP 96\na=rtpmap:96 H264/90000\n"},
  };
  for (const Case& c : cases) {
    TestSession s(WriteFile(c.name, c.text), TestSession::Options(), c.name);
    EXPECT_FALSE(s.ok()) << c.name;
    EXPECT_NE(s.open_message().find(std::string("'") + c.name + "'"), std::string::npos)
        << s.open_message();
  }
}

TEST_F(BadInputTest, AudioOnlyFileHasNoVideoStream) {
  std::string path = MakeVideo("tone.wav", "-f lavfi -i sine=frequency=440:duration=1");
  ExpectOpenFails(path, CV_ERROR_NOT_FOUND, "tone.wav", "has no video stream");
}

// A song with its album's cover: the picture is a stream, but not a video.
TEST_F(BadInputTest, CoverImageIsNamedWhenThereIsNoVideoStream) {
  std::string path =
      MakeVideo("song.m4a",
                "-f lavfi -i sine=duration=1 -f lavfi -i color=red:size=32x32:rate=25:duration=0.04 -map 0 "
                "-map 1 -c:a aac -c:v mjpeg -disposition:v:0 attached_pic");
  ExpectOpenFails(path, CV_ERROR_NOT_FOUND, "song.m4a", "has no video stream (2 streams in the mov,mp4");
  ExpectOpenFails(path, CV_ERROR_NOT_FOUND, "song.m4a", "; stream 1 is a cover image, not a video)");
}

// A Matroska video track without a packet (the audio of a recording whose
// video was cut away): the container gives its size, but no frame says
// its pixel format. The message says the track may hold no frames, where
// it spoke of a header that could not be decoded alone.
TEST_F(BadInputTest, AVideoTrackWithoutFramesSaysItMayHoldNone) {
  std::string path = MakeVideo("no_frames.mkv",
                               "-f lavfi -i sine=d=2 -f lavfi -i testsrc2=s=320x240:r=25:d=2 -map 1:v -map 0:a "
                               "-vf trim=start=100 -c:v libx264 -c:a aac");
  ExpectOpenFails(path, CV_ERROR_CORRUPT_DATA, "no_frames.mkv", "or the track holds no frames");
}

TEST_F(BadInputTest, MissingStreamIndex) {
  TestSession::Options o;
  o.stream_index = 7;
  TestSession s(GoodMp4(), o, "good.mp4");
  EXPECT_EQ(s.open_status(), CV_ERROR_NOT_FOUND);
  EXPECT_NE(s.open_message().find("has no stream 7"), std::string::npos) << s.open_message();
}

TEST_F(BadInputTest, TruncatedMp4WithoutItsIndex) {
  // ffmpeg writes the moov atom last: half the file has no index at all.
  std::string bytes = ReadFile(GoodMp4());
  std::string path = WriteFile("truncated.mp4", bytes.substr(0, bytes.size() / 2));
  // Named as FFmpeg names it, and what that means: not "not a video
  // container?" alone, for the commonest broken file.
  ExpectOpenFails(path, CV_ERROR_CORRUPT_DATA, "truncated.mp4",
                  "FFmpeg says 'moov atom not found': an MP4 or MOV without its index, as a recording or download "
                  "cut short leaves it");
}

// A file cut short with its index intact (moov first): the last packet is
// partial and does not decode. The scan counts only the frames that do, so
// decoding every frame it reports works, and they are the CLI's frames.
TEST_F(BadInputTest, TruncatedFileCountsTheFramesThatDecode) {
  const std::string whole =
      MakeVideo("faststart.mp4",
                "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 40 -c:v libx264 "
                "-preset veryfast -bf 2 -g 10 -pix_fmt yuv420p -movflags +faststart");
  // Raw video in NUT: a frame cut through is not flagged corrupt, only shorter.
  const std::string raw = MakeVideo("raw.nut", "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 40 -c:v rawvideo "
                                               "-pix_fmt yuv420p");
  for (const auto& [source, extension] : {std::pair{whole, ".mp4"}, std::pair{raw, ".nut"}}) {
    const std::string bytes = ReadFile(source);
    for (int percent : {50, 70, 85}) {
      const std::string name = absl::StrCat("cut_", percent, extension);
      const std::string path = WriteFile(name, bytes.substr(0, bytes.size() * percent / 100));
      const std::string cli = testing::CliAllFrames(path, 0, "format=rgb24");
      const size_t frame_bytes = 64 * 48 * 3;
      TestSession s(path, TestSession::Options(), name);
      ASSERT_TRUE(s.ok()) << s.open_message();
      const int64_t n = s.Metadata().num_frames_from_scan;
      EXPECT_EQ(static_cast<size_t>(n), cli.size() / frame_bytes) << name;
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_TRUE(s.DecodeOrFail(i) == cli.substr(i * frame_bytes, frame_bytes))
            << name << " frame " << i;
      }
    }
  }
}

// Decodes every frame of `path` in order and a few out of order; each must
// work or fail with CV_ERROR_CORRUPT_DATA naming the label.
void DecodeEverythingGracefully(const std::string& path, const std::string& label) {
  TestSession s(path, TestSession::Options(), label);
  if (!s.ok()) {
    EXPECT_EQ(s.open_status(), CV_ERROR_CORRUPT_DATA) << s.open_message();
    return;
  }
  const int64_t n = s.Metadata().num_frames_from_scan;
  std::string pixels, message;
  for (int64_t i : {n - 1, int64_t{0}, n / 2}) {
    cv_status st = s.Decode(i, &pixels, nullptr, &message);
    EXPECT_TRUE(st == CV_OK || st == CV_ERROR_CORRUPT_DATA) << message;
  }
  for (int64_t i = 0; i < n; ++i) {
    cv_status st = s.Decode(i, &pixels, nullptr, &message);
    EXPECT_TRUE(st == CV_OK || st == CV_ERROR_CORRUPT_DATA) << message;
    if (st != CV_OK) EXPECT_NE(message.find("'" + label + "'"), std::string::npos) << message;
  }
  EXPECT_EQ(s.Decode(n, &pixels, nullptr, &message), CV_ERROR_OUT_OF_RANGE);
}

TEST_F(BadInputTest, TruncatedMatroskaDecodesWhatIsThere) {
  std::string bytes = ReadFile(GoodMkv());
  std::string path = WriteFile("truncated.mkv", bytes.substr(0, bytes.size() * 2 / 3));
  TestSession s(path, TestSession::Options(), "truncated.mkv");
  ASSERT_TRUE(s.ok()) << s.open_message();
  EXPECT_LT(s.Metadata().num_frames_from_scan, 40);
  EXPECT_GT(s.Metadata().num_frames_from_scan, 10);
  DecodeEverythingGracefully(path, "truncated.mkv");
}

TEST_F(BadInputTest, CorruptPacketsAreErrorsNotCrashes) {
  std::string bytes = ReadFile(GoodMkv());
  std::mt19937 rng(42);
  // Damage the middle of the file (after the header) in a few places.
  for (int k = 0; k < 6; ++k) {
    size_t at = bytes.size() / 4 + rng() % (bytes.size() / 2);
    for (size_t j = at; j < std::min(bytes.size(), at + 200); ++j)
      bytes[j] = static_cast<char>(rng());
  }
  DecodeEverythingGracefully(WriteFile("corrupt.mkv", bytes), "corrupt.mkv");
  // The same with only a few bits flipped all over the payload.
  bytes = ReadFile(GoodMp4());
  for (size_t j = 2000; j + 1000 < bytes.size(); j += 997) bytes[j] ^= 0x5a;
  DecodeEverythingGracefully(WriteFile("bitflips.mp4", bytes), "bitflips.mp4");
}

TEST_F(BadInputTest, IndicesAndTimesOutOfRange) {
  const cv_backend_v1* t = codecvisor_backend_v1();
  for (cv_seek_mode mode : {CV_SEEK_EXACT, CV_SEEK_APPROXIMATE}) {
    TestSession::Options o;
    o.seek_mode = mode;
    TestSession s(GoodMp4(), o, "good.mp4");
    ASSERT_TRUE(s.ok());
    std::string pixels, message;
    EXPECT_EQ(s.Decode(40, &pixels, nullptr, &message), CV_ERROR_OUT_OF_RANGE);
    EXPECT_NE(message.find("'good.mp4': frame 40 is past the end: the stream has 40 frames"),
              std::string::npos)
        << message;
    EXPECT_EQ(s.Decode(-1, &pixels, nullptr, &message), CV_ERROR_OUT_OF_RANGE);
    cv_frame_info info{};
    cv_error error{};
    EXPECT_EQ(t->get_frame_info(s.get(), 1000, &info, &error), CV_ERROR_OUT_OF_RANGE);
    int64_t index = 0;
    EXPECT_EQ(t->index_at_seconds(s.get(), -0.5, &index, &error), CV_ERROR_OUT_OF_RANGE);
    EXPECT_EQ(t->index_at_seconds(s.get(), 1.6, &index, &error), CV_ERROR_OUT_OF_RANGE);
    EXPECT_NE(std::string(error.message).find("'good.mp4'"), std::string::npos);
    EXPECT_EQ(t->index_at_seconds(s.get(), std::nan(""), &index, &error),
              CV_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ(t->index_at_seconds(s.get(), 1.599, &index, &error), CV_OK) << error.message;
    EXPECT_EQ(index, 39);
    // The session still works after its errors.
    EXPECT_EQ(s.Decode(39, &pixels, nullptr, &message), CV_OK) << message;
  }
}

TEST_F(BadInputTest, BufferTooSmall) {
  TestSession s(GoodMp4(), TestSession::Options(), "good.mp4");
  ASSERT_TRUE(s.ok());
  std::string small(100, '\0');
  cv_frame_buffer buffer{.data = reinterpret_cast<uint8_t*>(small.data()), .capacity = small.size()};
  cv_error error{};
  EXPECT_EQ(codecvisor_backend_v1()->decode_frame(s.get(), 0, &buffer, nullptr, &error),
            CV_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error.message).find("holds 100 bytes"), std::string::npos) << error.message;
}

TEST_F(BadInputTest, BadOptions) {
  const std::string path = GoodMp4();
  TestSession::Options o;
  o.seek_mode = 7;
  EXPECT_EQ(TestSession(path, o).open_status(), CV_ERROR_INVALID_ARGUMENT);
  o = {};
  o.output_format = -1;
  EXPECT_EQ(TestSession(path, o).open_status(), CV_ERROR_INVALID_ARGUMENT);
  o = {};
  o.output_width = 1 << 20;
  EXPECT_EQ(TestSession(path, o).open_status(), CV_ERROR_INVALID_ARGUMENT);
}

TEST_F(BadInputTest, BadDescriptors) {
  const cv_backend_v1* t = codecvisor_backend_v1();
  cv_backend* backend = nullptr;
  cv_error error{};
  ASSERT_EQ(t->create("", &backend, &error), CV_OK);
  cv_open_options o{};
  o.struct_size = sizeof(o);
  o.stream_index = -1;
  o.file_label = "gone.mp4";
  cv_session* session = nullptr;
  EXPECT_EQ(t->open_session(backend, -1, &o, &session, &error), CV_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error.message).find("'gone.mp4'"), std::string::npos) << error.message;
  int fd = open(GoodMp4().c_str(), O_RDONLY);
  close(fd);
  EXPECT_EQ(t->open_session(backend, fd, &o, &session, &error), CV_ERROR_INVALID_ARGUMENT);
  int dir = open("/", O_RDONLY | O_DIRECTORY);
  EXPECT_EQ(t->open_session(backend, dir, &o, &session, &error), CV_ERROR_INVALID_ARGUMENT);
  close(dir);
  EXPECT_EQ(session, nullptr);
  EXPECT_EQ(t->open_session(backend, 0, nullptr, &session, &error), CV_ERROR_INVALID_ARGUMENT);
  t->destroy(backend);
}

TEST_F(BadInputTest, OlderRunnerWithShorterOptions) {
  // A runner built against a struct without file_label: the label defaults.
  const cv_backend_v1* t = codecvisor_backend_v1();
  cv_backend* backend = nullptr;
  cv_error error{};
  ASSERT_EQ(t->create("", &backend, &error), CV_OK);
  cv_open_options o{};
  o.struct_size = offsetof(cv_open_options, file_label);
  o.stream_index = 5;
  o.file_label = "ignored";
  int fd = open(GoodMp4().c_str(), O_RDONLY);
  cv_session* session = nullptr;
  EXPECT_EQ(t->open_session(backend, fd, &o, &session, &error), CV_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(error.message).find(absl::StrCat("'fd ", fd, "'")), std::string::npos)
      << error.message;
  close(fd);
  t->destroy(backend);
}

}  // namespace
}  // namespace codecvisor::cpu
