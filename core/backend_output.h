// File: core/backend_output.h
//
// A backend's stdout and stderr, as the host shows them. The child never
// holds a descriptor of the host's terminal or log: its descriptors 1 and 2
// are the write end of a pipe, and the host reads the other end on a
// thread of its own (BackendOutput), so a plugin can neither type into the
// user's terminal (TIOCSTI), nor truncate or rewrite the host's log, nor
// be blocked for good by a host stderr nobody reads. Each line is forwarded
// to the host's stderr as
//   codecvisor: backend 'NAME': <line, control characters escaped>
// within bounds (OutputFilter): lines are cut at kMaxLineBytes, and past a
// budget of kBurstBytes, refilled at kBytesPerSecond, lines are dropped and
// counted, with one line saying how much was dropped once the budget is
// back, or at the end. The budget is spent on what the host writes (prefix,
// escapes and notices included), so that no way of writing, such as empty
// lines, makes the host's stderr grow faster than the budget.

#ifndef CODECVISOR_CORE_BACKEND_OUTPUT_H_
#define CODECVISOR_CORE_BACKEND_OUTPUT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "ipc/unique_fd.h"

namespace codecvisor {

// `text` made safe for a terminal: printable ASCII and well-formed UTF-8 of
// printable code points are kept; tab is kept; every other byte (control
// characters, DEL, C1 controls, bytes of malformed UTF-8) becomes \xNN, and
// a backslash becomes \\, so the escaping cannot be forged either.
std::string EscapeForTerminal(std::string_view text);

// `text` with each byte EscapeForTerminal would escape, but a backslash,
// replaced by U+FFFD: what the host makes of text a plugin wrote (errors,
// names) where it arrives, so that no consumer (a C++ caller's log, a
// Python traceback, the CLI) meets terminal controls in it. The result
// goes through EscapeForTerminal unchanged but for its backslashes, so the
// CLI's own escaping never escapes it twice.
std::string ReplaceUnsafeForTerminal(std::string_view text);

// Splits a byte stream into bounded, escaped, prefixed lines and applies the
// rate budget. Pure logic: the clock is a parameter. Not thread-safe.
class OutputFilter {
 public:
  static constexpr size_t kMaxLineBytes = 1024;
  static constexpr uint64_t kBurstBytes = 64 << 10;
  static constexpr uint64_t kBytesPerSecond = 16 << 10;
  using Clock = std::chrono::steady_clock;
  using Emit = std::function<void(std::string_view line)>;  // a whole line, with its '\n'

  OutputFilter(std::string name, Emit emit, Clock::time_point now);
  // Feeds bytes the backend wrote; emits every line they complete.
  void Feed(std::string_view bytes, Clock::time_point now);
  // The end of the stream: emits a last unterminated line and the count of
  // anything dropped.
  void Finish(Clock::time_point now);

  uint64_t dropped_bytes() const { return dropped_total_; }
  // Whether what is fed now is thrown away: lines past the budget, or the
  // rest of a line past kMaxLineBytes.
  bool flooding() const { return dropped_ != 0 || line_cut_; }

 private:
  void EndLine(Clock::time_point now);
  // Throws the current line away, counted.
  void Drop();
  // The line saying how many bytes were dropped since the last; "" if none.
  std::string DroppedNotice() const;

  std::string prefix_;
  Emit emit_;
  std::string line_;       // the current line, at most kMaxLineBytes
  bool line_cut_ = false;  // bytes of the current line were cut off
  double budget_;
  Clock::time_point refilled_;
  uint64_t dropped_ = 0;        // not yet reported
  uint64_t dropped_total_ = 0;
};

// Reads the backend's pipe on a thread and writes the filtered lines to
// `out` (the host's stderr). While the filter is flooding, each buffer read
// is followed by a pause of kFloodPauseMs: a backend writing faster than
// about 12 MB/s then waits on its full pipe, and a flood costs the host
// about 200 reads a second, not a core. Destruction (or Finish()) waits until the
// child's end is closed by every process that holds it, at most `grace`,
// then stops: what the backend wrote before it died is never lost. Writing
// `out` never blocks the thread (lines are cut to PIPE_BUF; for each, a
// pipe or terminal is reopened non-blocking, anything else written only
// when it takes a whole line now; a line a stalled reader cannot take now
// is lost) and a reader that is gone costs lines, not a SIGPIPE: so
// Finish() returns within `grace` whatever the host's stderr does. Each
// line goes where `out` points when it comes (after a dup2 of the host's).
class BackendOutput {
 public:
  static constexpr int kFloodPauseMs = 5;
  // The pause after a read while flooding: waits up to kFloodPauseMs for
  // `stop_fd` (an eventfd Finish() writes) to be readable. A test passes
  // one of its own to see when the relay pauses.
  using FloodPause = std::function<void(int stop_fd)>;
  static void PauseForFlood(int stop_fd);
  // RESOURCE_EXHAUSTED when no thread can be started (`ulimit -u`).
  static absl::StatusOr<std::unique_ptr<BackendOutput>> Start(std::string name, ipc::UniqueFd read_end, int out,
                                                              FloodPause pause = PauseForFlood);
  BackendOutput(const BackendOutput&) = delete;
  BackendOutput& operator=(const BackendOutput&) = delete;
  ~BackendOutput();

  // Waits for the end of the stream until `grace` has passed, then stops
  // reading. Idempotent.
  void Finish(std::chrono::milliseconds grace);

 private:
  BackendOutput(ipc::UniqueFd read_end, FloodPause pause);
  void Run(std::string name, int out);

  ipc::UniqueFd read_end_;
  ipc::UniqueFd stop_;  // an eventfd: Finish's "stop now"
  const FloodPause pause_;
  std::thread thread_;
  // Run's, kept here rather than on its thread's stack: a forked child has
  // no such thread, and what only its stack pointed to would be reported
  // as leaked by a leak checker at the child's exit.
  std::optional<OutputFilter> filter_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_BACKEND_OUTPUT_H_
