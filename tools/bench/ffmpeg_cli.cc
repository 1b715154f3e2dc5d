#include "tools/bench/ffmpeg_cli.h"

#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/common/subprocess.h"
#include "tools/common/test_video.h"

namespace codecvisor::bench {

absl::Status MakeBenchVideo(const std::string& path, int width, int height, int frames) {
  std::vector<std::string> args = tools::TestPatternInput(width, height, 30);
  args.insert(args.end(), {"-frames:v", absl::StrCat(frames), "-c:v", "libx264", "-pix_fmt", "yuv420p"});
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

}  // namespace codecvisor::bench
