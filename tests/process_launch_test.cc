// SystemProcessLauncher against real children: what a failed start reports
// when the host's descriptor numbers are low (a host started with its
// stdio closed).

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/cgroup_paths.h"
#include "core/cgroup.h"
#include "core/process.h"
#include "core/process_clone.h"
#include "gtest/gtest.h"
#include "ipc/unique_fd.h"

namespace codecvisor {
namespace {

// The lowest descriptor number not in use (the next open gets it).
int LowestFree() {
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  close(fd);
  return fd;
}

// The number the launch's error pipe will get: its first pipe takes the two
// lowest free numbers, and the write end (the child's) gets the second.
int ErrorPipeNumber() {
  const int first = LowestFree();
  ipc::UniqueFd hold(open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int second = LowestFree();
  hold.reset();
  EXPECT_EQ(first + 1, second) << "the two lowest free numbers are not adjacent";
  return second;
}

// Every test runs twice: with clone3 and with the clone a container's
// seccomp profile leaves (core/process_clone.h).
class ProcessLaunchTest : public ::testing::TestWithParam<bool> {
 protected:
  ProcessLaunchTest() { process_internal::ForceLegacyCloneForTesting(GetParam()); }
  ~ProcessLaunchTest() override { process_internal::ForceLegacyCloneForTesting(false); }

  SystemProcessLauncher launcher;
  ipc::UniqueFd devnull{open("/dev/null", O_RDONLY | O_CLOEXEC)};
};

INSTANTIATE_TEST_SUITE_P(Clone, ProcessLaunchTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "clone" : "clone3"; });

TEST_P(ProcessLaunchTest, AFailedExecIsReportedWhenTheErrorPipeHasAMappedNumber) {
  ASSERT_TRUE(devnull.valid());
  const int second = ErrorPipeNumber();
  LaunchSpec spec;
  spec.path = "/nonexistent/codecvisor-process-launch-test";
  spec.argv = {spec.path};
  spec.fds = {{devnull.get(), second}};
  absl::StatusOr<ChildProcess> child = launcher.Launch(spec);
  ASSERT_FALSE(child.ok()) << "a child that could not exec was taken for started";
  EXPECT_EQ(child.status().code(), absl::StatusCode::kNotFound) << child.status();
  EXPECT_NE(child.status().message().find("starting /nonexistent/codecvisor-process-launch-test"), std::string::npos)
      << child.status();
}

TEST_P(ProcessLaunchTest, AChildStartsWithItsDescriptorsWhateverNumbersTheHostHas) {
  ASSERT_TRUE(devnull.valid());
  const int second = ErrorPipeNumber();
  LaunchSpec spec;
  spec.path = "/bin/sh";
  // Exits 0 only if the mapped number is open in the child.
  spec.argv = {"/bin/sh", "-c", "exec 9<&" + std::to_string(second)};
  spec.fds = {{devnull.get(), second}};
  absl::StatusOr<ChildProcess> child = launcher.Launch(spec);
  ASSERT_TRUE(child.ok()) << child.status();
  absl::StatusOr<ExitStatus> exit = launcher.Wait(*child, ipc::Clock::now() + std::chrono::seconds(30));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_FALSE(exit->signaled);
  EXPECT_EQ(exit->code, 0) << exit->ToString();
}

// What a child writes to its stdout, and how it ended.
struct Output {
  std::string text;
  ExitStatus exit;
};

Output RunForOutput(ProcessLauncher& launcher, std::vector<std::string> argv, SandboxSpec sandbox = {}) {
  int out[2];
  EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
  ipc::UniqueFd read_end(out[0]), write_end(out[1]);
  LaunchSpec spec;
  spec.sandbox = std::move(sandbox);
  spec.path = argv[0];
  spec.argv = std::move(argv);
  spec.fds = {{write_end.get(), 1}};
  absl::StatusOr<ChildProcess> child = launcher.Launch(spec);
  EXPECT_TRUE(child.ok()) << child.status();
  if (!child.ok()) return {};
  write_end.reset();
  Output output;
  char buf[4096];
  for (ssize_t n; (n = read(read_end.get(), buf, sizeof(buf))) > 0;) output.text.append(buf, static_cast<size_t>(n));
  absl::StatusOr<ExitStatus> exit = launcher.Wait(*child, ipc::Clock::now() + std::chrono::seconds(30));
  EXPECT_TRUE(exit.ok()) << exit.status();
  if (exit.ok()) output.exit = *exit;
  return output;
}

// A start shares the host's memory until the exec instead of copying it:
// afterwards the host writes its pages without a fault each, as it would
// if every page had been made copy-on-write by a fork-style clone.
TEST_P(ProcessLaunchTest, AStartLeavesTheHostsPagesWritable) {
  if (!process_internal::StartsShareHostMemory()) {
    GTEST_SKIP() << "a ThreadSanitizer build starts children as copies (core/process_clone.h)";
  }
  constexpr size_t kBytes = size_t{256} << 20;
  constexpr size_t kPage = 4096;
  void* mapped = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  auto* pages = static_cast<char*>(mapped);
  ASSERT_EQ(madvise(pages, kBytes, MADV_NOHUGEPAGE), 0);  // one fault per page, whatever the THP setting
  for (size_t i = 0; i < kBytes; i += kPage) pages[i] = 1;
  const Output output = RunForOutput(launcher, {"/bin/true"});
  EXPECT_EQ(output.exit.code, 0) << output.exit.ToString();
  rusage before{}, after{};
  ASSERT_EQ(getrusage(RUSAGE_THREAD, &before), 0);
  for (size_t i = 0; i < kBytes; i += kPage) pages[i] = 2;
  ASSERT_EQ(getrusage(RUSAGE_THREAD, &after), 0);
  EXPECT_LT(after.ru_minflt - before.ru_minflt, static_cast<long>(kBytes / kPage / 16))
      << "writing the host's " << kBytes / kPage << " pages after a start faulted: the start copied the host";
  munmap(pages, kBytes);
}

// Every signal is blocked across the clone (core/process_clone.h); the
// child must not keep that mask into the program it runs.
TEST_P(ProcessLaunchTest, AChildRunsWithTheHostsSignalMask) {
  const Output output = RunForOutput(launcher, {"/bin/grep", "^SigBlk:", "/proc/self/status"});
  EXPECT_EQ(output.exit.code, 0) << output.exit.ToString();
  EXPECT_EQ(output.text, "SigBlk:\t0000000000000000\n");
}

// In its own namespaces the child is root mapped to a single id outside:
// the host wrote its maps (from the helper thread, while the cloning
// thread was suspended) before letting it go on.
TEST_P(ProcessLaunchTest, AChildInItsOwnNamespacesIsRootMappedToOneIdOutside) {
  SandboxSpec sandbox;
  sandbox.namespaces = true;
  const Output output = RunForOutput(launcher, {"/bin/cat", "/proc/self/uid_map", "/proc/self/gid_map"}, sandbox);
  EXPECT_EQ(output.exit.code, 0) << output.exit.ToString();
  const std::vector<std::string> lines = absl::StrSplit(output.text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << output.text;
  for (const std::string& line : lines) {
    const std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    ASSERT_EQ(fields.size(), 3u) << line;
    EXPECT_EQ(fields[0], "0") << line;
    EXPECT_EQ(fields[2], "1") << line;
  }
}

// The child runs in its cgroups (v1 here: memory and pids) from its first
// instruction, whether born there (core/cgroup_birth.h) or, with a limit of
// one task that the cloning thread inside would fill, moved there by pid.
TEST_P(ProcessLaunchTest, AChildRunsInItsCgroupsWhateverItsTaskLimit) {
  const CgroupLayout layout = ProbeCgroupLayout();
  ASSERT_NE(layout.version, 0) << layout.missing
                               << " (in Bazel's sandbox, tools/test.sh makes the cgroup hierarchies writable)";
  for (const uint64_t tasks : {uint64_t{64}, uint64_t{1}}) {
    auto cg = BackendCgroup::Create(layout, absl::StrCat("launch", tasks), 256 << 20, tasks);
    ASSERT_TRUE(cg.ok()) << cg.status();
    const std::string dir = (*cg)->memory_dir();
    const std::string name = dir.substr(dir.rfind('/') + 1);
    int out[2];
    ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
    ipc::UniqueFd read_end(out[0]), write_end(out[1]);
    LaunchSpec spec;
    spec.path = "/bin/cat";
    spec.argv = {"/bin/cat", "/proc/self/cgroup"};
    spec.fds = {{write_end.get(), 1}};
    spec.sandbox.cgroup_procs = (*cg)->procs_files();
    spec.sandbox.cgroup_version = (*cg)->version();
    absl::StatusOr<ChildProcess> child = launcher.Launch(spec);
    ASSERT_TRUE(child.ok()) << tasks << " tasks: " << child.status();
    write_end.reset();
    std::string cgroups;
    char buf[4096];
    for (ssize_t n; (n = read(read_end.get(), buf, sizeof(buf))) > 0;) cgroups.append(buf, static_cast<size_t>(n));
    absl::StatusOr<ExitStatus> exit = launcher.Wait(*child, ipc::Clock::now() + std::chrono::seconds(30));
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_EQ(exit->code, 0) << exit->ToString();
    size_t found = 0;
    for (size_t at = cgroups.find(name); at != std::string::npos; at = cgroups.find(name, at + 1)) ++found;
    EXPECT_EQ(found, (*cg)->procs_files().size()) << tasks << " tasks: " << cgroups;
    // No thread of this process is in the child's cgroup: the launcher's,
    // which cloned it, never entered it.
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      EXPECT_EQ(ReadFileText(task.path() / "cgroup").find(name), std::string::npos)
          << "thread " << task.path() << " in the child's cgroup";
    }
  }
}

// A start must charge nothing of the host's size to the child's cgroup. A
// fork-style clone copies the host's page tables, and on cgroup v1 that
// kernel memory is charged to the cgroup of the thread that clones: were
// that thread in the child's cgroup, a host whose page tables alone exceed
// its backend's memory limit (a training process with many GiB resident,
// 256 MiB backends) would meet that cgroup's OOM killer. Here 1 GiB
// resident (2 MiB of page tables) against a limit of 1.5 MiB, which
// /bin/true fits in: the limit is never reached.
TEST_P(ProcessLaunchTest, AHostWhosePageTablesExceedTheChildsMemoryLimitSurvivesTheStart) {
  const CgroupLayout layout = ProbeCgroupLayout();
  ASSERT_NE(layout.version, 0) << layout.missing
                               << " (in Bazel's sandbox, tools/test.sh makes the cgroup hierarchies writable)";
  constexpr size_t kResident = size_t{1} << 30;
  std::vector<char> resident(kResident);
  for (size_t i = 0; i < kResident; i += 4096) resident[i] = 1;
  auto cg = BackendCgroup::Create(layout, "tiny", 3 << 19, 64);
  ASSERT_TRUE(cg.ok()) << cg.status();
  LaunchSpec spec;
  spec.path = "/bin/true";
  spec.argv = {"/bin/true"};
  spec.sandbox.cgroup_procs = (*cg)->procs_files();
  spec.sandbox.cgroup_version = (*cg)->version();
  absl::StatusOr<ChildProcess> child = launcher.Launch(spec);
  ASSERT_TRUE(child.ok()) << child.status();
  absl::StatusOr<ExitStatus> exit = launcher.Wait(*child, ipc::Clock::now() + std::chrono::seconds(30));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->code, 0) << exit->ToString();
  // How often a charge met the limit (v1: memory.failcnt; v2: "max" in
  // memory.events).
  const std::string dir = (*cg)->memory_dir();
  const std::string text = ReadFileText(dir + (layout.version == 1 ? "/memory.failcnt" : "/memory.events"));
  if (layout.version == 1) {
    EXPECT_EQ(text, "0\n") << "the start was charged past the child's limit";
  } else {
    EXPECT_NE(text.find("max 0\n"), std::string::npos) << text;
  }
  EXPECT_EQ(resident[kResident - 4096], 1);
}

}  // namespace
}  // namespace codecvisor
