#include "base/standard_descriptors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "gtest/gtest.h"

namespace codecvisor {
namespace {

bool IsDevNull(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3;
}

// Runs `body` in a forked child with the given standard descriptors
// closed (the test's own stay as they are); returns the child's exit code.
template <typename Body>
int InChildWithClosed(std::initializer_list<int> closed, Body body) {
  const pid_t pid = fork();
  if (pid == 0) {
    for (int fd : closed) close(fd);
    _exit(body());
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(StandardDescriptorsTest, ClosedOnesBecomeDevNullAndTheNextOpenGetsAHigherNumber) {
  EXPECT_EQ(InChildWithClosed({0, 1, 2},
                              [] {
                                if (!FillClosedStandardDescriptors()) return 1;
                                for (int fd = 0; fd <= 2; ++fd) {
                                  if (!IsDevNull(fd)) return 2;
                                  // A standard stream: inherited across exec.
                                  if ((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0) return 3;
                                }
                                // Used the way a standard stream is, each
                                // fails as the closed one did.
                                char byte = 0;
                                if (read(0, &byte, 1) != -1 || errno != EBADF) return 4;
                                if (write(1, "x", 1) != -1 || errno != EBADF) return 4;
                                if (write(2, "x", 1) != -1 || errno != EBADF) return 4;
                                int p[2];
                                if (pipe(p) != 0 || p[0] <= 2 || p[1] <= 2) return 5;
                                return 0;
                              }),
            0)
      << "1: reported failure, 2: not /dev/null, 3: close-on-exec, 4: a read of 0 or a write to 1 or 2 did not fail "
         "with EBADF, 5: a pipe got 0-2";
}

TEST(StandardDescriptorsTest, OpenOnesAreLeftAlone) {
  EXPECT_EQ(InChildWithClosed({1},
                              [] {
                                // 0 and 2 are the test's own: not /dev/null
                                // unless the runner made them so; they must
                                // be the same files afterwards.
                                struct stat before0 = {}, before2 = {}, after0 = {}, after2 = {};
                                if (fstat(0, &before0) != 0 || fstat(2, &before2) != 0) return 1;
                                if (!FillClosedStandardDescriptors()) return 2;
                                if (fstat(0, &after0) != 0 || fstat(2, &after2) != 0) return 3;
                                if (before0.st_ino != after0.st_ino || before0.st_dev != after0.st_dev ||
                                    before2.st_ino != after2.st_ino || before2.st_dev != after2.st_dev) {
                                  return 4;
                                }
                                return IsDevNull(1) ? 0 : 5;
                              }),
            0)
      << "1/3: fstat, 2: reported failure, 4: an open descriptor replaced, 5: the closed one not /dev/null";
}

}  // namespace
}  // namespace codecvisor
