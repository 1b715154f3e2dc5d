// File: backends/cpu/test_media.cc

#include "backends/cpu/test_media.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "tools/common/subprocess.h"
#include "tools/common/test_video.h"

namespace codecvisor::cpu::testing {
namespace {

// Small, fast to encode, and each exercising something: B-frames (H.264
// pyramid, HEVC open GOPs, MPEG-4), an odd size (VP9 97x61), libdav1d (AV1),
// a non-zero start time, a variable frame rate, a second video stream,
// packets without a pts, containers without an index.
const TestVideo kVideos[] = {
    {"h264.mp4",
     "-f lavfi -i testsrc2=size=160x96:rate=25 -frames:v 120 -c:v libx264 -preset veryfast "
     "-bf 3 -g 30 -pix_fmt yuv420p",
     0, true},
    {"hevc.mkv",
     "-f lavfi -i testsrc2=size=128x72:rate=24 -frames:v 90 -c:v libx265 -preset ultrafast "
     "-x265-params keyint=24:min-keyint=24:bframes=3:open-gop=1:log-level=error -pix_fmt yuv420p",
     0, true},
    {"vp9_odd.webm",
     "-f lavfi -i testsrc=size=97x61:rate=30 -frames:v 60 -c:v libvpx-vp9 -deadline realtime "
     "-cpu-used 8 -g 20 -pix_fmt yuv420p",
     0, true},
    {"av1.mkv",
     "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 30 -c:v libaom-av1 -cpu-used 8 -g 10 "
     "-pix_fmt yuv420p",
     0, true},
    {"mpeg4.mp4",
     "-f lavfi -i testsrc=size=96x64:rate=25 -frames:v 60 -c:v mpeg4 -bf 2 -g 15 "
     "-pix_fmt yuv420p",
     0, true},
    {"offset.mkv",
     "-f lavfi -i testsrc2=size=96x64:rate=25 -frames:v 48 -c:v libx264 -preset veryfast -bf 2 "
     "-g 12 -pix_fmt yuv420p -output_ts_offset 2.5",
     0, true},
    {"vfr.mkv",
     "-f lavfi -i testsrc2=size=96x64:rate=25 -frames:v 60 "
     "-vf setpts='if(lt(N,20),N,20+(N-20)*3)/25/TB' -fps_mode vfr -c:v libx264 "
     "-preset veryfast -bf 2 -g 16 -pix_fmt yuv420p",
     0, false},
    {"mjpeg_full_range.avi", "-f lavfi -i testsrc2=size=80x60:rate=20 -frames:v 30 -c:v mjpeg -pix_fmt yuvj420p", 0,
     true},
    {"hevc_10bit.mkv",
     "-f lavfi -i testsrc2=size=96x54:rate=25 -frames:v 40 -c:v libx265 -preset ultrafast "
     "-x265-params keyint=10:bframes=2:log-level=error -pix_fmt yuv420p10le",
     0, true},
    {"h264_full_range.mp4",
     "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 30 -c:v libx264 -preset veryfast "
     "-pix_fmt yuv420p -color_range pc -colorspace bt470bg",
     0, true},
    {"two_streams.mkv",
     "-f lavfi -i testsrc2=size=128x80:rate=25 -f lavfi -i testsrc=size=80x48:rate=15 "
     "-f lavfi -i sine=frequency=440:sample_rate=8000 -map 0:v -map 1:v -map 2:a -t 2 "
     "-c:v:0 libx264 -preset veryfast -bf 2 -c:v:1 mpeg4 -c:a aac -pix_fmt yuv420p",
     1, true},
    // An MPEG program stream, whose muxer puts a PTS on only some packets:
    // frames of reference pictures without one come out in the middle of
    // the B-frames' timeline.
    {"mpeg2_program_stream.mpg",
     "-f lavfi -i testsrc2=size=128x96:rate=25 -frames:v 50 -c:v mpeg2video -bf 2 -g 12 "
     "-pix_fmt yuv420p -f mpeg",
     0, true},
    // AVI, whose packets carry no pts; with B-frames only theirs is known.
    {"mpeg4_bframes.avi", "-f lavfi -i testsrc=size=96x64:rate=25 -frames:v 60 -c:v mpeg4 -bf 2 -g 15 -pix_fmt yuv420p",
     0, true},
    // Xvid's packed B-frames in AVI, as DivX-era datasets hold them: a
    // B-VOP travels in the packet of the P-VOP before it, a placeholder
    // packet takes its place, and the AVI index flags some placeholders as
    // key frames. Frames are numbered in the order the decoder shows them.
    {"xvid_packed_bframes.avi",
     "-f lavfi -i testsrc=size=96x64:rate=25 -frames:v 60 -c:v libxvid -bf 2 -g 15 -q:v 4 -pix_fmt yuv420p", 0, false,
     nullptr, /*approximate_scans=*/true},
    // H.264 in AVI: no packet carries a pts.
    {"h264_bframes.avi",
     "-f lavfi -i testsrc2=size=96x64:rate=25 -frames:v 48 -c:v libx264 -preset veryfast -bf 3 "
     "-g 12 -pix_fmt yuv420p",
     0, true},
    // MPEG-TS has no index: a seek lands on any packet, key frame or not.
    {"hevc.ts",
     "-f lavfi -i testsrc2=size=128x72:rate=25 -frames:v 75 -c:v libx265 -preset ultrafast "
     "-x265-params keyint=25:bframes=3:log-level=error -pix_fmt yuv420p -f mpegts",
     0, true},
    // Display matrices, copied into MP4 by the mov muxer's "rotate" tag.
    // ffprobe's rotation 90, -90 and -180 make the CLI insert
    // transpose=cclock, transpose=clock, and hflip+vflip: B-frames, an odd
    // size and 10-bit samples each go through one of them. A quarter turn of
    // 10-bit 4:2:0 (a phone's portrait HDR video) tells the order of rotation
    // and conversion apart: swscale interpolates its chroma, so converting
    // first is not the transpose of converting after.
    {"h264_rotation_90.mp4", "-c copy -metadata:s:v:0 rotate=90", 0, true, "h264.mp4"},
    {"vp9_odd_rotation_-90.mp4", "-c copy -metadata:s:v:0 rotate=-90", 0, true, "vp9_odd.webm"},
    {"hevc_10bit_rotation_180.mp4", "-c copy -metadata:s:v:0 rotate=180", 0, true, "hevc_10bit.mkv"},
    {"hevc_10bit_rotation_90.mp4", "-c copy -metadata:s:v:0 rotate=90", 0, true, "hevc_10bit.mkv"},
    // FLV with B-frames: its header's duration runs from the first decode
    // time, a frame or more before the first frame's pts; with times that
    // start late (-output_ts_offset) too, and without B-frames.
    {"h264_bframes.flv", "-c copy", 0, true, "h264.mp4"},
    {"h264_bframes_offset.flv", "-c copy -output_ts_offset 1", 0, true, "h264.mp4"},
    // A clip cut from an open-GOP HEVC stream with -c copy into Matroska:
    // it starts on a key frame (at 1 s) whose leading pictures refer to
    // pictures before the cut, which the muxer left without times; the
    // decoder drops them, and they are no frames.
    {"hevc_open_gop_cut.mkv", "-c copy", 0, true, "hevc.mkv", false, "-ss 1.3"},
    {"h264_offset.flv",
     "-f lavfi -i testsrc=size=96x64:rate=25 -frames:v 50 -c:v libx264 -preset veryfast -bf 0 -pix_fmt yuv420p "
     "-output_ts_offset 1",
     0, true},
};

}  // namespace

void PrintTo(const TestVideo& video, std::ostream* os) { *os << video.name; }

std::string TestName(const TestVideo& video) {
  std::string name = video.name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

const std::vector<TestVideo>& TestVideos() {
  static const std::vector<TestVideo> videos(std::begin(kVideos), std::end(kVideos));
  return videos;
}

const TestVideo& FindTestVideo(const std::string& name) {
  for (const TestVideo& v : kVideos) {
    if (name == v.name) return v;
  }
  ADD_FAILURE() << "no test video " << name;
  return kVideos[0];
}

std::string TestVideoPath(const TestVideo& video) {
  if (video.remux_of == nullptr) return MakeVideo(video.name, video.args);
  const std::string source = TestVideoPath(FindTestVideo(video.remux_of));
  return MakeVideo(video.name, absl::StrCat(video.remux_input_args, " -i ", source, " ", video.args));
}

std::string Run(const std::string& command) {
  absl::StatusOr<std::string> out = tools::RunForOutput({"/bin/sh", "-c", command});
  if (!out.ok()) {
    ADD_FAILURE() << out.status();
    return "";
  }
  return *std::move(out);
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name);
}

std::string GoodMp4() {
  return MakeVideo("good.mp4",
                   "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 40 -c:v libx264 "
                   "-preset veryfast -bf 2 -g 10 -pix_fmt yuv420p");
}

std::string MakeVideo(const std::string& name, const std::string& args) {
  std::string path = TempPath(name);
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (absl::Status made = tools::MakeTestVideo(args, path); !made.ok()) ADD_FAILURE() << made;
  }
  return path;
}

