// File: core/backend_output.cc

#include "core/backend_output.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace codecvisor {
namespace {

// Length of the well-formed UTF-8 sequence of a printable code point at
// the start of `s` (U+00A0 and up: C1 controls are not printable), or 0.
size_t PrintableUtf8(std::string_view s) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  size_t n = b0 >= 0xf0 && b0 <= 0xf4 ? 4 : b0 >= 0xe0 ? 3 : b0 >= 0xc2 && b0 < 0xe0 ? 2 : 0;
  if (n == 0 || s.size() < n) return 0;
  uint32_t cp = b0 & (0x7f >> n);
  for (size_t i = 1; i < n; ++i) {
    const auto b = static_cast<uint8_t>(s[i]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  const bool invalid = cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp < 0xa0;
  // U+2028/2029 end lines in some terminals' eyes; U+202A-202E and
  // U+2066-2069 reorder text (bidi overrides, "Trojan source").
  const bool risky = cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
                     (cp >= 0x2066 && cp <= 0x2069);
  return overlong || invalid || risky ? 0 : n;
}

// `text` with printable ASCII, tab and printable UTF-8 kept, a backslash
// given to `backslash`, and every other byte to `unsafe`.
template <typename Backslash, typename Unsafe>
std::string KeepPrintable(std::string_view text, Backslash backslash, Unsafe unsafe) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<uint8_t>(text[i]);
    if (c == '\\') {
      backslash(out);
      ++i;
    } else if ((c >= 0x20 && c < 0x7f) || c == '\t') {
      out += static_cast<char>(c);
      ++i;
    } else if (const size_t n = c >= 0x80 ? PrintableUtf8(text.substr(i)) : 0; n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      unsafe(out, c);
      ++i;
    }
  }
  return out;
}

// The host's stderr as the relay writes it, never blocking: a backend's
// death waits for its relay to finish, on the thread that handles every
// backend's death. Each line is cut to PIPE_BUF bytes, which a pipe takes
// whole or not at all. For each line, a pipe, FIFO or terminal is opened
// again through /proc (what descriptor `out` names now, after any dup2 of
// the process's), a description of the relay's own, non-blocking, so the
// descriptor the rest of the process writes keeps its flags; anything else
// (a file, which does not block; a socket; a pipe of another user's, which
// /proc will not reopen) is written only when poll says it takes bytes
// now: a page free in a pipe, room for a whole line. A line that does not
// fit now is lost, as one past the rate budget is: a reader that stopped
// reading (a pipe nobody drains, a terminal stopped with Ctrl-S) costs
// lines, never the host's progress.
class HostStderr {
 public:
  explicit HostStderr(int out) : out_(out) {}

