// File: core/file_trust_test.cc

#include "core/file_trust.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/lowered_file_limit_for_test.h"
#include "gtest/gtest.h"

namespace codecvisor {
namespace {

constexpr uid_t kMe = 1000;
constexpr gid_t kMyGroup = 1000;

// An empty file of mode 0644 (whatever the umask) at `path`.
bool MakeFile(const std::string& path) {
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  close(fd);
  return chmod(path.c_str(), 0644) == 0;
}

std::string Why(uid_t uid, gid_t gid, mode_t mode, bool folder = false, bool private_group = true) {
  return WhyOthersCouldChange("x", Ownership{uid, gid, mode, folder}, Self{kMe, kMyGroup, private_group});
}

TEST(FileTrustTest, RootsAndTheUsersOwnFilesAreTrusted) {
  EXPECT_EQ(Why(0, 0, 0644), "");
  EXPECT_EQ(Why(kMe, kMyGroup, 0600), "");
  EXPECT_EQ(Why(0, 0, 0755, true), "");
}

TEST(FileTrustTest, ALinkIsJudgedByItsOwnerOnly) {
  const Self me{kMe, kMyGroup, true};
  EXPECT_EQ(WhyOthersCouldChange("x", Ownership{0, 0, 0777, false, true}, me), "");
  EXPECT_EQ(WhyOthersCouldChange("x", Ownership{1002, 1002, 0777, false, true}, me),
            "x belongs to uid 1002, another user");
}

// In a user namespace that maps only some users (`unshare -Ur`), whatever
// an unmapped user owns, root's files outside included, shows as the
// overflow uid: refused as before, but said so, where "another user" sent
// the user to reinstall, which cannot help.
TEST(FileTrustTest, AnUnmappedOwnerIsNamedAsSuch) {
  const Self in_namespace{kMe, kMyGroup, true, 65534};
  const std::string why = WhyOthersCouldChange("/", Ownership{65534, 65534, 0755, true}, in_namespace);
  EXPECT_NE(why.find("/ belongs to uid 65534, which in this user namespace stands for every user outside it"),
            std::string::npos)
      << why;
  EXPECT_EQ(WhyOthersCouldChange("/", Ownership{65534, 65534, 0755, true}, Self{kMe, kMyGroup, true}),
            "/ belongs to uid 65534, another user");
  // The namespace's own users' files are judged as ever.
  EXPECT_EQ(WhyOthersCouldChange("x", Ownership{0, 0, 0755, true}, in_namespace), "");
}

TEST(FileTrustTest, AnotherUsersFileIsNot) {
  EXPECT_EQ(Why(1002, 1002, 0644), "x belongs to uid 1002, another user");
  EXPECT_EQ(Why(1002, 1002, 01777, true), "x belongs to uid 1002, another user");
}

TEST(FileTrustTest, WhatEveryUserMayWriteIsNotUnlessAFolderIsSticky) {
  EXPECT_EQ(Why(kMe, kMyGroup, 0666), "x may be written by every user");
  EXPECT_EQ(Why(0, 0, 0777, true), "x may be written by every user");
  EXPECT_EQ(Why(0, 0, 01777, true), "");      // /tmp
  EXPECT_EQ(Why(kMe, kMyGroup, 01666), "x may be written by every user");  // a file's sticky bit means nothing
}

TEST(FileTrustTest, GroupWriteIsTrustedOnlyForTheUsersPrivateGroup) {
  EXPECT_EQ(Why(kMe, kMyGroup, 0664), "");  // umask 002 with a user-private group
  // A primary group shared with other users ('users'): they could write it.
  EXPECT_EQ(Why(kMe, kMyGroup, 0664, false, false), "x may be written by group 1000");
  EXPECT_EQ(Why(kMe, 27, 0664), "x may be written by group 27");
  EXPECT_EQ(Why(0, 50, 0775, true), "x may be written by group 50");
  EXPECT_EQ(Why(0, 50, 01775, true), "");
}

// On real files: the file's own mode, and a folder above it.
TEST(FileTrustTest, ARealPathIsCheckedUpToTheRoot) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/trust";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  const std::string file = dir + "/m.toml";
  ASSERT_TRUE(MakeFile(file));
  EXPECT_TRUE(CheckOnlyOwnerCanChange(file, "manifest").ok()) << CheckOnlyOwnerCanChange(file, "manifest");

  ASSERT_EQ(chmod(file.c_str(), 0646), 0);
  absl::Status s = CheckOnlyOwnerCanChange(file, "manifest");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("may be written by every user"), std::string::npos) << s;
  ASSERT_EQ(chmod(file.c_str(), 0644), 0);

  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  s = CheckOnlyOwnerCanChange(file, "library");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("library " + file + " is not trusted: " + dir + " may be written by every user"), std::string::npos) << s;
  ASSERT_EQ(chmod(dir.c_str(), 01777), 0);
  EXPECT_TRUE(CheckOnlyOwnerCanChange(file, "manifest").ok());

  EXPECT_EQ(CheckOnlyOwnerCanChange(dir + "/missing.toml", "manifest").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(CheckOnlyOwnerCanChange("relative.toml", "manifest").code(), absl::StatusCode::kInvalidArgument);
  ASSERT_EQ(chmod(file.c_str(), 0646), 0);
  s = CheckOnlyOwnerCanChange(file, "manifest");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_FALSE(IsUnmappedOwnerRefusal(s));
}

