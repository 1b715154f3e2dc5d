#include "tools/conformance/output_capture.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"

namespace codecvisor::conformance {
namespace {

// How the runner starts its reports of cv_frame_pool misuse
// (backends/sdk/runner/frame_pool.h).
constexpr absl::string_view kFramePoolReport = "codecvisor-backend: frame pool:";

absl::Status Errno(const char* what) {
  return absl::InternalError(absl::StrCat("cannot capture the backends' output: ", what, ": ", std::strerror(errno)));
}

void WriteAll(int fd, std::string_view bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<OutputCapture>> OutputCapture::Start(const std::string& backend) {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return Errno("pipe2");
  const int saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  const int stop = saved >= 0 ? eventfd(0, EFD_CLOEXEC) : -1;
  if (saved < 0 || stop < 0) {
    const absl::Status error = Errno(saved < 0 ? "dup of descriptor 2" : "eventfd");
    for (int fd : {ends[0], ends[1], saved}) {
      if (fd >= 0) close(fd);
    }
    return error;
  }
  std::fflush(stderr);
  if (dup2(ends[1], STDERR_FILENO) < 0) {
    const absl::Status error = Errno("dup2");
    for (int fd : {ends[0], ends[1], saved, stop}) close(fd);
    return error;
  }
  std::unique_ptr<OutputCapture> capture(
      new OutputCapture(absl::StrCat("codecvisor: backend '", backend, "': "), ends[0], ends[1], saved, stop));
  capture->reader_ = std::thread(&OutputCapture::Run, capture.get());
  return capture;
}

OutputCapture::OutputCapture(std::string prefix, int read_end, int write_end, int saved, int stop)
    : prefix_(std::move(prefix)), read_end_(read_end), write_end_(write_end), saved_(saved), stop_(stop) {}

OutputCapture::~OutputCapture() { Stop(); }

void OutputCapture::Stop() {
  if (stopped_) return;
  stopped_ = true;
  std::fflush(stderr);
  dup2(saved_, STDERR_FILENO);
  // The pipe's write end may live on in a child that inherited descriptor
  // 2 (an ffmpeg still exiting): the reader is told to stop rather than
  // waiting for the end of the stream, and drains what is there first.
  close(write_end_);
  const uint64_t one = 1;
  (void)!write(stop_, &one, sizeof(one));
  reader_.join();
  for (int fd : {read_end_, saved_, stop_}) close(fd);
}

void OutputCapture::Run() {
  char buffer[16 << 10];
  bool stopping = false;
  for (;;) {
    pollfd fds[2] = {{read_end_, POLLIN, 0}, {stop_, POLLIN, 0}};
    const int ready = poll(fds, 2, stopping ? 0 : -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;  // stopping, and the pipe is empty
    if ((fds[1].revents & POLLIN) != 0) stopping = true;
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    const ssize_t n = read(read_end_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    WriteAll(saved_, std::string_view(buffer, static_cast<size_t>(n)));
    Take(std::string_view(buffer, static_cast<size_t>(n)));
  }
}

void OutputCapture::Take(std::string_view bytes) {
  MutexLock lock(&mu_);
  for (char c : bytes) {
    if (c != '\n') {
      if (partial_.size() < 4096) partial_ += c;
      continue;
    }
    absl::string_view line = partial_;
    if (absl::ConsumePrefix(&line, prefix_)) {
      if (!absl::StartsWith(line, "codecvisor-backend")) {
        if (lines_++ == 0) first_line_ = std::string(line);
      } else if (absl::StartsWith(line, kFramePoolReport)) {
        if (frame_pool_reports_++ == 0) first_frame_pool_report_ = std::string(line);
      }
    }
    partial_.clear();
  }
}

int OutputCapture::frame_pool_reports() const {
  MutexLock lock(&mu_);
  return frame_pool_reports_;
}

std::string OutputCapture::first_frame_pool_report() const {
  MutexLock lock(&mu_);
  return first_frame_pool_report_;
}

int OutputCapture::lines() const {
  MutexLock lock(&mu_);
  return lines_;
}

std::string OutputCapture::first_line() const {
  MutexLock lock(&mu_);
  return first_line_;
}

}  // namespace codecvisor::conformance
