#include "core/read_path_policy.h"

#include <gtest/gtest.h>

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
  // A plugin unpacked into a folder of its own in /tmp.
  EXPECT_EQ(Why("/tmp/acme-1.0", "/tmp/acme-1.0"), "");
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

TEST(ReadPathPolicyTest, CheckReadPathsResolvesLinksAndNamesThePath) {
  EXPECT_TRUE(CheckReadPaths({}, "/opt/acme/acme.toml").ok());
  EXPECT_TRUE(CheckReadPaths({"/usr/share", "/no/such/path"}, "/opt/acme/acme.toml").ok());
  const absl::Status terminal = CheckReadPaths({"/usr", "/dev/null"}, "/opt/acme/acme.toml");
  EXPECT_EQ(terminal.code(), absl::StatusCode::kFailedPrecondition) << terminal;
  EXPECT_NE(terminal.message().find("[sandbox] read_paths: /dev/null is under /dev"), std::string::npos) << terminal;
  // /dev/stdin leads to a descriptor's file: named with where it leads.
  const absl::Status proc = CheckReadPaths({"/proc/self"}, "/opt/acme/acme.toml");
  EXPECT_EQ(proc.code(), absl::StatusCode::kFailedPrecondition) << proc;
  EXPECT_NE(proc.message().find("/proc/self ("), std::string::npos) << proc;
}

}  // namespace
}  // namespace codecvisor