std::string WriteFile(const std::string& name, const std::string& bytes) {
  std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// `filters` with a last "format=F" asked of the output instead (-pix_fmt F),
// where the CLI converts after its autorotation, as `ffmpeg -i FILE -pix_fmt
// rgb24` does. As a filter it would be negotiated into the rotation: the
// CLI would convert first and rotate the RGB picture, which differs where
// swscale interpolates chroma (10-bit 4:2:0).
std::pair<std::string, std::string> FormatAsOutput(const std::string& filters) {
  const size_t at = filters.rfind("format=");
  if (at == std::string::npos || (at > 0 && filters[at - 1] != ',') || filters.find(',', at) != std::string::npos) {
    return {filters, ""};
  }
  const std::string rest = at == 0 ? "null" : filters.substr(0, at - 1);
  return {rest, absl::StrCat(" -pix_fmt ", filters.substr(at + 7))};
}

}  // namespace

std::string CliFrame(const std::string& path, int stream, int64_t n, const std::string& filters,
                     size_t frame_bytes, const std::string& output_args) {
  const auto [chain, pix_fmt] = FormatAsOutput(filters);
  std::string out =
      Run(absl::StrCat("/usr/bin/ffmpeg -nostdin -v error -i '", path, "' -map 0:", stream, " -vf \"select=eq(n\\,", n,
                       "),", chain, "\"", pix_fmt, " ", output_args, " -f rawvideo -"));
  EXPECT_GE(out.size(), frame_bytes) << "the CLI produced no frame " << n << " of " << path;
  if (out.size() > frame_bytes) out.resize(frame_bytes);
  return out;
}

