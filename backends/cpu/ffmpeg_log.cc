// File: backends/cpu/ffmpeg_log.cc

#include "backends/cpu/ffmpeg_log.h"

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/strings/match.h"
#include "base/address_space.h"

extern "C" {
#include <libavutil/error.h>
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

namespace {

std::atomic<uint64_t> allocation_failures{0};
// initial-exec: the backend is dlopen'd, and dynamic TLS would be
// allocated (malloc) at a thread's first access, here in the log callback
// of a thread short of memory.
__attribute__((tls_model("initial-exec"))) thread_local FirstLoggedError* tls_first_error = nullptr;

// Every line reaches this callback whatever the level (the default one,
// which it calls, applies the level): errors are read for allocation
// failures first.
void CountingLogCallback(void* context, int level, const char* format, va_list args) {
  if (level <= AV_LOG_ERROR && format != nullptr) {
    char line[512];
    va_list copy;
    va_copy(copy, args);
    const int n = std::vsnprintf(line, sizeof(line), format, copy);
    va_end(copy);
    if ((n > 0 && SaysOutOfMemory(line)) || !RoomForAllocations()) NoteAllocationFailure();
    if (n > 0) NoteLoggedError(line);
  }
  av_log_default_callback(context, level, format, args);
}

}  // namespace

void NoteLoggedError(const char* line) {
  FirstLoggedError* capture = tls_first_error;
  if (capture == nullptr || capture->line_[0] != '\0') return;
  // Without allocating, as every line this callback reads.
  std::snprintf(capture->line_, sizeof(capture->line_), "%s", line);
  for (size_t n = std::strlen(capture->line_);
       n > 0 && (capture->line_[n - 1] == '\n' || capture->line_[n - 1] == ' ');) {
    capture->line_[--n] = '\0';
  }
}

FirstLoggedError::FirstLoggedError() : outer_(tls_first_error) { tls_first_error = this; }

FirstLoggedError::~FirstLoggedError() { tls_first_error = outer_; }

void FirstLoggedError::Reset() { line_[0] = '\0'; }

std::string FirstLoggedError::line() const { return line_; }

bool SaysOutOfMemory(absl::string_view line) {
  // Without allocating: this runs when memory is short, in FFmpeg's threads.
  constexpr absl::string_view kOutOfMemory = "out of memory";
  for (size_t i = 0; i + kOutOfMemory.size() <= line.size(); ++i) {
    if (absl::EqualsIgnoreCase(line.substr(i, kOutOfMemory.size()), kOutOfMemory)) return true;
  }
  return absl::StrContains(line, std::strerror(ENOMEM));
}

bool RoomForAllocations() { return CanReserveAddressSpace(size_t{16} << 20); }

uint64_t AllocationFailures() { return allocation_failures.load(std::memory_order_acquire); }

void NoteAllocationFailure() { allocation_failures.fetch_add(1, std::memory_order_acq_rel); }

bool NoteDemuxerOutOfMemory(int error) {
  if (error != AVERROR(ENOMEM) || CanReserveAddressSpace(kDemuxerSpareBytes)) return false;
  NoteAllocationFailure();
  return true;
}

void ApplyFfmpegLogLevel() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv(kLogLevelEnv);
    av_log_set_level(ParseFfmpegLogLevel(env != nullptr ? env : "").value_or(AV_LOG_QUIET));
    av_log_set_callback(&CountingLogCallback);
  });
}

}  // namespace codecvisor::cpu
