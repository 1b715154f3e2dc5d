// File: backends/cpu/ffmpeg_log.cc

#include "backends/cpu/ffmpeg_log.h"

#include <cstdlib>
#include <mutex>

extern "C" {
#include <libavutil/log.h>
}

namespace codecvisor::cpu {

std::optional<int> ParseFfmpegLogLevel(absl::string_view name) {
  static constexpr struct {
    const char* name;
    int level;
  } kLevels[] = {{"quiet", AV_LOG_QUIET},     {"panic", AV_LOG_PANIC}, {"fatal", AV_LOG_FATAL},
                 {"error", AV_LOG_ERROR},     {"warning", AV_LOG_WARNING}, {"info", AV_LOG_INFO},
                 {"verbose", AV_LOG_VERBOSE}, {"debug", AV_LOG_DEBUG}, {"trace", AV_LOG_TRACE}};
  for (const auto& l : kLevels) {
    if (name == l.name) return l.level;
  }
  return std::nullopt;
}

void ApplyFfmpegLogLevel() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv(kLogLevelEnv);
    av_log_set_level(ParseFfmpegLogLevel(env != nullptr ? env : "").value_or(AV_LOG_QUIET));
  });
}

}  // namespace codecvisor::cpu
