// A machine without user namespaces (a container whose seccomp profile
// refuses them, user.max_user_namespaces = 0): no backend can start in its
// full sandbox, and a user who cannot edit the installed manifests turns
// on the degraded sandbox for the process with
// CODECVISOR_ALLOW_DEGRADED_SANDBOX=1. Each case runs in a forked process
// that first enters a user namespace of its own and forbids any further
// one there (the limit is per namespace), so the test changes nothing
// outside it. The last case stands for an old kernel the same way.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "core/host.h"
#include "core/kernel_features.h"
#include "tests/host_test_support.h"
#include "tests/test_paths.h"

namespace codecvisor::testing {
namespace {

using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Host;
using ::codecvisor::internal::HostOptions;

bool WriteProc(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// The "Uid:" line of process `pid`'s status: real, effective, saved, fs.
std::string UidLine(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Uid:", 0) == 0) return line;
  }
  return "";
}

// A host with the synthetic backend (exits 2 if it cannot be made), and
// the open of `video` on it.
struct Opened {
  std::unique_ptr<Host> host;
  absl::StatusOr<std::unique_ptr<internal::VideoDecoder>> decoder;
};
Opened OpenSynthetic(const std::string& video) {
  HostOptions options;
  options.layout = TestLayout();
  auto host = Host::Create(options);
  if (!host.ok() || !(*host)->LoadBackend(Runfile("backends/testing/synthetic.toml")).ok()) _exit(2);
  DecoderOptions decoder_options;
  decoder_options.device = "synthetic";
  auto decoder = (*host)->OpenDecoder(video, decoder_options);
  return {*std::move(host), std::move(decoder)};
}

// Exits 0 if a synthetic frame decoded, 1 if the open failed with
// `want_in_error` in its message, 3 if it decoded but (`want_nobody`) the
// backend was not uid 65534, 2 otherwise.
[[noreturn]] void DecodeAndExit(const std::string& video, const char* want_in_error, bool want_nobody = false) {
  auto [host, decoder] = OpenSynthetic(video);
  if (!decoder.ok()) {
    std::fprintf(stderr, "open: %s\n", decoder.status().ToString().c_str());
    _exit(std::string(decoder.status().message()).find(want_in_error) != std::string::npos ? 1 : 2);
  }
  auto frame = (*decoder)->GetFrameAt(3);
  if (!frame.ok() || frame->index() != 3) _exit(2);
  if (want_nobody) {
    pid_t pid = -1;
    for (const auto& b : host->Backends()) {
      if (b.name == "synthetic") pid = b.pid;
    }
    const std::string uids = UidLine(pid);
    std::fprintf(stderr, "backend %d: %s\n", pid, uids.c_str());
    if (uids != "Uid:\t65534\t65534\t65534\t65534") _exit(3);
  }
  _exit(0);
}

// In a forked child: 10 if namespaces could not be forbidden here (the
// case cannot be made), 0 if a synthetic frame decoded, 1 if the open
// failed with `want_in_error` in its message, 2 otherwise.
// Makes this process one in a user namespace of its own that may make no
// other: where a backend gets the degraded sandbox. False if it cannot.
bool ForbidUserNamespaces() {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  return unshare(CLONE_NEWUSER) == 0 && WriteProc("/proc/self/setgroups", "deny") &&
         WriteProc("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") &&
         WriteProc("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1") &&
         WriteProc("/proc/sys/user/max_user_namespaces", "0");
}

[[noreturn]] void DecodeWithoutUserNamespaces(const std::string& video, const char* want_in_error) {
  if (!ForbidUserNamespaces()) _exit(10);
  DecodeAndExit(video, want_in_error);
}

// In a forked child whose backends get the degraded sandbox (no pid
// namespace: the host's pid is a real one to the backend): the hostile
// backend tries to renice the host and make it SCHED_IDLE (trapped: the
// host's pid is below the backend's; EPERM for an id above it), then sets
// its own thread's priority by its id. Exits 0 if each attack was denied
// so, the decoder's own call refused with EPERM (not trapped), and the
// host's priority and policy are as before; 1 if an attack was not denied
// so, 4 if the decoder's own call was not refused so, 3 if the host was
// changed, 10 if the case cannot be made, 2 on another failure.
[[noreturn]] void RescheduleTheHostWithoutAPidNamespace() {
  if (!ForbidUserNamespaces()) _exit(10);
  HostOptions options;
  options.layout = TestLayout();
  auto host = Host::Create(options);
  if (!host.ok() || !(*host)->LoadBackend(Runfile("backends/testing/hostile.toml")).ok()) _exit(2);
  const int nice_before = getpriority(PRIO_PROCESS, 0);
  const int policy_before = sched_getscheduler(0);
  auto attempt = [&](const std::string& attack) {
    const std::string video =
        WriteFile(attack + ".syn", "synthetic frames=10 width=8 height=4 fps=10 attack=" + attack +
                                       " host_pid=" + std::to_string(getpid()));
    DecoderOptions decoder_options;
    decoder_options.device = "hostile";
    auto decoder = (*host)->OpenDecoder(video, decoder_options);
    if (!decoder.ok()) _exit(2);
    const absl::Status status = (*decoder)->GetFrameAt(0).status();  // the backend answers with its verdict
    std::fprintf(stderr, "%s: %s\n", attack.c_str(), status.ToString().c_str());
    return std::string(status.message());
  };
  for (const auto& [attack, syscall] :
       {std::pair<std::string, std::string>{"renice_host", "setpriority"}, {"deschedule_host", "sched_setattr"}}) {
    const std::string seen = attempt(attack);
    if (seen.find("sandbox violation: syscall " + syscall) == std::string::npos &&
        seen.find("denied (Operation not permitted)") == std::string::npos) {
      _exit(1);
    }
  }
  // Its own threads by their ids: refused as a library gets over (EPERM),
  // not a trap that ends the backend; and its own, by 0, allowed.
  if (attempt("renice_own_thread").find("renice its own thread by its id: denied (Operation not permitted)") ==
      std::string::npos) {
    _exit(4);
  }
  _exit(getpriority(PRIO_PROCESS, 0) == nice_before && sched_getscheduler(0) == policy_before ? 0 : 3);
}

// What Docker's and containerd's default seccomp profiles do to a
// container without CAP_SYS_ADMIN, for the calls that start a backend:
// clone3 answers ENOSYS (so that glibc falls back to clone), clone with a
// CLONE_NEW* flag and unshare answer EPERM; with `namespaces_too` false,
// only the first. Then as DecodeWithoutUserNamespaces.
[[noreturn]] void DecodeInAContainersSeccomp(const std::string& video, bool namespaces_too,
                                             const char* want_in_error, bool want_nobody) {
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  bool ok = filter != nullptr && seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) == 0;
  if (namespaces_too) {
    for (uint64_t flag : {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
                          CLONE_NEWNET}) {
      ok = ok && seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                  SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)) == 0;
    }
    ok = ok && seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0) == 0;
  }
  if (!ok || seccomp_load(filter) != 0) _exit(10);
  DecodeAndExit(video, want_in_error, want_nobody);
}

