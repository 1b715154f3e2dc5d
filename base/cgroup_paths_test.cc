// File: base/cgroup_paths_test.cc
//
// This process's memory cgroups and their limit, from /proc texts of the
// host kinds codecvisor runs on and fake limit files.

#include "base/cgroup_paths.h"

#include <unistd.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace codecvisor {
namespace {

using Files = std::map<std::string, std::string>;

std::function<std::string(const std::string&)> Reader(const Files& files) {
  return [files](const std::string& path) {
    auto it = files.find(path);
    return it == files.end() ? std::string() : it->second;
  };
}

// This project's machine kind: memory is a v1 controller; the v2 mount
// holds the rest (a hybrid host).
constexpr char kHybridCgroup[] = "8:pids:/\n4:memory:/process_api/0af2\n2:cpu,cpuacct:/\n0::/\n";
constexpr char kHybridMounts[] =
    "30 25 0:26 / /sys/fs/cgroup ro,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n"
    "34 30 0:30 / /sys/fs/cgroup/memory rw,relatime shared:12 - cgroup cgroup rw,memory\n"
    "38 30 0:34 / /sys/fs/cgroup/pids rw,relatime shared:16 - cgroup cgroup rw,pids\n";

// A current distribution: one v2 hierarchy, the process in a user slice.
constexpr char kUnifiedCgroup[] = "0::/user.slice/user-1000.slice/session-2.scope\n";
constexpr char kUnifiedMounts[] =
    "25 30 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";

TEST(MemoryCgroupDirsTest, AHybridHostUsesTheV1MemoryHierarchyUpToItsRoot) {
  EXPECT_EQ(MemoryCgroupDirs(kHybridCgroup, kHybridMounts),
            (std::vector<std::string>{"/sys/fs/cgroup/memory/process_api/0af2", "/sys/fs/cgroup/memory/process_api",
                                      "/sys/fs/cgroup/memory"}));
}

TEST(MemoryCgroupDirsTest, APureV2HostUsesItsOwnCgroupAndTheSlicesAboveIt) {
  EXPECT_EQ(MemoryCgroupDirs(kUnifiedCgroup, kUnifiedMounts),
            (std::vector<std::string>{"/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope",
                                      "/sys/fs/cgroup/user.slice/user-1000.slice", "/sys/fs/cgroup/user.slice",
                                      "/sys/fs/cgroup"}));
}

TEST(MemoryCgroupDirsTest, AContainersNamespaceShowsItsOwnCgroupAsTheRoot) {
  // docker with a cgroup namespace: "0::/" and the mount's root is the
  // container's cgroup, whose memory.max is the --memory limit.
  EXPECT_EQ(MemoryCgroupDirs("0::/\n", "25 30 0:23 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
            (std::vector<std::string>{"/sys/fs/cgroup"}));
}

TEST(MemoryCgroupDirsTest, MountPointsAreUnescapedAndRootsMatchWholeComponents) {
  // A mount point with a space, as mountinfo writes it (\040).
  EXPECT_EQ(MemoryCgroupDirs("0::/job\n", "25 30 0:23 / /mnt/cgroup\\040fs rw - cgroup2 cgroup2 rw\n"),
            (std::vector<std::string>{"/mnt/cgroup fs/job", "/mnt/cgroup fs"}));
  // A root of /docker/abc does not hold /docker/abcdef: that path is shown
  // as the namespace shows it, under the mount point.
  EXPECT_EQ(MemoryCgroupDirs("0::/docker/abcdef\n", "25 30 0:23 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
                .front(),
            "/sys/fs/cgroup/docker/abcdef");
}

TEST(MemoryCgroupDirsTest, TheMountWhoseRootHoldsThePathWins) {
  // The hierarchy's root at /sys/fs/cgroup, and a bind mount of another
  // subtree listed after it.
  const char mounts[] =
      "25 30 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
      "26 30 0:23 /other /srv/other rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(MemoryCgroupDirs("0::/job/step\n", mounts).front(), "/sys/fs/cgroup/job/step");
  EXPECT_EQ(MemoryCgroupDirs("0::/other/x\n", mounts).front(), "/srv/other/x");
}

TEST(MemoryCgroupDirsTest, APathOutOfTheNamespacesReachIsUnknown) {
  EXPECT_TRUE(MemoryCgroupDirs("0::/../x\n", kUnifiedMounts).empty());
}

TEST(MemoryCgroupDirsTest, NoneWithoutAMemoryHierarchy) {
  EXPECT_TRUE(MemoryCgroupDirs("", "").empty());
  // a v2 mount this process is not listed in (a v1-only host's leftover)
  EXPECT_TRUE(MemoryCgroupDirs("4:cpu:/\n", kUnifiedMounts).empty());
}

TEST(LowestMemoryLimitTest, TheLowestLimitOnTheWayUpWins) {
  const std::vector<std::string> dirs = {"/cg/a/b", "/cg/a", "/cg"};
  // v2: "max" sets none; a parent's limit bounds the child.
  EXPECT_EQ(LowestMemoryLimit(dirs, Reader({{"/cg/a/b/memory.max", "max\n"}, {"/cg/a/memory.max", "4294967296\n"}})),
            4294967296u);
  EXPECT_EQ(LowestMemoryLimit(dirs, Reader({{"/cg/a/b/memory.max", "1073741824\n"}, {"/cg/a/memory.max", "4294967296\n"}})),
            1073741824u);
  // v1: the unset limit is a number near 2^63, larger than any machine.
  EXPECT_EQ(LowestMemoryLimit(dirs, Reader({{"/cg/a/b/memory.limit_in_bytes", "9223372036854771712\n"},
                                            {"/cg/memory.limit_in_bytes", "536870912\n"}})),
            536870912u);
}

TEST(LowestMemoryLimitTest, NoneWhereNothingIsSetOrReadable) {
  EXPECT_EQ(LowestMemoryLimit({"/cg"}, Reader({})), 0u);
  EXPECT_EQ(LowestMemoryLimit({"/cg"}, Reader({{"/cg/memory.max", "max\n"}})), 0u);
  EXPECT_EQ(LowestMemoryLimit({"/cg"}, Reader({{"/cg/memory.max", "garbage"}})), 0u);
  EXPECT_EQ(LowestMemoryLimit({}, Reader({})), 0u);
}

// The pids controller: its own v1 hierarchy on a hybrid host, the one v2
// hierarchy elsewhere; a container's or systemd's limit on the way up.
TEST(PidsCgroupDirsTest, TheHostsTaskLimitsOnTheWayUp) {
  EXPECT_EQ(PidsCgroupDirs(kHybridCgroup, kHybridMounts), (std::vector<std::string>{"/sys/fs/cgroup/pids"}));
  const std::vector<std::string> unified = PidsCgroupDirs(kUnifiedCgroup, kUnifiedMounts);
  EXPECT_EQ(unified, MemoryCgroupDirs(kUnifiedCgroup, kUnifiedMounts));
  EXPECT_EQ(LowestPidsLimit(unified, Reader({{"/sys/fs/cgroup/user.slice/user-1000.slice/pids.max", "4915\n"},
                                             {"/sys/fs/cgroup/user.slice/pids.max", "max\n"}})),
            4915u);
  EXPECT_EQ(LowestPidsLimit(unified, Reader({})), 0u);
}

TEST(UsableMemoryBytesTest, NeverMoreThanTheMachineHas) {
  const uint64_t physical = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  EXPECT_GT(UsableMemoryBytes(), 0u);
  EXPECT_LE(UsableMemoryBytes(), physical);
}

}  // namespace
}  // namespace codecvisor