std::string CliAllFrames(const std::string& path, int stream, const std::string& filters) {
  const auto [chain, pix_fmt] = FormatAsOutput(filters);
  return Run(absl::StrCat("/usr/bin/ffmpeg -nostdin -v error -i '", path, "' -map 0:", stream, " -vf \"", chain, "\"",
                          pix_fmt, " -fps_mode passthrough -f rawvideo -"));
}

namespace {

// Lines "key=value" of ffprobe's compact output, one entry per line.
std::vector<std::vector<std::string>> ProbeRows(const std::string& command) {
  std::vector<std::vector<std::string>> rows;
  for (absl::string_view line : absl::StrSplit(Run(command), '\n', absl::SkipEmpty())) {
    rows.push_back(absl::StrSplit(line, ','));
  }
  return rows;
}

int64_t ToInt(const std::string& s) {
  int64_t v = -1;
  if (!absl::SimpleAtoi(s, &v)) return -1;
  return v;
}

}  // namespace

std::vector<int64_t> ProbeFramePts(const std::string& path, int stream) {
  std::vector<int64_t> pts;
  for (const auto& row :
       ProbeRows(absl::StrCat("/usr/bin/ffprobe -v error -select_streams ", stream,
                              " -show_entries frame=best_effort_timestamp -of csv=p=0 '", path, "'"))) {
    if (row.empty()) continue;
    // A frame without any timestamp (the last of a stream whose packets
    // carry none, drained) takes the next slot after the previous frames.
    int64_t t = ToInt(row[0]);
    if (row[0] == "N/A" && pts.size() >= 2) t = pts.back() + (pts.back() - pts[pts.size() - 2]);
    pts.push_back(t);
  }
  return pts;
}

