// File: backends/cpu/test_media.h
//
// Test support for the cpu backend: makes small videos at test time with the
// ffmpeg CLI (/usr/bin/ffmpeg) in $TEST_TMPDIR, asks the CLI and ffprobe for
// reference frames and timestamps, and opens sessions through the C ABI.
// Test-only; single-threaded.

#ifndef CODECVISOR_BACKENDS_CPU_TEST_MEDIA_H_
#define CODECVISOR_BACKENDS_CPU_TEST_MEDIA_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "backends/sdk/codecvisor_backend.h"

namespace codecvisor::cpu::testing {

// One test video: `args` are the ffmpeg arguments before the output path.
// With `remux_of`, `args` are the output options of a stream copy of that
// catalogue video (e.g. to give it a display matrix).
struct TestVideo {
  const char* name;
  const char* args;
  int stream;          // the video stream tests use
  bool constant_rate;  // approximate mode finds the same frames as exact mode
  const char* remux_of = nullptr;
  // Approximate mode scans it as exact mode does (a packed MPEG-4
  // bitstream, whose container times it cannot use).
  bool approximate_scans = false;
  // With `remux_of`: ffmpeg options before its -i (a cut: -ss).
  const char* remux_input_args = "";
};
void PrintTo(const TestVideo& video, std::ostream* os);
// The video's name with every character but letters and digits as '_': a
// parameterised test's name.
std::string TestName(const TestVideo& video);

// The catalogue every conformance test runs on, and one of them by name.
const std::vector<TestVideo>& TestVideos();
const TestVideo& FindTestVideo(const std::string& name);
// Makes the video (once per test binary) and returns its path.
std::string TestVideoPath(const TestVideo& video);

// Runs `command` with /bin/sh (tools/common/subprocess.h) and returns its
// stdout (binary-safe). Records a test failure, with the command and the
// end of its stderr, if it exits non-zero.
std::string Run(const std::string& command);

// $TEST_TMPDIR/name (or /tmp/name outside Bazel).
std::string TempPath(const std::string& name);

// Runs `ffmpeg -y -v error <args> <TempPath(name)>` unless that file exists
// (tools/common/test_video.h: `args` are split at spaces, with no shell
// quoting), and returns the path.
std::string MakeVideo(const std::string& name, const std::string& args);

// good.mp4: 40 frames of 64x48 H.264 at 25 fps, B-frames, a key frame
// every 10 (MakeVideo's).
std::string GoodMp4();

// Writes `bytes` to TempPath(name) and returns the path.
std::string WriteFile(const std::string& name, const std::string& bytes);
std::string ReadFile(const std::string& path);

// Frame `n` of stream `stream` as the CLI converts it:
//   ffmpeg -i PATH -map 0:S -vf "select=eq(n\,N),<filters>" <output_args> -f rawvideo -
// with <filters> e.g. "format=rgb24"; a last "format=F" goes to the output
// as -pix_fmt F, where the CLI converts after its autorotation (as `ffmpeg
// -i PATH -pix_fmt rgb24` does). The CLI may repeat the frame (constant
// frame rate output); only the first `frame_bytes` are returned.
std::string CliFrame(const std::string& path, int stream, int64_t n, const std::string& filters,
                     size_t frame_bytes, const std::string& output_args = "");

// Every frame of stream `stream`, converted by `filters` (a last "format=F"
// as in CliFrame), one after another (-fps_mode passthrough: no frame
// repeated or dropped).
std::string CliAllFrames(const std::string& path, int stream, const std::string& filters);

// Every frame's timestamp (best_effort_timestamp: its pts, or the decoder's guess
// when its packet had none) of stream `stream`, as ffprobe -show_frames reports
// it, in output order; and every packet's (pts, duration), in file order.
std::vector<int64_t> ProbeFramePts(const std::string& path, int stream);
struct ProbedPacket {
  int64_t pts;
  int64_t duration;
  int64_t size;
  int64_t pos;  // byte offset in the file
};
std::vector<ProbedPacket> ProbePackets(const std::string& path, int stream);

// Bytes of a `layout`-sized RGB24 frame.
size_t RgbBytes(const cv_frame_layout& layout);
// 0 .. n-1 in an order fixed by `seed`.
std::vector<int64_t> Shuffled(int64_t n, unsigned seed);

// Opens `path` and checks that every frame, read in order, is the
// `frame_bytes` at its place in `cli` (the CLI's frames one after
// another, as many as the session counts) and that times increase; returns
// each frame's time (pts).
std::vector<int64_t> ExpectInOrderIsTheClis(const std::string& path, const std::string& cli, size_t frame_bytes);

// Opens `path` again and checks, at random (an order fixed by `seed`),
// that every frame is the `frame_bytes` at its place in `cli` (the CLI's
// frames one after another) with `pts[i]` as its time (as read in order),
// and that index_at_seconds of every `time_step`-th frame's time finds it.
void ExpectRandomAccessAgrees(const std::string& path, const std::string& cli, size_t frame_bytes,
                              const std::vector<int64_t>& pts, unsigned seed, int64_t time_step);

// One session opened through the C ABI of the in-process cpu backend. The
// descriptor is the test's, closed after close_session as the runner does.
class TestSession {
 public:
  struct Options {
    int32_t stream_index = -1;
    // Raw ints, as a C runner may pass any value.
    int32_t seek_mode = CV_SEEK_EXACT;
    int32_t output_format = CV_OUTPUT_RGB24;
    uint32_t decoder_threads = 0;
    uint32_t output_width = 0;
    uint32_t output_height = 0;
    const char* native_formats = nullptr;  // cv_open_options.native_formats
    cv_frame_pool* frame_pool = nullptr;
    cv_cancel_check* cancel_check = nullptr;
  };
  // Options for an approximate-mode session, the rest default.
  static Options Approximate() {
    Options o;
    o.seek_mode = CV_SEEK_APPROXIMATE;
    return o;
  }
  TestSession(const std::string& path, const Options& options, const std::string& label = "");
  TestSession(const std::string& path) : TestSession(path, Options()) {}
  TestSession(const TestSession&) = delete;
  TestSession& operator=(const TestSession&) = delete;
  ~TestSession();

  bool ok() const { return session_ != nullptr; }
  cv_status open_status() const { return open_status_; }
  const std::string& open_message() const { return open_message_; }
  cv_session* get() const { return session_; }

  cv_stream_metadata Metadata() const;
  cv_frame_layout Layout() const;
  // Decodes frame `index`; returns the status and fills `pixels` (layout
  // size), `info` and `message`.
  cv_status Decode(int64_t index, std::string* pixels, cv_frame_info* info = nullptr,
                   std::string* message = nullptr);
  // Decodes the frame played at `seconds` (decode_frame_at_seconds), as
  // Decode does.
  cv_status DecodeAt(double seconds, std::string* pixels, cv_frame_info* info = nullptr,
                     std::string* message = nullptr);
  // Decodes frame `index`, recording a failure unless it works.
  std::string DecodeOrFail(int64_t index, cv_frame_info* info = nullptr);

 private:
  cv_status DecodeWith(absl::FunctionRef<cv_status(cv_frame_buffer*, cv_frame_info*, cv_error*)> decode,
                       std::string* pixels, cv_frame_info* info, std::string* message);

  int fd_ = -1;
  cv_backend* backend_ = nullptr;
  cv_session* session_ = nullptr;
  cv_status open_status_ = CV_OK;
  std::string open_message_;
};

}  // namespace codecvisor::cpu::testing

#endif  // CODECVISOR_BACKENDS_CPU_TEST_MEDIA_H_
