#include "tools/bench/run_program.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace codecvisor::bench {
namespace {

constexpr size_t kStderrKept = 2048;  // the end of the program's stderr, for the error

absl::Status ErrnoError(absl::string_view what, int err) {
  return absl::Status(absl::ErrnoToStatusCode(err), absl::StrCat(what, ": ", std::strerror(err)));
}

}  // namespace

absl::Status RunProgram(const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("RunProgram: no program");
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return ErrnoError("pipe2", errno);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(err_pipe[1]);
  if (spawned != 0) {
    close(err_pipe[0]);
    return ErrnoError(absl::StrCat("cannot run ", argv[0], " (is it installed?)"), spawned);
  }
  std::string stderr_text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(err_pipe[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    stderr_text.append(buffer, static_cast<size_t>(n));
    if (stderr_text.size() > 2 * kStderrKept) stderr_text.erase(0, stderr_text.size() - kStderrKept);
  }
  close(err_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoError(absl::StrCat("waitpid(", argv[0], ")"), errno);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  if (stderr_text.size() > kStderrKept) stderr_text.erase(0, stderr_text.size() - kStderrKept);
  const std::string how = WIFEXITED(status) ? absl::StrCat("exited with status ", WEXITSTATUS(status))
                                            : absl::StrCat("was killed by signal ", WTERMSIG(status));
  return absl::InternalError(absl::StrCat("`", absl::StrJoin(argv, " "), "` ", how, ": ",
                                          absl::StripTrailingAsciiWhitespace(stderr_text)));
}

}  // namespace codecvisor::bench
