// File: examples/vendor_backend/test_support.cc

#include "test_support.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "gtest/gtest.h"
#include "tools/common/subprocess.h"
#include "tools/common/test_video.h"

namespace dav1d_plugin::testing {
namespace {

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

const cv_backend_v1& Backend() {
  static const cv_backend_v1* table = [] {
    const char* env = std::getenv("DAV1D_BACKEND_SO");
    std::string path = env != nullptr && *env != '\0' ? env : "./libcodecvisor_dav1d.so";
    if (path.find('/') == std::string::npos) path = "./" + path;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      std::fprintf(stderr, "cannot load %s: %s\n", path.c_str(), dlerror());
      std::abort();
    }
    auto entry = reinterpret_cast<cv_backend_entry_fn>(dlsym(handle, CODECVISOR_BACKEND_ENTRY));
    if (entry == nullptr || entry() == nullptr) {
      std::fprintf(stderr, "%s has no usable %s\n", path.c_str(), CODECVISOR_BACKEND_ENTRY);
      std::abort();
    }
    return entry();
  }();
  return *table;
}

cv_backend* BackendInstance() {
  static cv_backend* backend = [] {
    cv_backend* b = nullptr;
    cv_error error{};
    if (Backend().create("", &b, &error) != CV_OK) {
      std::fprintf(stderr, "create failed: %s\n", error.message);
      std::abort();
    }
    return b;
  }();
  return backend;
}

cv_open_options DefaultOptions() {
  cv_open_options o{};
  o.struct_size = sizeof(o);
  o.stream_index = -1;
  o.seek_mode = CV_SEEK_EXACT;
  o.output_format = CV_OUTPUT_RGB24;
  o.device = "dav1d";
  return o;
}

OpenVideo::~OpenVideo() {
  if (session_ != nullptr) Backend().close_session(session_);
  if (fd_ >= 0) close(fd_);
}

cv_status OpenVideo::Open(const std::string& path, cv_open_options options) {
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd_, 0) << path;
  const std::string label = BaseName(path);
  options.file_label = label.c_str();
  cv_error error{};
  cv_status status = Backend().open_session(BackendInstance(), fd_, &options, &session_, &error);
  error_ = status == CV_OK ? "" : error.message;
  return status;
}

cv_stream_metadata OpenVideo::Metadata() {
  cv_stream_metadata m{};
  cv_error error{};
  EXPECT_EQ(Backend().get_metadata(session_, &m, &error), CV_OK) << error.message;
  return m;
}

std::vector<cv_stream_info> OpenVideo::Streams(uint32_t capacity) {
  std::vector<cv_stream_info> streams(capacity);
  uint32_t count = 0;
  cv_error error{};
  EXPECT_EQ(Backend().get_streams(session_, streams.data(), capacity, &count, &error), CV_OK) << error.message;
  EXPECT_LE(count, capacity);
  streams.resize(count < capacity ? count : capacity);
  return streams;
}

cv_frame_layout OpenVideo::Layout() {
  cv_frame_layout l{};
  cv_error error{};
  EXPECT_EQ(Backend().get_frame_layout(session_, &l, &error), CV_OK) << error.message;
  return l;
}

cv_status OpenVideo::Decode(int64_t index, std::vector<uint8_t>* out, cv_frame_info* info) {
  out->assign(Layout().size, 0);
  cv_frame_buffer buffer{.data = out->data(), .capacity = out->size()};
  cv_frame_info local{};
  cv_error error{};
  cv_status status = Backend().decode_frame(session_, index, &buffer, info != nullptr ? info : &local, &error);
  error_ = status == CV_OK ? "" : error.message;
  return status;
}

