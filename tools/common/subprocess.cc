#include "tools/common/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace codecvisor::tools {
namespace {

constexpr size_t kStderrTail = 1500;

absl::Status SystemError(absl::string_view what, int err) {
  return absl::Status(absl::ErrnoToStatusCode(err), absl::StrCat(what, ": ", std::strerror(err)));
}

// Both ends of a pipe, closed on scope exit unless released.
struct Pipe {
  int read_end = -1, write_end = -1;
  ~Pipe() {
    if (read_end >= 0) close(read_end);
    if (write_end >= 0) close(write_end);
  }
};

}  // namespace

absl::StatusOr<std::string> RunForOutput(const std::vector<std::string>& argv, const OutputLimits& limits) {
  if (argv.empty()) return absl::InvalidArgumentError("RunForOutput: empty command");
  const std::string command = absl::StrJoin(argv, " ");
  Pipe out, err;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return SystemError("pipe2", errno);
  out.read_end = fds[0], out.write_end = fds[1];
  if (pipe2(fds, O_CLOEXEC) != 0) return SystemError("pipe2", errno);
  err.read_end = fds[0], err.write_end = fds[1];

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write_end, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write_end, STDERR_FILENO);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawn_error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out.write_end), out.write_end = -1;
  close(err.write_end), err.write_end = -1;
  if (spawn_error != 0) return SystemError(absl::StrCat("cannot run ", argv[0], " (is it installed?)"), spawn_error);

  const auto deadline = std::chrono::steady_clock::now() + limits.timeout;
  std::string output, errors;
  absl::Status failure;
  pollfd polled[2] = {{out.read_end, POLLIN, 0}, {err.read_end, POLLIN, 0}};
  int open_pipes = 2;
  char buffer[1 << 16];
  while (open_pipes > 0 && failure.ok()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      failure = absl::DeadlineExceededError(absl::StrCat("`", command, "` took longer than ", limits.timeout.count(), " ms"));
      break;
    }
    const int ready = poll(polled, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) {
      failure = SystemError("poll", errno);
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (polled[i].fd < 0 || (polled[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = read(polled[i].fd, buffer, sizeof(buffer));
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        polled[i].fd = -1;
        --open_pipes;
        continue;
      }
      std::string& sink = i == 0 ? output : errors;
      sink.append(buffer, static_cast<size_t>(n));
      if (i == 1 && errors.size() > 4 * kStderrTail) errors.erase(0, errors.size() - kStderrTail);
      if (i == 0 && output.size() > limits.max_stdout_bytes) {
        failure = absl::ResourceExhaustedError(
            absl::StrCat("`", command, "` wrote more than ", limits.max_stdout_bytes, " bytes"));
      }
    }
  }
  if (!failure.ok()) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return SystemError(absl::StrCat("waitpid for ", argv[0]), errno);
  }
  if (!failure.ok()) return failure;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return output;
  if (errors.size() > kStderrTail) errors.erase(0, errors.size() - kStderrTail);
  const std::string ended = WIFEXITED(status) ? absl::StrCat("exited with status ", WEXITSTATUS(status))
                                              : absl::StrCat("was killed by signal ", WTERMSIG(status));
  return absl::InternalError(
      absl::StrCat("`", command, "` ", ended, ": ", absl::StripTrailingAsciiWhitespace(errors)));
}

}  // namespace codecvisor::tools
