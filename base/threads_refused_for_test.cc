#include "base/threads_refused_for_test.h"

#include <seccomp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace codecvisor::testing {

absl::StatusOr<std::string> RunWithSyscallsRefused(std::initializer_list<int> syscalls, int error,
                                                   absl::FunctionRef<std::string()> check) {
  int fds[2];
  if (pipe(fds) != 0) return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  const pid_t child = fork();
  if (child < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (child == 0) {
    close(fds[0]);
    scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
    bool ok = filter != nullptr;
    for (int nr : syscalls) ok = ok && seccomp_rule_add(filter, SCMP_ACT_ERRNO(error), nr, 0) == 0;
    if (!ok || seccomp_load(filter) != 0) _exit(2);
    const std::string said = check();
    (void)!write(fds[1], said.data(), said.size());
    _exit(0);
  }
  close(fds[1]);
  std::string said;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) said.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  if (waitpid(child, &status, 0) != child) return absl::InternalError("waitpid failed");
  if (!WIFEXITED(status)) return absl::InternalError(absl::StrCat("the child died of signal ", WTERMSIG(status)));
  if (WEXITSTATUS(status) != 0) return absl::InternalError("the child could not load its seccomp filter");
  return said;
}

absl::StatusOr<std::string> RunWithThreadsRefused(absl::FunctionRef<std::string()> check, int error) {
  return RunWithSyscallsRefused({SCMP_SYS(clone), SCMP_SYS(clone3)}, error, check);
}

}  // namespace codecvisor::testing