std::vector<ProbedPacket> ProbePackets(const std::string& path, int stream) {
  std::vector<ProbedPacket> packets;
  for (const auto& row :
       ProbeRows(absl::StrCat("/usr/bin/ffprobe -v error -select_streams ", stream,
                              " -show_entries packet=pts,duration,size,pos -of csv=p=0 '", path, "'"))) {
    // ffprobe prints a section's fields in its own order: pts, duration, size, pos.
    if (row.size() >= 4) packets.push_back({ToInt(row[0]), ToInt(row[1]), ToInt(row[2]), ToInt(row[3])});
  }
  return packets;
}

size_t RgbBytes(const cv_frame_layout& layout) { return size_t{layout.width} * layout.height * 3; }

std::vector<int64_t> Shuffled(int64_t n, unsigned seed) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  return order;
}

std::vector<int64_t> ExpectInOrderIsTheClis(const std::string& path, const std::string& cli, size_t frame_bytes) {
  TestSession session(path);
  EXPECT_TRUE(session.ok()) << session.open_message();
  if (!session.ok()) return {};
  const int64_t n = session.Metadata().num_frames_from_scan;
  EXPECT_EQ(cli.size(), frame_bytes * n) << "frames: ours " << n << ", the CLI's " << cli.size() / frame_bytes;
  std::vector<int64_t> pts;
  for (int64_t i = 0; i < n && static_cast<size_t>(i + 1) * frame_bytes <= cli.size(); ++i) {
    cv_frame_info info{};
    std::string pixels, message;
    EXPECT_EQ(session.Decode(i, &pixels, &info, &message), CV_OK) << "frame " << i << ": " << message;
    EXPECT_TRUE(pixels == cli.substr(i * frame_bytes, frame_bytes)) << "frame " << i;
    if (!pts.empty()) EXPECT_GT(info.pts, pts.back()) << "frame " << i;
    pts.push_back(info.pts);
  }
  return pts;
}

void ExpectRandomAccessAgrees(const std::string& path, const std::string& cli, size_t frame_bytes,
                              const std::vector<int64_t>& pts, unsigned seed, int64_t time_step) {
  TestSession session(path);
  ASSERT_TRUE(session.ok()) << session.open_message();
  const int64_t n = static_cast<int64_t>(pts.size());
  for (int64_t i : Shuffled(n, seed)) {
    cv_frame_info info{};
    std::string pixels, message;
    ASSERT_EQ(session.Decode(i, &pixels, &info, &message), CV_OK) << "frame " << i << ": " << message;
    EXPECT_TRUE(pixels == cli.substr(i * frame_bytes, frame_bytes)) << "frame " << i << " at random";
    EXPECT_EQ(info.pts, pts[i]) << "frame " << i << " at random";
  }
  const cv_backend_v1* t = codecvisor_backend_v1();
  for (int64_t i = 0; i < n; i += time_step) {
    cv_frame_info info{};
    cv_error error{};
    ASSERT_EQ(t->get_frame_info(session.get(), i, &info, &error), CV_OK) << error.message;
    int64_t at = -1;
    ASSERT_EQ(t->index_at_seconds(session.get(), info.pts_seconds, &at, &error), CV_OK) << error.message;
    EXPECT_EQ(at, i) << "the time of frame " << i;
  }
}

