// File: examples/vendor_backend/test_support.h
//
// Test helpers for the dav1d plugin: the plugin loaded in process through
// dlopen exactly as the runner loads it, AV1 sample videos made at test time
// with the ffmpeg CLI (tools/common/test_video.h), and the CLI's own decode
// of them as the reference. Test-only (the plugin itself depends on the SDK
// header and system libraries only); not thread-safe.

#ifndef CODECVISOR_EXAMPLES_VENDOR_BACKEND_TEST_SUPPORT_H_
#define CODECVISOR_EXAMPLES_VENDOR_BACKEND_TEST_SUPPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sdk.h"

namespace dav1d_plugin::testing {

// The plugin's table, from the library named by $DAV1D_BACKEND_SO (Bazel
// sets it) or ./libcodecvisor_dav1d.so; fails the test if it cannot load.
const cv_backend_v1& Backend();
cv_backend* BackendInstance();

// An open session on a file, closed (with its descriptor) on destruction.
class OpenVideo {
 public:
  OpenVideo() = default;
  OpenVideo(const OpenVideo&) = delete;
  OpenVideo& operator=(const OpenVideo&) = delete;
  ~OpenVideo();

  // Opens `path` with `options` (label: the file's base name); returns the
  // status and keeps the error message.
  cv_status Open(const std::string& path, cv_open_options options);
  cv_session* get() const { return session_; }
  const std::string& error() const { return error_; }

  cv_stream_metadata Metadata();
  cv_frame_layout Layout();
  // get_streams with room for `capacity` entries: the entries written.
  std::vector<cv_stream_info> Streams(uint32_t capacity = CV_MAX_STREAMS);
  // Decodes frame `index`; the status, with the pixels in `out`.
  cv_status Decode(int64_t index, std::vector<uint8_t>* out, cv_frame_info* info = nullptr);

 private:
  int fd_ = -1;
  cv_session* session_ = nullptr;
  std::string error_;
};

// Options as the runner fills them: exact mode, RGB24, stream -1.
cv_open_options DefaultOptions();

struct SampleVideo {
  const char* name;    // file name, its extension picks the container
  const char* encode;  // ffmpeg arguments between the input and the file
};
// The AV1 samples: odd sizes, several key frames, 4:2:0/4:4:4/gray, 8 and 10
// bits, limited and full range, BT.601 and BT.709, mp4, mkv, webm and ivf.
const std::vector<SampleVideo>& SampleVideos();

// The folder the tests write into ($TEST_TMPDIR, or a fresh temporary one).
std::string TempDir();
// `name` made once per process with ffmpeg `args` ("-f lavfi -i ..." and
// encoder options, split at spaces: no shell quoting); returns its path.
std::string MakeVideo(const std::string& name, const std::string& args);
// Runs a shell command; its stdout, or the test fails.
std::string Run(const std::string& command);
// Every frame of the file's first video stream as ffmpeg decodes and
// converts it (-vf format=FMT -f rawvideo, passthrough timing).
std::vector<uint8_t> ReferenceFrames(const std::string& path, const std::string& filter);
// Frame `n` exactly as the brief's command writes it:
//   ffmpeg -i FILE -map 0:v:0 -vf "select=eq(n\,N),format=rgb24" -f rawvideo -
std::vector<uint8_t> ReferenceFrameBySelect(const std::string& path, int64_t n);
// ffprobe's frame timestamps (pts, or best effort) in stream time-base units.
std::vector<int64_t> ProbeFramePts(const std::string& path);
// ffprobe's value for a stream entry (e.g. "pix_fmt").
std::string ProbeStream(const std::string& path, const std::string& entry);
// ffprobe's value for a container entry (e.g. "duration").
std::string ProbeFormat(const std::string& path, const std::string& entry);

}  // namespace dav1d_plugin::testing

#endif  // CODECVISOR_EXAMPLES_VENDOR_BACKEND_TEST_SUPPORT_H_
