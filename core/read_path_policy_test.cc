#include "core/read_path_policy.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/lowered_file_limit_for_test.h"

namespace codecvisor {
namespace {

constexpr char kHome[] = "/home/ann";

std::string Why(const std::string& path, const std::string& manifest_folder = "/opt/acme") {
  return WhyReadPathIsRefused(path, manifest_folder, kHome);
}

TEST(ReadPathPolicyTest, SystemFoldersAndThePluginsOwnAreReadable) {
  for (const char* ok : {"/opt/acme", "/opt/acme/models", "/usr/share/acme", "/etc/acme", "/opt/other/lib",
                         "/proc/driver/nvidia", "/proc/cpuinfo", "/sys/class/drm", "/var/lib/acme"}) {
    EXPECT_EQ(Why(ok), "") << ok;
  }
  // Installed with pip into a virtualenv or ~/.local: its own folder, and
  // another wheel's libraries.
  const std::string plugin = "/home/ann/venv/lib/python3.11/site-packages/acme_codecvisor";
  EXPECT_EQ(Why(plugin, plugin), "");
  EXPECT_EQ(Why(plugin + "/models", plugin), "");
  EXPECT_EQ(Why("/home/ann/venv/lib/python3.11/site-packages/nvidia/cudnn/lib", plugin), "");
  EXPECT_EQ(
      Why("/home/ann/.local/lib/python3.11/site-packages/acme", "/home/ann/.local/lib/python3.11/site-packages/acme"),
      "");
  // A plugin unpacked into a folder of its own in /tmp, or anywhere.
  EXPECT_EQ(Why("/tmp/acme-1.0", "/tmp/acme-1.0"), "");
  EXPECT_EQ(Why("/srv/plugins/acme/models", "/srv/plugins/acme"), "");
  EXPECT_EQ(Why("/nix/store/abc-cuda/lib"), "");
}

// The red team's reads of a user's files outside every guarded folder:
// folders other than the system's may hold the users' data.
TEST(ReadPathPolicyTest, FoldersOutsideTheSystemsAreRefused) {
  for (const char* data : {"/srv", "/srv/qa-data", "/data/qa", "/workspace", "/work/main", "/var/www", "/var/backups",
                           "/var/log", "/boot", "/snap/x"}) {
    EXPECT_NE(Why(data).find("nor in a system folder (/usr, /lib, "), std::string::npos) << data << ": " << Why(data);
  }
  EXPECT_NE(Why("/srv/other", "/srv/plugins/acme").find("neither in the plugin's own folder (/srv/plugins/acme)"),
            std::string::npos);
  EXPECT_EQ(Why("/data/venv/lib/python3.11/site-packages/nvidia/lib", "/srv/plugins/acme"), "");
}

TEST(ReadPathPolicyTest, TheUsersFilesTerminalsAndSharedFoldersAreRefused) {
  // The red team's reads: a terminal (typed passwords), ~/.ssh, /dev/shm.
  EXPECT_NE(Why("/dev/pts/0").find("under /dev"), std::string::npos);
  EXPECT_NE(Why("/dev/pts").find("under /dev"), std::string::npos);
  EXPECT_NE(Why("/dev/shm").find("under /dev"), std::string::npos);
  EXPECT_NE(Why("/dev").find("under /dev"), std::string::npos);
  EXPECT_NE(Why("/home/ann/.ssh").find("inside /home/ann (the user's home folder)"), std::string::npos)
      << Why("/home/ann/.ssh");
  EXPECT_NE(Why("/home/bob/.ssh").find("inside /home (the users' home folders)"), std::string::npos);
  EXPECT_NE(Why("/root/.ssh").find("inside /root"), std::string::npos);
  EXPECT_EQ(Why("/"), "the whole filesystem");
  EXPECT_NE(Why("/home").find("/home (the users' home folders)"), std::string::npos);
  EXPECT_NE(Why("/var").find("a folder that holds /var/tmp"), std::string::npos) << Why("/var");
  for (const char* shared : {"/tmp", "/tmp/x", "/var/tmp/y", "/run", "/run/user/1000/bus", "/run/secrets"}) {
    EXPECT_NE(Why(shared).find("a folder every program shares"), std::string::npos) << shared << ": " << Why(shared);
  }
  for (const char* proc : {"/proc", "/proc/1", "/proc/1/environ", "/proc/self/mem", "/proc/thread-self"}) {
    EXPECT_EQ(Why(proc), "the host's processes (/proc)") << proc;
  }
  // Beside the plugin's folder in a home, not in it.
  const std::string plugin = "/home/ann/venv/lib/python3.11/site-packages/acme_codecvisor";
  EXPECT_NE(Why("/home/ann/venv", plugin).find("neither in the plugin's own folder"), std::string::npos);
}

// A plugin pip-installed into a conda environment in a home links against
// the environment's CUDA libraries in PREFIX/lib: its own environment's
// library folder is readable, no other's, and nothing else of the prefix.
TEST(ReadPathPolicyTest, ThePluginsOwnPythonEnvironmentsLibrariesAreReadable) {
  const std::string env = "/home/ann/miniconda3/envs/train";
  const std::string plugin = env + "/lib/python3.11/site-packages/acme_codecvisor";
  EXPECT_EQ(Why(env + "/lib", plugin), "");
  EXPECT_EQ(Why(env + "/lib/libcudart.so.12", plugin), "");
  EXPECT_NE(Why(env + "/etc", plugin), "");
  EXPECT_NE(Why(env, plugin), "");
  EXPECT_NE(Why("/home/ann/miniconda3/envs/other/lib", plugin), "");
  EXPECT_EQ(Why("/home/ann/.local/lib", "/home/ann/.local/lib/python3.11/site-packages/acme"), "");
  EXPECT_NE(Why("/home/ann/.local/share/keyrings", "/home/ann/.local/lib/python3.11/site-packages/acme"), "");
  // Not for a manifest outside an environment's packages, nor in /tmp.
  EXPECT_NE(Why(env + "/lib", "/opt/acme"), "");
  EXPECT_NE(Why("/tmp/env/lib", "/tmp/env/lib/python3.11/site-packages/acme").find("every program shares"),
            std::string::npos);
  EXPECT_EQ(Why("/data/envs/x/lib", "/data/envs/x/lib/python3.11/site-packages/acme"), "");
}

TEST(ReadPathPolicyTest, AManifestDroppedIntoAGuardedFolderGrantsNoMoreThanAnyOther) {
  // "." of a manifest straight in HOME or /tmp is all of it.
  EXPECT_NE(Why("/home/ann", "/home/ann").find("/home/ann (the user's home folder)"), std::string::npos);
  EXPECT_NE(Why("/home/ann/docs", "/home/ann").find("inside /home/ann"), std::string::npos);
  EXPECT_NE(Why("/tmp", "/tmp").find("every program shares"), std::string::npos);
  EXPECT_NE(Why("/tmp/a", "/tmp").find("every program shares"), std::string::npos);
  EXPECT_NE(Why("/home/bob", "/home").find("users' home folders"), std::string::npos);
  // A plugin folder in a home: only its own tree.
  EXPECT_EQ(Why("/home/ann/acme/lib", "/home/ann/acme"), "");
  EXPECT_NE(Why("/home/ann/acme2", "/home/ann/acme").find("inside /home/ann"), std::string::npos);
}

TEST(ReadPathPolicyTest, MoreFoldersOfTheUsersAndWhereTheyReallyAre) {
  for (const char* users :
       {"/media/ann/usb", "/mnt/c/Users/ann", "/var/mail/ann", "/var/crash/x.1000.crash", "/var/spool/cron",
        "/var/lib/systemd/coredump/core.python3.1000.zst", "/var/lib/apport/coredump/core.x"}) {
    EXPECT_NE(Why(users), "") << users;
  }
  // Fedora Silverblue's /home is /var/home: given as where /home really is.
  const std::vector<GuardedFolder> aliases = {{"/var/home", "the users' home folders", false}};
  EXPECT_NE(WhyReadPathIsRefused("/var/home/bob/.ssh", "/opt/acme", aliases), "");
  EXPECT_EQ(WhyReadPathIsRefused("/var/lib/acme", "/opt/acme", aliases), "");
  EXPECT_NE(Why("/var/lib").find("a folder that holds /var/lib/systemd/coredump"), std::string::npos)
      << Why("/var/lib");
  // A Python package in /tmp is no exception: another user may own its
  // folders there.
  EXPECT_NE(Why("/tmp/m/site-packages/x").find("inside /tmp"), std::string::npos) << Why("/tmp/m/site-packages/x");
}

// The kernel follows /proc/PID/root into another mount namespace, where
// realpath looks the rest up in this one: a link in the plugin's folder to
// a process's root reached a tmpfs this namespace cannot see (a review's
// finding) while the check judged an empty folder of the same name.
TEST(ReadPathPolicyTest, ALinkThroughAnotherProcesssRootIsRefused) {
  const std::string base = getenv("TEST_TMPDIR");
  const std::string hidden = base + "/hidden", plugin = base + "/proc_plugin";
  ASSERT_EQ(mkdir(hidden.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(plugin.c_str(), 0755), 0);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char ok = 0;
    if (unshare(CLONE_NEWNS) == 0 && mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
        mount("tmpfs", hidden.c_str(), "tmpfs", 0, "size=64k") == 0) {
      ok = 1;
    }
    (void)!write(ready[1], &ok, 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  close(ready[0]);
  if (ok == 1) {
    const std::string link = plugin + "/link";
    ASSERT_EQ(symlink(("/proc/" + std::to_string(child) + "/root" + hidden).c_str(), link.c_str()), 0);
    const absl::Status s = CheckReadPaths({link}, plugin + "/acme.toml");
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(s.message().find("reached through a link that leads outside the paths it names"), std::string::npos) << s;
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  if (ok != 1) GTEST_SKIP() << "no mount namespace to make here";
}

// A read path that cannot be opened for want of descriptors is this
// process's shortage (the next start checks it again), not a path the
// manifest may not name, which would fail the backend for the process.
TEST(ReadPathPolicyTest, APathThatCannotBeCheckedForWantOfDescriptorsIsAShortage) {
  absl::Status s;
  {
    codecvisor::testing::LoweredFileLimit none(0);
    ASSERT_TRUE(none.ok());
    s = CheckReadPaths({"/usr/share"}, "/opt/acme/acme.toml");
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("/usr/share could not be checked: Too many open files"), std::string::npos) << s;
  EXPECT_TRUE(CheckReadPaths({"/usr/share"}, "/opt/acme/acme.toml").ok());
}

TEST(ReadPathPolicyTest, CheckReadPathsResolvesLinksAndNamesThePath) {
  EXPECT_TRUE(CheckReadPaths({}, "/opt/acme/acme.toml").ok());
  EXPECT_TRUE(CheckReadPaths({"/usr/share", "/no/such/path"}, "/opt/acme/acme.toml").ok());
  const absl::Status terminal = CheckReadPaths({"/usr", "/dev/null"}, "/opt/acme/acme.toml");
  EXPECT_EQ(terminal.code(), absl::StatusCode::kFailedPrecondition) << terminal;
  EXPECT_NE(terminal.message().find("[sandbox] read_paths: /dev/null is under /dev"), std::string::npos) << terminal;
  // As written, existing or not.
  for (const char* written : {"/proc/self", "/proc/1/root", "/dev/pts/999", "/dev/../dev/shm"}) {
    const absl::Status proc = CheckReadPaths({written}, "/opt/acme/acme.toml");
    EXPECT_EQ(proc.code(), absl::StatusCode::kFailedPrecondition) << written << ": " << proc;
  }
  // A link is named with where it leads.
  const std::string plugin = std::string(getenv("TEST_TMPDIR")) + "/linking_plugin";
  ASSERT_EQ(mkdir(plugin.c_str(), 0755), 0);
  ASSERT_EQ(symlink("/tmp", (plugin + "/tmp").c_str()), 0);
  const absl::Status linked = CheckReadPaths({plugin + "/tmp"}, plugin + "/acme.toml");
  EXPECT_NE(linked.message().find(plugin + "/tmp (/tmp) is /tmp (a folder every program shares)"), std::string::npos)
      << linked;
}

}  // namespace
}  // namespace codecvisor
