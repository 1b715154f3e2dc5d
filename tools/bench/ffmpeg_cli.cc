#include "tools/bench/ffmpeg_cli.h"

#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/bench/run_program.h"

namespace codecvisor::bench {

absl::Status MakeTestVideo(const std::string& path, int width, int height, int frames) {
  return RunProgram({"ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                     absl::StrCat("testsrc2=size=", width, "x", height, ":rate=30"), "-frames:v",
                     absl::StrCat(frames), "-c:v", "libx264", "-pix_fmt", "yuv420p", path});
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
  if (absl::Status s = RunProgram(argv); !s.ok()) return s;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace codecvisor::bench