  // Writes what of `line` the reader takes now.
  void Write(std::string_view whole) {
    static constexpr std::string_view kCut = " [line cut]\n";
    std::string cut;
    std::string_view line = whole;
    if (line.size() > PIPE_BUF) {
      cut = std::string(line.substr(0, PIPE_BUF - kCut.size()));
      cut += kCut;
      line = cut;
    }
    ipc::UniqueFd own;
    if (struct stat st {}; fstat(out_, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
      own = ipc::UniqueFd(open(absl::StrCat("/proc/self/fd/", out_).c_str(),
                               O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    }
    const int fd = own.valid() ? own.get() : out_;
    if (!own.valid()) {
      pollfd p{out_, POLLOUT, 0};
      if (poll(&p, 1, 0) != 1 || (p.revents & POLLOUT) == 0) return;
    }
    for (size_t done = 0; done < line.size();) {
      const ssize_t n = write(fd, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  // The relay's thread blocks SIGPIPE: a write to a pipe whose reader is
  // gone fails with EPIPE instead of killing the host (the signal stays
  // pending on this thread, blocked, and goes with it).
  static void BlockSigpipe() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  }

 private:
  int out_;
};

}  // namespace

std::string EscapeForTerminal(std::string_view text) {
  return KeepPrintable(
      text, [](std::string& out) { out += "\\\\"; },
      [](std::string& out, uint8_t c) {
        char hex[5];
        std::snprintf(hex, sizeof(hex), "\\x%02x", c);
        out += hex;
      });
}

std::string ReplaceUnsafeForTerminal(std::string_view text) {
  return KeepPrintable(
      text, [](std::string& out) { out += '\\'; }, [](std::string& out, uint8_t) { out += "\xef\xbf\xbd"; });
}

OutputFilter::OutputFilter(std::string name, Emit emit, Clock::time_point now)
    : prefix_(absl::StrCat("codecvisor: backend '", EscapeForTerminal(name), "': ")),
      emit_(std::move(emit)),
      budget_(static_cast<double>(kBurstBytes)),
      refilled_(now) {}

void OutputFilter::Feed(std::string_view bytes, Clock::time_point now) {
  while (!bytes.empty()) {
    const size_t newline = bytes.find('\n');
    const std::string_view part = bytes.substr(0, newline);
    const size_t room = kMaxLineBytes - line_.size();
    line_.append(part.substr(0, room));
    line_cut_ |= part.size() > room;
    if (newline == std::string_view::npos) return;
    EndLine(now);
    bytes.remove_prefix(newline + 1);
  }
}

void OutputFilter::EndLine(Clock::time_point now) {
  const double elapsed = std::chrono::duration<double>(now - refilled_).count();
  budget_ = std::min(static_cast<double>(kBurstBytes), budget_ + elapsed * kBytesPerSecond);
  refilled_ = now;
  // A flood's lines are dropped on what they cost at least (escapes only
  // add), without being formatted: the host's CPU must not follow the
  // plugin's writing rate.
  if (budget_ < static_cast<double>(prefix_.size() + line_.size() + 1)) {
    Drop();
    return;
  }
  // Charged what the host writes: the prefix and escapes make an empty line
  // thirty times its byte, and the notice of a drop goes out with it.
  const std::string line = absl::StrCat(prefix_, EscapeForTerminal(line_), line_cut_ ? " [line cut]" : "", "\n");
  const std::string notice = DroppedNotice();
  const auto cost = static_cast<double>(line.size() + notice.size());
  if (budget_ < cost) {
    Drop();
    return;
  }
  budget_ -= cost;
  if (!notice.empty()) emit_(notice);
  dropped_ = 0;
  emit_(line);
  line_.clear();
  line_cut_ = false;
}

void OutputFilter::Drop() {
  dropped_ += line_.size() + 1;
  dropped_total_ += line_.size() + 1;
  line_.clear();
  line_cut_ = false;
}

std::string OutputFilter::DroppedNotice() const {
  if (dropped_ == 0) return "";
  return absl::StrCat(prefix_, "[", dropped_, " bytes of output dropped: the relay passes ", kBytesPerSecond >> 10,
                      " KiB/s]\n");
}

void OutputFilter::Finish(Clock::time_point now) {
  if (!line_.empty() || line_cut_) EndLine(now);
  if (dropped_ != 0) emit_(DroppedNotice());
  dropped_ = 0;
}

BackendOutput::BackendOutput(ipc::UniqueFd read_end, FloodPause pause)
    : read_end_(std::move(read_end)), stop_(eventfd(0, EFD_CLOEXEC)), pause_(std::move(pause)) {}

void BackendOutput::PauseForFlood(int stop_fd) {
  pollfd stop = {stop_fd, POLLIN, 0};
  (void)poll(&stop, 1, kFloodPauseMs);
}

absl::StatusOr<std::unique_ptr<BackendOutput>> BackendOutput::Start(std::string name, ipc::UniqueFd read_end, int out,
                                                                    FloodPause pause) {
  std::unique_ptr<BackendOutput> output(new BackendOutput(std::move(read_end), std::move(pause)));
  if (!output->stop_.valid()) return ipc::ErrnoStatus("eventfd for the backend's output");
  try {
    output->thread_ = std::thread(&BackendOutput::Run, output.get(), std::move(name), out);
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot start the thread forwarding its output: ", e.what()));
  }
  return output;
}

BackendOutput::~BackendOutput() { Finish(std::chrono::milliseconds(0)); }

void BackendOutput::Finish(std::chrono::milliseconds grace) {
  if (!thread_.joinable()) return;
  const uint64_t ms = static_cast<uint64_t>(grace.count()) + 1;  // eventfd values are > 0
  (void)!write(stop_.get(), &ms, sizeof(ms));
  thread_.join();
}

void BackendOutput::Run(std::string name, int out) {
  HostStderr::BlockSigpipe();
  HostStderr host_stderr(out);
  OutputFilter& filter = filter_.emplace(
      std::move(name), [&host_stderr](std::string_view line) { host_stderr.Write(line); }, OutputFilter::Clock::now());
  std::optional<OutputFilter::Clock::time_point> deadline;
  char buffer[64 << 10];
  for (;;) {
    int timeout = -1;
    if (deadline && OutputFilter::Clock::now() > *deadline) break;  // however much a flood still sends
    if (deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - OutputFilter::Clock::now());
      timeout = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    pollfd fds[2] = {{read_end_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    const int ready = poll(fds, deadline ? 1 : 2, timeout);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) break;  // the grace after Finish() is over
    if (!deadline && (fds[1].revents & POLLIN) != 0) {
      uint64_t grace_ms = 1;
      (void)!read(stop_.get(), &grace_ms, sizeof(grace_ms));
      deadline = OutputFilter::Clock::now() + std::chrono::milliseconds(grace_ms - 1);
      continue;
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    const ssize_t n = read(read_end_.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // every writer is gone
    filter.Feed(std::string_view(buffer, static_cast<size_t>(n)), OutputFilter::Clock::now());
    if (!deadline && filter.flooding()) {
      // What a flood writes is dropped: a pause after each buffer's worth
      // lets the pipe fill and the backend's writes wait, rather than the
      // host spend a core reading it. Finish() ends the pause.
      pause_(stop_.get());
    }
  }
  filter.Finish(OutputFilter::Clock::now());
  filter_.reset();  // its sink writes to host_stderr, which ends here
}

}  // namespace codecvisor
