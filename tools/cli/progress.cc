#include "tools/cli/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace codecvisor::cli {
namespace {

constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
constexpr int kMaxBarWidth = 40;

int TerminalColumns(std::FILE* stream) {
  winsize size{};
  if (ioctl(fileno(stream), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

}  // namespace

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

std::string RenderProgressLine(int64_t done, std::optional<int64_t> total, double elapsed_seconds, int columns) {
  const double fps = elapsed_seconds > 0 ? static_cast<double>(done) / elapsed_seconds : 0;
  if (!total.has_value() || *total <= 0) {
    std::string line = absl::StrFormat("%d frames  %.1f fps  %s", done, fps, FormatDuration(elapsed_seconds));
    if (static_cast<int>(line.size()) > columns) line.resize(std::max(columns, 0));
    return line;
  }
  const int64_t shown = std::min(done, *total);
  const double fraction = static_cast<double>(shown) / static_cast<double>(*total);
  std::string eta = "--:--";
  if (done > 0 && fps > 0) eta = FormatDuration(static_cast<double>(*total - shown) / fps);
  const std::string width = absl::StrCat(*total);
  const std::string text = absl::StrFormat("  %*d/%s  %3d%%  %.1f fps  ETA %s", static_cast<int>(width.size()),
                                           shown, width, static_cast<int>(fraction * 100), fps, eta);
  // "[" + bar + "]" + text, within the columns (one spare so the cursor
  // does not wrap on terminals that wrap eagerly).
  const int bar = std::min(kMaxBarWidth, columns - 1 - 2 - static_cast<int>(text.size()));
  if (bar < 5) {
    std::string line = text.substr(2);
    if (static_cast<int>(line.size()) > columns) line.resize(std::max(columns, 0));
    return line;
  }
  const int filled = static_cast<int>(fraction * bar);
  return absl::StrCat("[", std::string(filled, '#'), std::string(bar - filled, '.'), "]", text);
}

bool IsTerminal(std::FILE* stream) { return isatty(fileno(stream)) == 1; }

ProgressBar::ProgressBar(std::FILE* out, bool enabled, std::optional<int64_t> total)
    : out_(out), enabled_(enabled), total_(total), start_(std::chrono::steady_clock::now()) {
  if (enabled_) Draw();
}

ProgressBar::~ProgressBar() { Clear(); }

double ProgressBar::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressBar::Advance(int64_t frames) {
  done_ += frames;
  if (!enabled_) return;
  if (std::chrono::steady_clock::now() - last_draw_ >= kRedrawInterval) Draw();
}

void ProgressBar::Draw() {
  last_draw_ = std::chrono::steady_clock::now();
  const std::string line = RenderProgressLine(done_, total_, elapsed_seconds(), TerminalColumns(out_));
  // \r to the line start, the line, then erase whatever was left of a longer one.
  std::fprintf(out_, "\r%s\x1b[K", line.c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ProgressBar::Clear() {
  if (enabled_ && drawn_) {
    std::fputs("\r\x1b[K", out_);
    std::fflush(out_);
  }
  enabled_ = false;
  drawn_ = false;
}

}  // namespace codecvisor::cli