TestSession::TestSession(const std::string& path, const Options& options,
                         const std::string& label) {
  const cv_backend_v1* table = codecvisor_backend_v1();
  cv_error error{};
  if (table->create("", &backend_, &error) != CV_OK) {
    ADD_FAILURE() << "create failed: " << error.message;
    return;
  }
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  cv_open_options o{};
  o.struct_size = sizeof(o);
  o.stream_index = options.stream_index;
  std::memcpy(&o.seek_mode, &options.seek_mode, sizeof(o.seek_mode));
  std::memcpy(&o.output_format, &options.output_format, sizeof(o.output_format));
  o.decoder_threads = options.decoder_threads;
  o.output_width = options.output_width;
  o.output_height = options.output_height;
  o.native_formats = options.native_formats;
  o.frame_pool = options.frame_pool;
  o.cancel_check = options.cancel_check;
  o.device = "cpu";
  std::string name = label.empty() ? path.substr(path.rfind('/') + 1) : label;
  o.file_label = name.c_str();
  open_status_ = table->open_session(backend_, fd_, &o, &session_, &error);
  if (open_status_ != CV_OK) {
    open_message_ = error.message;
    EXPECT_EQ(session_, nullptr);
    session_ = nullptr;
  }
}

TestSession::~TestSession() {
  const cv_backend_v1* table = codecvisor_backend_v1();
  if (session_ != nullptr) table->close_session(session_);
  if (fd_ >= 0) {
    // The backend must not have closed the descriptor.
    EXPECT_EQ(fcntl(fd_, F_GETFD), FD_CLOEXEC);
    close(fd_);
  }
  if (backend_ != nullptr) table->destroy(backend_);
}

cv_stream_metadata TestSession::Metadata() const {
  cv_stream_metadata m{};
  cv_error error{};
  EXPECT_EQ(codecvisor_backend_v1()->get_metadata(session_, &m, &error), CV_OK) << error.message;
  return m;
}

cv_frame_layout TestSession::Layout() const {
  cv_frame_layout l{};
  cv_error error{};
  EXPECT_EQ(codecvisor_backend_v1()->get_frame_layout(session_, &l, &error), CV_OK)
      << error.message;
  return l;
}

cv_status TestSession::Decode(int64_t index, std::string* pixels, cv_frame_info* info,
                              std::string* message) {
  return DecodeWith(
      [&](cv_frame_buffer* buffer, cv_frame_info* out, cv_error* error) {
        return codecvisor_backend_v1()->decode_frame(session_, index, buffer, out, error);
      },
      pixels, info, message);
}

cv_status TestSession::DecodeAt(double seconds, std::string* pixels, cv_frame_info* info, std::string* message) {
  return DecodeWith(
      [&](cv_frame_buffer* buffer, cv_frame_info* out, cv_error* error) {
        return codecvisor_backend_v1()->decode_frame_at_seconds(session_, seconds, buffer, out, error);
      },
      pixels, info, message);
}

cv_status TestSession::DecodeWith(absl::FunctionRef<cv_status(cv_frame_buffer*, cv_frame_info*, cv_error*)> decode,
                                  std::string* pixels, cv_frame_info* info, std::string* message) {
  cv_frame_layout layout = Layout();
  pixels->assign(layout.size, '\xAB');
  cv_frame_buffer buffer{.data = reinterpret_cast<uint8_t*>(pixels->data()), .capacity = pixels->size()};
  cv_frame_info local{};
  cv_error error{};
  cv_status status = decode(&buffer, info != nullptr ? info : &local, &error);
  if (message != nullptr) *message = status == CV_OK ? "" : error.message;
  return status;
}

std::string TestSession::DecodeOrFail(int64_t index, cv_frame_info* info) {
  std::string pixels, message;
  cv_status status = Decode(index, &pixels, info, &message);
  EXPECT_EQ(status, CV_OK) << "frame " << index << ": " << message;
  return pixels;
}

}  // namespace codecvisor::cpu::testing