// A link is walked as the kernel follows it: the folders it passes
// through count, not only the folder of the file it leads to. Before, a
// link in an untrusted folder to a trusted file passed, and so did a path
// realpath() could not resolve (too long): the check was skipped.
TEST(FileTrustTest, LinksAreWalkedAndWhatCannotBeCheckedIsRefused) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/links";
  const std::string open_dir = dir + "/open";  // writable by every user
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(open_dir.c_str(), 0755), 0);
  const std::string file = dir + "/lib.so";
  ASSERT_TRUE(MakeFile(file));
  // A trusted link to a trusted file, relative and absolute, and through "..".
  ASSERT_EQ(symlink("lib.so", (dir + "/rel.so").c_str()), 0);
  ASSERT_EQ(symlink(file.c_str(), (dir + "/abs.so").c_str()), 0);
  ASSERT_EQ(symlink("../lib.so", (open_dir + "/up.so").c_str()), 0);
  EXPECT_TRUE(CheckOnlyOwnerCanChange(dir + "/rel.so", "library").ok()) << CheckOnlyOwnerCanChange(dir + "/rel.so", "library");
  EXPECT_TRUE(CheckOnlyOwnerCanChange(dir + "/abs.so", "library").ok());
  EXPECT_TRUE(CheckOnlyOwnerCanChange(open_dir + "/up.so", "library").ok());
  EXPECT_TRUE(CheckOnlyOwnerCanChange(open_dir + "/../lib.so", "library").ok());
  // The folder holding the link opened to every user: another user could
  // point it elsewhere, though it leads to a trusted file.
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  absl::Status s = CheckOnlyOwnerCanChange(open_dir + "/up.so", "library");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find(open_dir + " may be written by every user"), std::string::npos) << s;
  // A path longer than PATH_MAX once its links are followed: refused.
  std::string deep = dir + "/deep";
  ASSERT_EQ(mkdir(deep.c_str(), 0755), 0);
  const std::string long_name(250, 'd');
  std::string walk = deep;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(mkdirat(AT_FDCWD, (walk + "/" + long_name).c_str(), 0755), 0) << i;
    ASSERT_EQ(symlink((walk + "/" + long_name).c_str(), (dir + "/hop" + std::to_string(i)).c_str()), 0);
    walk = dir + "/hop" + std::to_string(i);
  }
  s = CheckOnlyOwnerCanChange(dir + "/hop19/x.toml", "manifest");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("cannot be checked"), std::string::npos) << s;
}

// A root host's backend runs as nobody without groups: a node only its
// owner or group may use (/dev/kvm 0600 root, a render node 0660
// root:render) is named at load, where the plugin only met EACCES in
// create(). The permission bits decide, so plain files stand in for nodes.
TEST(FileTrustTest, DevicesTheSandboxedBackendCannotOpenAreNamed) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/device_access";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  const std::string owner_only = dir + "/kvm", group_only = dir + "/render", everyone = dir + "/shared";
  for (const std::string& f : {owner_only, group_only, everyone}) ASSERT_TRUE(MakeFile(f));
  ASSERT_EQ(chmod(owner_only.c_str(), 0600), 0);
  ASSERT_EQ(chmod(group_only.c_str(), 0660), 0);
  ASSERT_EQ(chmod(everyone.c_str(), 0666), 0);
  const uid_t me = geteuid();
  const gid_t my_group = getegid();
  std::vector<std::string> w =
      DeviceAccessWarnings({"/dev/null", owner_only, group_only, everyone, dir + "/missing"}, true, me + 1, my_group + 1);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NE(w[0].find(owner_only + " (owner " + std::to_string(me)), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("mode 0600) cannot be opened read-write by the backend, which runs as nobody without "
                      "supplementary groups (the host is root)"),
            std::string::npos)
      << w[0];
  EXPECT_NE(w[1].find(group_only), std::string::npos) << w[1];
  // A node this machine lacks (a GPU's on a machine without one, a typo):
  // said at load, where create() only met "No such file or directory".
  EXPECT_EQ(w[2], "[sandbox] devices: " + dir +
                      "/missing does not exist on this machine: the backend will not see it (a device or driver "
                      "this machine lacks, or a misspelled path)");
  // The sandbox's own ids: the owner's or the group's bits count.
  EXPECT_TRUE(DeviceAccessWarnings({owner_only}, true, me, my_group + 1).empty());
  EXPECT_TRUE(DeviceAccessWarnings({group_only}, true, me + 1, my_group).empty());
}

// A device that cannot be checked for want of descriptors (the host at
// its `ulimit -n`: /proc/devices unreadable) is this process's shortage,
// neither granted unchecked nor refused as the wrong kind of device.
TEST(FileTrustTest, ADeviceThatCannotBeCheckedForWantOfDescriptorsIsAShortage) {
  absl::Status s;
  {
    codecvisor::testing::LoweredFileLimit none(0);
    ASSERT_TRUE(none.ok());
    s = CheckDeviceNodes({"/dev/null"});
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("/dev/null could not be checked: Too many open files"), std::string::npos) << s;
  EXPECT_TRUE(CheckDeviceNodes({"/dev/null"}).ok());
}

TEST(FileTrustTest, OnlyCharacterDevicesThatAreNotTerminalsAreGranted) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/devices";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  const std::string file = dir + "/drop";
  ASSERT_TRUE(MakeFile(file));
  EXPECT_TRUE(CheckDeviceNodes({"/dev/null", "/dev/zero", dir + "/missing"}).ok());
  absl::Status s = CheckDeviceNodes({"/dev/null", file});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find(file + " is not a device node"), std::string::npos) << s;
  s = CheckDeviceNodes({dir});
  EXPECT_NE(s.message().find(dir + " is a folder"), std::string::npos) << s;
  struct stat tty {};
  if (stat("/dev/tty", &tty) == 0 && S_ISCHR(tty.st_mode)) {
    s = CheckDeviceNodes({"/dev/tty"});
    EXPECT_NE(s.message().find("/dev/tty is a terminal"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace codecvisor