const std::vector<SampleVideo>& SampleVideos() {
  static const std::vector<SampleVideo> videos = {
      {"av1_160x120.mp4",
       "-f lavfi -i testsrc2=size=160x120:rate=30 -frames:v 36 -c:v libaom-av1 -cpu-used 8 "
       "-g 12 -pix_fmt yuv420p"},
      {"av1_odd_75x49.mkv",
       "-f lavfi -i testsrc=size=75x49:rate=25 -frames:v 30 -c:v libaom-av1 -cpu-used 8 -g 8 "
       "-pix_fmt yuv420p"},
      {"av1_10bit_full_bt709.mkv",
       "-f lavfi -i testsrc2=size=66x50:rate=25 -frames:v 24 -c:v libaom-av1 -cpu-used 8 -g 10 "
       "-pix_fmt yuv420p10le -color_range pc -colorspace bt709 -color_primaries bt709 "
       "-color_trc bt709"},
      {"av1_444_bt601.webm",
       "-f lavfi -i testsrc=size=48x34:rate=20 -frames:v 20 -c:v libaom-av1 -cpu-used 8 -g 7 "
       "-pix_fmt yuv444p -colorspace bt470bg"},
      // Starts at 0.5 s: Matroska's segment duration then ends past its span.
      {"av1_late_start.mkv",
       "-f lavfi -i testsrc2=size=64x48:rate=24 -frames:v 36 -c:v libaom-av1 -cpu-used 8 -g 12 "
       "-pix_fmt yuv420p -output_ts_offset 0.5"},
      {"av1_gray.ivf",
       "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 20 -c:v libaom-av1 -cpu-used 8 -g 9 "
       "-pix_fmt gray"},
  };
  return videos;
}

std::string TempDir() {
  static const std::string dir = [] {
    const char* env = std::getenv("TEST_TMPDIR");
    if (env != nullptr && *env != '\0') return std::string(env);
    char pattern[] = "/tmp/dav1d_plugin_test.XXXXXX";
    const char* made = mkdtemp(pattern);
    return std::string(made != nullptr ? made : "/tmp");
  }();
  return dir;
}

std::string Run(const std::string& command) {
  absl::StatusOr<std::string> out = codecvisor::tools::RunForOutput({"/bin/sh", "-c", command});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : "";
}

std::string MakeVideo(const std::string& name, const std::string& args) {
  static std::map<std::string, std::string> made;
  auto it = made.find(name);
  if (it != made.end()) return it->second;
  const std::string path = TempDir() + "/" + name;
  const absl::Status encoded = codecvisor::tools::MakeTestVideo(args, path);
  EXPECT_TRUE(encoded.ok()) << encoded;
  made[name] = path;
  return path;
}

std::vector<uint8_t> ReferenceFrames(const std::string& path, const std::string& filter) {
  std::string out = Run("/usr/bin/ffmpeg -nostdin -v error -i '" + path + "' -map 0:v:0 -fps_mode passthrough -vf '" +
                        filter + "' -f rawvideo -");
  return std::vector<uint8_t>(out.begin(), out.end());
}

std::vector<uint8_t> ReferenceFrameBySelect(const std::string& path, int64_t n) {
  std::string out = Run("/usr/bin/ffmpeg -nostdin -v error -i '" + path + "' -map 0:v:0 -vf 'select=eq(n\\," +
                        std::to_string(n) + "),format=rgb24' -f rawvideo -");
  return std::vector<uint8_t>(out.begin(), out.end());
}

std::vector<int64_t> ProbeFramePts(const std::string& path) {
  std::istringstream lines(
      Run("/usr/bin/ffprobe -v error -select_streams v:0 -show_entries "
          "frame=best_effort_timestamp -of csv=p=0 '" +
          path + "'"));
  std::vector<int64_t> pts;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) pts.push_back(std::stoll(line));
  }
  return pts;
}

namespace {

// ffprobe's value for `entries` ("stream=pix_fmt", "format=duration") of the first video stream.
std::string Probe(const std::string& path, const std::string& entries) {
  std::string out = Run("/usr/bin/ffprobe -v error -select_streams v:0 -show_entries " + entries +
                        " -of default=nw=1:nk=1 '" + path + "'");
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

std::string ProbeStream(const std::string& path, const std::string& entry) { return Probe(path, "stream=" + entry); }

std::string ProbeFormat(const std::string& path, const std::string& entry) { return Probe(path, "format=" + entry); }

}  // namespace dav1d_plugin::testing
