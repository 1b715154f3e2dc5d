// File: examples/vendor_backend/log_level.cc

#include "log_level.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "sdk.h"

extern "C" {
#include <libavutil/log.h>
}

namespace dav1d_plugin {

int RequestedLogLevel() {
  static constexpr struct {
    const char* name;
    int level;
  } kLevels[] = {{"panic", AV_LOG_PANIC}, {"fatal", AV_LOG_FATAL},     {"error", AV_LOG_ERROR},
                 {"warning", AV_LOG_WARNING}, {"info", AV_LOG_INFO}, {"verbose", AV_LOG_VERBOSE},
                 {"debug", AV_LOG_DEBUG}, {"trace", AV_LOG_TRACE}};
  const char* env = std::getenv(CODECVISOR_BACKEND_LOG_LEVEL_ENV);
  if (env == nullptr) return AV_LOG_QUIET;
  for (const auto& l : kLevels) {
    if (std::strcmp(env, l.name) == 0) return l.level;
  }
  return AV_LOG_QUIET;
}

namespace {
// The environment is read once: the host sets it before the runner starts.
int LogLevel() {
  static const int level = RequestedLogLevel();
  return level;
}
}  // namespace

void ApplyLogLevel() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_level(LogLevel()); });
}

void Dav1dLog(void*, const char* format, va_list ap) {
  if (LogLevel() < AV_LOG_ERROR) return;
  std::vfprintf(stderr, format, ap);
}

}  // namespace dav1d_plugin