// `child` (which does not return) in a forked process with
// CODECVISOR_ALLOW_DEGRADED_SANDBOX set to `degraded` (unless null): its
// exit status, or 100 + the signal that killed it.
template <typename Child>
int RunForked(const char* degraded, Child child) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (degraded != nullptr) setenv(kAllowDegradedEnv, degraded, 1);
    child();
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

int RunInContainer(const std::string& video, bool namespaces_too, const char* degraded, const char* want_in_error,
                   bool want_nobody = false) {
  return RunForked(degraded,
                   [&] { DecodeInAContainersSeccomp(video, namespaces_too, want_in_error, want_nobody); });
}

int RunInChild(const std::string& video, const char* degraded, const char* want_in_error) {
  return RunForked(degraded, [&] { DecodeWithoutUserNamespaces(video, want_in_error); });
}

// With no pid namespace, any pid a plugin names is a real process of its
// user's, the host among them: setpriority and sched_setattr were allowed
// on any, and a plugin made its host SCHED_IDLE at nice 19.
TEST(DegradedSandboxTest, APluginCannotRescheduleItsHost) {
  const int result = RunForked("1", [] { RescheduleTheHostWithoutAPidNamespace(); });
  ASSERT_NE(result, 10) << "this machine cannot forbid user namespaces in a namespace of the test's own";
  EXPECT_EQ(result, 0) << "1: an attack was not denied, 4: a thread's own renice by its id was not EPERM, 3: the "
                          "host's priority or policy changed, 2: set-up";
}

