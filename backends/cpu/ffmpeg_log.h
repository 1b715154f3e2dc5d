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
//
// The log also tells of allocations that failed where FFmpeg goes on
// (H.264's error concealment, "guess_dc() is out of memory"; "no frame!",
// then frames made from missing references): with the backend's memory
// short, a decoder's frames are garbage that no error reports. The backend
// counts every such report, every error logged or answered while the
// address space is nearly used up, and every ENOMEM it meets itself,
// process-wide (AllocationFailures); a decoder trusts no frame made after
// one until it starts again from a key frame, and an error met meanwhile
// is the memory's, not the file's.

#ifndef CODECVISOR_BACKENDS_CPU_FFMPEG_LOG_H_
#define CODECVISOR_BACKENDS_CPU_FFMPEG_LOG_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "backends/sdk/codecvisor_backend.h"

namespace codecvisor::cpu {

inline constexpr char kLogLevelEnv[] = CODECVISOR_BACKEND_LOG_LEVEL_ENV;

// AV_LOG_* for one of quiet, panic, fatal, error, warning, info, verbose,
// debug, trace; nullopt for anything else.
std::optional<int> ParseFfmpegLogLevel(absl::string_view name);

// Sets FFmpeg's log level from kLogLevelEnv (quiet when unset or not a
// level name), and counts the allocation failures its errors report, once
// per process.
void ApplyFfmpegLogLevel();

// Whether an FFmpeg log line says an allocation failed.
bool SaysOutOfMemory(absl::string_view line);

// Whether a few 1080p frames' worth of address space (16 MiB) could be had
// now. The backend's memory_mb is an address-space limit (RLIMIT_AS): an
// allocation refused a moment ago leaves less, and FFmpeg reports most of
// those as damaged data (H.264: "no frame!", INVALIDDATA, a frame whose
// missing parts were concealed). An error with no such room left is
// counted as an allocation failure, in the log and in the decoder's answers.
bool RoomForAllocations();

// The log callback's: keeps `line` for this thread's FirstLoggedError, if
// one is alive and has none yet. Async-signal-safe in spirit: allocates
// nothing.
void NoteLoggedError(const char* line);

// The first error FFmpeg logs on this thread while it lives, such as the
// mov demuxer's "moov atom not found" behind a bare INVALIDDATA: the cause
// an error message should name. Needs ApplyFfmpegLogLevel's callback. A
// scope of one thread; the innermost one alive keeps the line.
class FirstLoggedError {
 public:
  FirstLoggedError();
  ~FirstLoggedError();
  FirstLoggedError(const FirstLoggedError&) = delete;
  FirstLoggedError& operator=(const FirstLoggedError&) = delete;

  // The line without its newline; "" if none was logged.
  std::string line() const;
  // Forgets the line: the next error logged is kept.
  void Reset();

 private:
  friend void NoteLoggedError(const char* line);
  FirstLoggedError* const outer_;
  char line_[256] = {};
};

// Allocation failures met in this process so far (FFmpeg's reports and
// NoteAllocationFailure's); any thread.
uint64_t AllocationFailures();
void NoteAllocationFailure();

// Address space that, still free after a demuxer's AVERROR(ENOMEM), says
// the error was the file's: FFmpeg answers ENOMEM both for an allocation
// that failed and for a size it refuses outright (an MP4 sample table of
// 2^32 entries), and a header that asks for more than this is no header a
// decoder's memory limit should be blamed for.
inline constexpr size_t kDemuxerSpareBytes = size_t{256} << 20;

// For a demuxer's `error`: whether it is an allocation failure this
// backend's memory is to blame for (AVERROR(ENOMEM) with less than
// kDemuxerSpareBytes free), which it then notes; false for any other error,
// and for ENOMEM with room to spare (the file's sizes).
bool NoteDemuxerOutOfMemory(int error);

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_FFMPEG_LOG_H_
