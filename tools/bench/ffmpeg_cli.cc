#include "tools/bench/ffmpeg_cli.h"

#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/common/subprocess.h"
#include "tools/common/test_video.h"

namespace codecvisor::bench {

absl::Status MakeBenchVideo(const std::string& path, int width, int height, int frames, int key_interval) {
  std::vector<std::string> args = tools::TestPatternInput(width, height, 30);
  args.insert(args.end(), {"-frames:v", absl::StrCat(frames), "-c:v", "libx264", "-pix_fmt", "yuv420p"});
  if (key_interval > 0) {
    args.insert(args.end(), {"-g", absl::StrCat(key_interval), "-keyint_min", absl::StrCat(key_interval),
                             "-sc_threshold", "0"});
  }
  return tools::MakeTestVideo(args, path);
}

absl::StatusOr<double> TimeFfmpegDecode(const std::string& path, uint32_t threads, int64_t frames,
                                        int64_t total_frames) {
  std::vector<std::string> argv = {"ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error",
                                   "-threads", absl::StrCat(threads), "-i", path};
  if (frames < total_frames) {
    argv.insert(argv.end(), {"-frames:v", absl::StrCat(frames)});
  }
  argv.insert(argv.end(), {"-pix_fmt", "rgb24", "-f", "null", "-"});
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s = tools::RunForOutput(argv).status(); !s.ok()) return s;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

absl::StatusOr<double> TimeFfmpegSeek(const std::string& path, uint32_t threads, double seconds,
                                      size_t frame_bytes) {
  const std::vector<std::string> argv = {
      "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-threads", absl::StrCat(threads),
      "-ss", absl::StrFormat("%.6f", seconds), "-i", path, "-frames:v", "1", "-pix_fmt", "rgb24",
      "-f", "rawvideo", "-"};
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> frame = tools::RunForOutput(argv);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!frame.ok()) return frame.status();
  if (frame->size() != frame_bytes) {
    return absl::InternalError(absl::StrCat("ffmpeg -ss ", seconds, " -i ", path, " wrote ", frame->size(),
                                            " bytes, not one frame of ", frame_bytes));
  }
  return elapsed;
}

}  // namespace codecvisor::bench
