// File: backends/cpu/ffmpeg_log.h
//
// FFmpeg's own log lines (libdav1d's version banner, "Invalid NAL unit
// size" on damaged data, ...). They are quiet by default: every error the
// backend reports already names its cause, and a library should not write
// to a user's terminal. The host passes a level through the environment
// variable CODECVISOR_BACKEND_LOG_LEVEL (the CLI's --loglevel sets it), in
// the ffmpeg CLI's -loglevel names; the backend's stderr then reaches the
// host's stderr line by line (core/backend_output.h).
//
// av_log_set_level is process-wide: the runner process belongs to one
// backend, and in-process users (bench, fuzzer, tests) get the same
// default. Thread-safe (applied once per process).

#ifndef CODECVISOR_BACKENDS_CPU_FFMPEG_LOG_H_
#define CODECVISOR_BACKENDS_CPU_FFMPEG_LOG_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "backends/sdk/codecvisor_backend.h"

namespace codecvisor::cpu {

inline constexpr char kLogLevelEnv[] = CODECVISOR_BACKEND_LOG_LEVEL_ENV;

// AV_LOG_* for one of quiet, panic, fatal, error, warning, info, verbose,
// debug, trace; nullopt for anything else.
std::optional<int> ParseFfmpegLogLevel(absl::string_view name);

// Sets FFmpeg's log level from kLogLevelEnv (quiet when unset or not a
// level name), once per process.
void ApplyFfmpegLogLevel();

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_FFMPEG_LOG_H_
