// File: core/cgroup_test.cc
//
// Where backend cgroups go, from /proc texts of the host kinds codecvisor
// runs on; and, where this machine lets the test make cgroups, a real one.

#include "core/cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/cgroup_paths.h"
#include "base/lowered_file_limit_for_test.h"
#include "gtest/gtest.h"

namespace codecvisor {
namespace {

// This project's machine kind: memory and pids are v1 controllers, the v2
// mount holds the rest (a hybrid host).
constexpr char kHybridCgroup[] =
    "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/0af2\n2:cpu,cpuacct:/\n0::/\n";
constexpr char kHybridMounts[] =
    "30 25 0:26 / /sys/fs/cgroup ro,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n"
    "34 30 0:30 / /sys/fs/cgroup/memory rw,relatime shared:12 - cgroup cgroup rw,memory\n"
    "38 30 0:34 / /sys/fs/cgroup/pids rw,relatime shared:16 - cgroup cgroup rw,pids\n"
    "35 30 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n";

// A current distribution: one v2 hierarchy, the host in a user slice.
constexpr char kUnifiedCgroup[] = "0::/user.slice/user-1000.slice/session-2.scope\n";
constexpr char kUnifiedMounts[] =
    "25 30 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

TEST(CgroupLayoutTest, AHybridHostUsesTheV1MemoryAndPidsHierarchies) {
  const CgroupLayout l = FindCgroupLayout(kHybridCgroup, kHybridMounts);
  EXPECT_EQ(l.version, 1);
  EXPECT_EQ(l.memory_dir, "/sys/fs/cgroup/memory/process_api/0af2");
  EXPECT_EQ(l.pids_dir, "/sys/fs/cgroup/pids");
  EXPECT_EQ(l.memory_mount, "/sys/fs/cgroup/memory");
  EXPECT_EQ(l.pids_mount, "/sys/fs/cgroup/pids");
  EXPECT_EQ(l.Describe(), "cgroup v1: memory under /sys/fs/cgroup/memory/process_api/0af2, pids under /sys/fs/cgroup/pids");
}

TEST(CgroupLayoutTest, APureV2HostUsesItsOwnCgroup) {
  const CgroupLayout l = FindCgroupLayout(kUnifiedCgroup, kUnifiedMounts);
  EXPECT_EQ(l.version, 2);
  EXPECT_EQ(l.memory_dir, "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope");
  EXPECT_EQ(l.memory_mount, "/sys/fs/cgroup");
}

TEST(CgroupLayoutTest, ACgroupNamespaceShowsOnlyWhatIsBelowItsRoot) {
  const CgroupLayout l =
      FindCgroupLayout("0::/\n", "25 30 0:23 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  EXPECT_EQ(l.version, 2);
  EXPECT_EQ(l.memory_dir, "/sys/fs/cgroup");
}

TEST(CgroupLayoutTest, WhatIsMissingIsSaid) {
  EXPECT_EQ(FindCgroupLayout("", "").version, 0);
  EXPECT_NE(FindCgroupLayout("", "").missing.find("no cgroup filesystem"), std::string::npos);
  const CgroupLayout no_pids = FindCgroupLayout("4:memory:/\n", "34 30 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  EXPECT_EQ(no_pids.version, 0);
  EXPECT_NE(no_pids.missing.find("no pids hierarchy"), std::string::npos) << no_pids.missing;
  EXPECT_EQ(no_pids.Describe().rfind("no cgroup: ", 0), 0u);
  const CgroupLayout outside = FindCgroupLayout("0::/../sibling\n", kUnifiedMounts);
  EXPECT_EQ(outside.version, 0);
  EXPECT_NE(outside.missing.find("/../sibling is outside what its cgroup mounts show"), std::string::npos)
      << outside.missing;
}

// A pid that runs in no namespace of any Linux machine (PID_MAX_LIMIT is
// 4194304): a host of this name is gone.
constexpr char kDeadPid[] = "4194305";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A probe run with no descriptor to spare (a host at its `ulimit -n`)
// says so, not that the machine has no cgroup filesystem, and the next
// probe, with descriptors, finds what the machine has.
TEST(CgroupLayoutTest, AProbeShortOfDescriptorsSaysSo) {
  const CgroupLayout before = ProbeCgroupLayout();
  ASSERT_FALSE(before.short_of_descriptors);
  CgroupLayout short_of;
  {
    codecvisor::testing::LoweredFileLimit none(0);  // no open succeeds
    ASSERT_TRUE(none.ok());
    short_of = ProbeCgroupLayout();
  }
  EXPECT_TRUE(short_of.short_of_descriptors);
  EXPECT_EQ(short_of.version, 0);
  EXPECT_NE(short_of.missing.find("Too many open files"), std::string::npos) << short_of.missing;
  const CgroupLayout after = ProbeCgroupLayout();
  EXPECT_FALSE(after.short_of_descriptors);
  EXPECT_EQ(after.version, before.version);
  EXPECT_EQ(after.memory_dir, before.memory_dir);
}

// On a machine that lets this process make cgroups (root here; tools/test.sh
// makes the cgroup hierarchies writable in Bazel's sandbox), a backend
// cgroup has the limits asked for and is gone after destruction.
TEST(BackendCgroupTest, MadeWithItsLimitsAndRemoved) {
  const CgroupLayout layout = ProbeCgroupLayout();
  ASSERT_NE(layout.version, 0) << layout.missing
                               << " (in Bazel's sandbox, tools/test.sh makes the cgroup hierarchies writable)";
  std::string memory_dir;
  {
    auto cg = BackendCgroup::Create(layout, "unit", 256 << 20, 64);
    ASSERT_TRUE(cg.ok()) << cg.status();
    memory_dir = (*cg)->memory_dir();
    struct stat st{};
    ASSERT_EQ(stat(memory_dir.c_str(), &st), 0);
    if (layout.version == 1) {
      EXPECT_EQ(std::stoull(Read(memory_dir + "/memory.limit_in_bytes")), 256u << 20);
      EXPECT_EQ(Read(layout.pids_dir + memory_dir.substr(memory_dir.rfind('/')) + "/pids.max"), "64\n");
    } else {
      EXPECT_EQ(Read(memory_dir + "/memory.max"), "268435456\n");
      EXPECT_EQ(Read(memory_dir + "/pids.max"), "64\n");
    }
    EXPECT_EQ((*cg)->procs_files().size(), layout.version == 1 ? 2u : 1u);
    EXPECT_EQ((*cg)->OomKills(), 0u);
  }
  struct stat st{};
  EXPECT_NE(stat(memory_dir.c_str(), &st), 0) << memory_dir << " was not removed";
}

// A process in a cgroup with a memory limit sizes its memory by that limit,
// not by the machine's (a container started with --memory): the batch
// cache, the Python package's MemoryError and a backend's own cap use it.
TEST(BackendCgroupTest, AProcessInsideSeesItsLimitAsUsableMemory) {
  const CgroupLayout layout = ProbeCgroupLayout();
  ASSERT_NE(layout.version, 0) << layout.missing;
  constexpr uint64_t kLimit = 192 << 20;
  ASSERT_GT(UsableMemoryBytes(), kLimit);
  auto cg = BackendCgroup::Create(layout, "usable", kLimit, 64);
  ASSERT_TRUE(cg.ok()) << cg.status();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (const std::string& procs : (*cg)->procs_files()) {
      std::ofstream(procs) << getpid() << std::flush;
    }
    const uint64_t usable = UsableMemoryBytes();
    _exit(write(fds[1], &usable, sizeof(usable)) == sizeof(usable) ? 0 : 1);
  }
  close(fds[1]);
  uint64_t seen = 0;
  EXPECT_EQ(read(fds[0], &seen, sizeof(seen)), static_cast<ssize_t>(sizeof(seen)));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(seen, kLimit);
  EXPECT_GT(UsableMemoryBytes(), kLimit) << "outside it, the limit does not apply";
}

// This process's pid namespace's id, as cgroup names hold it ("" if unreadable).
std::string PidNamespaceId() {
  char link[64] = {};
  if (readlink("/proc/self/ns/pid", link, sizeof(link) - 1) <= 0) return "";
  const std::string text(link);  // "pid:[4026531836]"
  return text.substr(text.find('[') + 1, text.find(']') - text.find('[') - 1);
}

// A cgroup left by a host of this pid namespace that is gone is removed
// when the next one is made; one named for another pid namespace is not
// judged by its pid (a host in another container or test sandbox may have
// just made it, and its pid means nothing here), but removed once it has
// stayed empty and unchanged for ten minutes: a killed host's container
// never comes back to remove it.
TEST(BackendCgroupTest, StaleCgroupsOfThisPidNamespaceAndOldEmptyOnesOfOthersAreRemoved) {
  const CgroupLayout layout = ProbeCgroupLayout();
  ASSERT_NE(layout.version, 0) << layout.missing;
  const std::string ns = PidNamespaceId();
  ASSERT_FALSE(ns.empty());
  const std::string dead = kDeadPid;
  const std::string ours = layout.memory_dir + "/codecvisor-" + ns + "-" + dead + "-0-stale";
  const std::string theirs = layout.memory_dir + "/codecvisor-1" + ns + "-" + dead + "-0-other";
  const std::string theirs_old = layout.memory_dir + "/codecvisor-1" + ns + "-" + dead + "-1-other";
  for (const std::string& dir : {ours, theirs, theirs_old}) ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
  const timespec eleven_minutes_ago[2] = {{time(nullptr) - 11 * 60, 0}, {time(nullptr) - 11 * 60, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, theirs_old.c_str(), eleven_minutes_ago, 0), 0) << std::strerror(errno);
  {
    auto cg = BackendCgroup::Create(layout, "unit", 256 << 20, 64);
    ASSERT_TRUE(cg.ok()) << cg.status();
  }
  struct stat st{};
  EXPECT_NE(stat(ours.c_str(), &st), 0) << ours << " (this namespace, pid gone) was not removed";
  EXPECT_EQ(stat(theirs.c_str(), &st), 0) << theirs << " (another namespace, just made) was removed";
  EXPECT_NE(stat(theirs_old.c_str(), &st), 0) << theirs_old << " (another namespace, 11 minutes old) was not removed";
  for (const std::string& dir : {ours, theirs, theirs_old}) rmdir(dir.c_str());
}

// A host that ran inside a backend's cgroup and was killed (a test's child,
// OOM-killed) left its own backends' cgroups in it: destroying the outer
// one removes them first, and a stale one is removed with what it holds.
TEST(BackendCgroupTest, CgroupsLeftInsideACgroupGoWithIt) {
  const CgroupLayout layout = ProbeCgroupLayout();
  ASSERT_NE(layout.version, 0) << layout.missing;
  const std::string ns = PidNamespaceId();
  ASSERT_FALSE(ns.empty());
  std::string memory_dir;
  {
    auto cg = BackendCgroup::Create(layout, "outer", 256 << 20, 64);
    ASSERT_TRUE(cg.ok()) << cg.status();
    memory_dir = (*cg)->memory_dir();
    const std::string inner = memory_dir + "/codecvisor-" + ns + "-" + std::string(kDeadPid) + "-0-inner";
    ASSERT_EQ(mkdir(inner.c_str(), 0755), 0) << inner;
    ASSERT_EQ(mkdir((inner + "/codecvisor-" + ns + "-" + std::string(kDeadPid) + "-1-innermost").c_str(), 0755), 0);
  }
  struct stat st{};
  EXPECT_NE(stat(memory_dir.c_str(), &st), 0) << memory_dir << " was not removed";
}

// A host killed in another job's cgroup (a sibling of this process's: a
// systemd scope, a pod) left its backend's cgroup there; no later host of
// that job will sweep it, so this one does, as it does its own folder's.
TEST(BackendCgroupTest, StaleCgroupsInASiblingJobsCgroupAreRemoved) {
  const CgroupLayout layout = ProbeCgroupLayout();
  ASSERT_NE(layout.version, 0) << layout.missing;
  ASSERT_NE(layout.memory_dir, layout.memory_mount) << "this process is in its hierarchy's root: it has no siblings";
  const std::string ns = PidNamespaceId();
  ASSERT_FALSE(ns.empty());
  const std::string job = layout.memory_dir.substr(0, layout.memory_dir.rfind('/')) + "/cv-test-job-" +
                          std::to_string(getpid());
  const std::string stale = job + "/codecvisor-" + ns + "-" + std::string(kDeadPid) + "-0-stale";
  ASSERT_EQ(mkdir(job.c_str(), 0755), 0) << job;
  ASSERT_EQ(mkdir(stale.c_str(), 0755), 0) << stale;
  {
    auto cg = BackendCgroup::Create(layout, "unit", 256 << 20, 64);
    ASSERT_TRUE(cg.ok()) << cg.status();
  }
  struct stat st{};
  EXPECT_NE(stat(stale.c_str(), &st), 0) << stale << " (a sibling job's, its host gone) was not removed";
  EXPECT_EQ(stat(job.c_str(), &st), 0) << job << ", the job's own cgroup, was removed";
  rmdir(stale.c_str());
  rmdir(job.c_str());
}

// A killed process's cgroup named as this process would name its own (the
// same pid, in a pid namespace whose id the kernel reused: a test sandbox
// after a killed test run) does not stop this process making its own,
// even holding the cgroup the killed process's own child left in it.
TEST(BackendCgroupTest, ALeftoverWithThisProcesssOwnNameIsReplaced) {
  const CgroupLayout layout = ProbeCgroupLayout();
  ASSERT_NE(layout.version, 0) << layout.missing;
  const std::string ns = PidNamespaceId();
  ASSERT_FALSE(ns.empty());
  // Every name this test binary's next Create may use (its counter is below 64).
  std::vector<std::string> leftovers;
  for (int n = 0; n < 64; ++n) {
    leftovers.push_back(absl::StrCat(layout.memory_dir, "/codecvisor-", ns, "-", getpid(), "-", n, "-unit"));
    if (mkdir(leftovers.back().c_str(), 0755) != 0) {
      leftovers.pop_back();  // this binary's own, made before
      continue;
    }
    const std::string inner = leftovers.back() + "/codecvisor-" + ns + "-999999-0-synthetic";
    ASSERT_EQ(mkdir(inner.c_str(), 0755), 0) << inner;
  }
  ASSERT_FALSE(leftovers.empty());
  {
    auto cg = BackendCgroup::Create(layout, "unit", 256 << 20, 64);
    EXPECT_TRUE(cg.ok()) << cg.status();
  }
  for (const std::string& dir : leftovers) {
    rmdir((dir + "/codecvisor-" + ns + "-999999-0-synthetic").c_str());
    rmdir(dir.c_str());
  }
}

}  // namespace
}  // namespace codecvisor