TEST(DegradedSandboxTest, TheEnvironmentAllowsItWhereNoUserNamespaceCanBeMade) {
  const std::string video = WriteFile("clip.syn", "synthetic frames=10 width=8 height=4 fps=10");
  const int strict = RunInChild(video, nullptr, "CODECVISOR_ALLOW_DEGRADED_SANDBOX=1");
  ASSERT_NE(strict, 10) << "this machine cannot forbid user namespaces in a namespace of the test's own";
  EXPECT_EQ(strict, 1) << "without it, the open fails naming the way out";
  EXPECT_EQ(RunInChild(video, "1", ""), 0) << "with it, the backend runs in what sandbox there is";
  EXPECT_EQ(RunInChild(video, "0", "CODECVISOR_ALLOW_DEGRADED_SANDBOX=1"), 1) << "only 1 turns it on";
}

// clone3 answering ENOSYS: the backend starts with the legacy clone, in
// its whole sandbox where clone may make namespaces, and (a container's
// profile refusing those too) in the degraded one when it is allowed. No
// backend started there at all, whatever the environment said.
TEST(DegradedSandboxTest, AContainersSeccompProfileWithoutClone3) {
  const std::string video = WriteFile("clip.syn", "synthetic frames=10 width=8 height=4 fps=10");
  const int alone = RunInContainer(video, /*namespaces_too=*/false, nullptr, "");
  ASSERT_NE(alone, 10) << "the filter could not be loaded";
  EXPECT_EQ(alone, 0) << "clone3 alone refused";
  const int strict = RunInContainer(video, /*namespaces_too=*/true, nullptr, "CODECVISOR_ALLOW_DEGRADED_SANDBOX=1");
  EXPECT_EQ(strict, 1) << "without the switch, the open fails naming it";
  // With it, a degraded sandbox; a root host's backend becomes nobody
  // there too (it ran as root, with root's capabilities).
  const bool root = geteuid() == 0;
  EXPECT_EQ(RunInContainer(video, /*namespaces_too=*/true, "1", "", /*want_nobody=*/root), 0)
      << "with it, a degraded sandbox" << (root ? ", as nobody" : "");
}

// In a forked child where what Linux 5.3 lacks is refused as it refuses
// it (waitid answers EINVAL for P_PIDFD; close_range answers ENOSYS; the
// other calls of later kernels the launcher does without are not used):
// decodes through a backend that is killed once and replaced, then
// destroys the host. Exits 0 if every backend process was reaped (this
// process has no child left, not even a zombie), 4 if one was not, 5 if
// the probe did not say how children are reaped, 6 if a descriptor of the
// host's reached the backend, 10 if the filter could not be loaded, 2 on
// any other failure.
[[noreturn]] void DecodeOnLinux53(const std::string& video) {
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  if (filter == nullptr ||
      seccomp_rule_add(filter, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(waitid), 1, SCMP_A0_32(SCMP_CMP_EQ, P_PIDFD, 0)) != 0 ||
      seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(close_range), 0) != 0 || seccomp_load(filter) != 0) {
    _exit(10);
  }
  // A descriptor the host left inheritable, high up: the child must close it.
  const int marker = memfd_create("codecvisor-host-only", 0);
  if (marker < 0 || dup2(marker, 200) != 200) _exit(2);
  const KernelFeatures features = ProbeKernelFeatures();
  if (!features.pidfd.present || features.pidfd.detail.find("reaped by pid") == std::string::npos) {
    std::fprintf(stderr, "pidfd probe: %s\n", features.pidfd.detail.c_str());
    _exit(5);
  }
  {
    auto [host, decoder] = OpenSynthetic(video);
    if (!decoder.ok() || !(*decoder)->GetFrameAt(1).ok()) _exit(2);
    for (const auto& b : host->Backends()) {
      if (b.name != "synthetic" || b.pid <= 0) continue;
      for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(b.pid) + "/fd")) {
        std::error_code error;
        if (std::filesystem::read_symlink(entry.path(), error).string().find("codecvisor-host-only") !=
            std::string::npos) {
          _exit(6);
        }
      }
      kill(b.pid, SIGKILL);
    }
    auto frame = (*decoder)->GetFrameAt(3);  // on its replacement
    if (!frame.ok() || frame->index() != 3) {
      std::fprintf(stderr, "after the kill: %s\n", frame.ok() ? "wrong frame" : frame.status().ToString().c_str());
      _exit(2);
    }
  }
  const pid_t left = waitpid(-1, nullptr, WNOHANG | __WALL);
  if (left != -1 || errno != ECHILD) {
    std::fprintf(stderr, "a child is left: waitpid answered %d\n", left);
    _exit(4);
  }
  _exit(0);
}

