// A Host destroyed while a decoder still holds its backend (a Python
// process exiting with a decoder alive, or with a thread mid-request):
// the backend is stopped and its cgroups are gone once the Host is, not
// when the last decoder goes, which at a process's exit never happens.

#include <unistd.h>

#include <string>
#include <vector>

#include "base/cgroup_paths.h"
#include "base/small_file.h"
#include "tests/api_host_test_fixture.h"

namespace codecvisor {
namespace {

std::string ReadText(const std::string& path) { return ReadSmallFile(path).value_or(""); }

// The directories of process `pid`'s own cgroups (memory, pids, or the v2
// one), as this process sees the cgroup file systems.
std::vector<std::string> CgroupDirsOf(pid_t pid) {
  const ProcessCgroups cgroups = ParseProcessCgroups(ReadText("/proc/" + std::to_string(pid) + "/cgroup"));
  const std::vector<CgroupMount> mounts = CgroupMounts(ReadText("/proc/self/mountinfo"));
  std::vector<std::string> dirs;
  auto add = [&](const char* type, const char* controller, const std::string& path) {
    if (path.empty()) return;
    if (const CgroupMount* m = MountShowing(mounts, type, controller, path)) dirs.push_back(CgroupDirUnder(*m, path));
  };
  add("cgroup", "memory", cgroups.memory_path);
  add("cgroup", "pids", cgroups.pids_path);
  if (cgroups.memory_path.empty()) add("cgroup2", "", cgroups.v2_path);
  return dirs;
}

TEST_F(ApiHostTest, AHostDestroyedUnderAnOpenDecoderRemovesItsBackendsCgroups) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->GetFrameAt(1).ok());
  pid_t pid = -1;
  for (const BackendInfo& b : host_->Backends()) {
    if (b.name == "synthetic") pid = b.pid;
  }
  ASSERT_GT(pid, 0);
  const std::vector<std::string> dirs = CgroupDirsOf(pid);
  ASSERT_FALSE(dirs.empty());
  for (const std::string& dir : dirs) {
    // The backend's own cgroup, which the host made (tools/cgroup_flags.sh
    // gives the test one to make it in).
    ASSERT_NE(dir.find("codecvisor-"), std::string::npos) << dir;
    ASSERT_EQ(access(dir.c_str(), F_OK), 0) << dir;
  }
  host_.reset();
  for (const std::string& dir : dirs) EXPECT_NE(access(dir.c_str(), F_OK), 0) << dir << " is still there";
  EXPECT_EQ(d->GetFrameAt(2).status().code(), StatusCode::kUnavailable);
  d.reset();
}

}  // namespace
}  // namespace codecvisor
