// File: tools/cli/progress.h
//
// The progress bar `codecvisor decode` draws on standard error while it
// writes frames:
//   [##########..........]  42/100  42%  123.4 fps  ETA 0:01   (total known)
//   42 frames  123.4 fps  0:03                                  (total unknown)
// It is drawn only where someone watches (the caller passes whether
// stderr is a terminal), redrawn at most every 100 ms so that drawing never
// costs more than the decode, and cleared when done so that the summary
// line that follows stands alone.
//
// Thread-safety: one thread at a time.

#ifndef CODECVISOR_TOOLS_CLI_PROGRESS_H_
#define CODECVISOR_TOOLS_CLI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace codecvisor::cli {

// One line of progress, at most `columns` characters wide (the bar shrinks
// to fit, down to nothing on a very narrow terminal). Pure, for tests.
std::string RenderProgressLine(int64_t done, std::optional<int64_t> total, double elapsed_seconds, int columns);

// "0:07", "1:02:03".
std::string FormatDuration(double seconds);

class ProgressBar {
 public:
  // Draws on `out` only when `enabled`; `total` is the number of frames
  // expected, when known.
  ProgressBar(std::FILE* out, bool enabled, std::optional<int64_t> total);
  ~ProgressBar();  // Clear()s

  // Counts `frames` more frames done, redrawing if 100 ms have passed.
  void Advance(int64_t frames = 1);
  // Erases the bar; nothing is drawn afterwards.
  void Clear();

  int64_t done() const { return done_; }
  double elapsed_seconds() const;

 private:
  void Draw();

  std::FILE* out_;
  bool enabled_;
  std::optional<int64_t> total_;
  int64_t done_ = 0;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// True when `stream` is a terminal (isatty of its descriptor).
bool IsTerminal(std::FILE* stream);

}  // namespace codecvisor::cli

#endif  // CODECVISOR_TOOLS_CLI_PROGRESS_H_