// Linux 5.3 has pidfds (and clone3) but not waitid(P_PIDFD), nor
// close_range: the launcher waits for its children by pid there, and marks
// descriptors close-on-exec one at a time. No backend started (close_range
// failed), and one that ended was never reaped.
TEST(DegradedSandboxTest, ALinux53KernelReapsEveryBackend) {
  const std::string video = WriteFile("clip.syn", "synthetic frames=10 width=8 height=4 fps=10");
  const int result = RunForked(nullptr, [&] { DecodeOnLinux53(video); });
  ASSERT_NE(result, 10) << "the filter could not be loaded";
  EXPECT_EQ(result, 0);
}

// In a forked child where clone3, clone with CLONE_PIDFD and pidfd_open
// answer ENOSYS, as before Linux 5.2 (or, with `only_pidfd_open`, where only
// pidfd_open answers ENOSYS, as a seccomp profile's default may: the
// launcher needs it only where clone3 is refused): exits 1 if the open failed naming the
// kernel Linux 5.3 needs and not advising the degraded sandbox, which
// cannot help; 0 if it opened; 10 if the filter could not be loaded, 2
// otherwise.
[[noreturn]] void OpenOnAKernelBefore53(const std::string& video, bool only_pidfd_open) {
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  bool ok = filter != nullptr;
  ok = ok && (only_pidfd_open ? seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(pidfd_open), 0)
                              : seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) == 0 &&
                                    seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone), 1,
                                                     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_PIDFD, CLONE_PIDFD)) == 0 &&
                                    seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(pidfd_open), 0)) == 0;
  if (!ok || seccomp_load(filter) != 0) _exit(10);
  auto [host, decoder] = OpenSynthetic(video);
  if (decoder.ok()) _exit(0);
  const std::string message(decoder.status().message());
  std::fprintf(stderr, "open: %s\n", message.c_str());
  _exit(message.find("Linux 5.3") != std::string::npos && message.find(kAllowDegradedEnv) == std::string::npos ? 1
                                                                                                                : 2);
}

// Before Linux 5.3 no backend can start, whatever the sandbox settings:
// the open says which kernel is needed, and does not advise the degraded
// sandbox (it did, and then failed the same way with it). (Linux 5.2's
// pidfd that cannot be polled cannot be made here.)
TEST(DegradedSandboxTest, AKernelBefore53IsNamed) {
  const std::string video = WriteFile("clip.syn", "synthetic frames=10 width=8 height=4 fps=10");
  for (const char* degraded : {static_cast<const char*>(nullptr), "1"}) {
    const int result = RunForked(degraded, [&] { OpenOnAKernelBefore53(video, /*only_pidfd_open=*/false); });
    ASSERT_NE(result, 10) << "the filter could not be loaded";
    EXPECT_EQ(result, 1) << (degraded ? "degraded allowed" : "");
  }
  EXPECT_EQ(RunForked(nullptr, [&] { OpenOnAKernelBefore53(video, /*only_pidfd_open=*/true); }), 0)
      << "a refused pidfd_open is not an old kernel";
}

}  // namespace
}  // namespace codecvisor::testing
