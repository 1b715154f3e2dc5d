// File: core/file_trust_test.cc

#include "core/file_trust.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace codecvisor {
namespace {

constexpr uid_t kMe = 1000;
constexpr gid_t kMyGroup = 1000;

std::string Why(uid_t uid, gid_t gid, mode_t mode, bool folder = false) {
  return WhyOthersCouldChange("x", Ownership{uid, gid, mode, folder}, kMe, kMyGroup);
}

TEST(FileTrustTest, RootsAndTheUsersOwnFilesAreTrusted) {
  EXPECT_EQ(Why(0, 0, 0644), "");
  EXPECT_EQ(Why(kMe, kMyGroup, 0600), "");
  EXPECT_EQ(Why(0, 0, 0755, true), "");
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

TEST(FileTrustTest, GroupWriteIsTrustedOnlyForTheUsersOwnGroup) {
  EXPECT_EQ(Why(kMe, kMyGroup, 0664), "");  // umask 002 with a user-private group
  EXPECT_EQ(Why(kMe, 27, 0664), "x may be written by group 27");
  EXPECT_EQ(Why(0, 50, 0775, true), "x may be written by group 50");
  EXPECT_EQ(Why(0, 50, 01775, true), "");
}

// On real files: the file's own mode, and a folder above it.
TEST(FileTrustTest, ARealPathIsCheckedUpToTheRoot) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/trust";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  const std::string file = dir + "/m.toml";
  const int fd = open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(chmod(file.c_str(), 0644), 0);
  EXPECT_TRUE(CheckOnlyOwnerCanChange(file, "manifest").ok()) << CheckOnlyOwnerCanChange(file, "manifest");

  ASSERT_EQ(chmod(file.c_str(), 0646), 0);
  absl::Status s = CheckOnlyOwnerCanChange(file, "manifest");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("may be written by every user"), std::string::npos) << s;
  ASSERT_EQ(chmod(file.c_str(), 0644), 0);

  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  s = CheckOnlyOwnerCanChange(file, "library");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("library " + file + " is not trusted: its folder " + dir), std::string::npos) << s;
  ASSERT_EQ(chmod(dir.c_str(), 01777), 0);
  EXPECT_TRUE(CheckOnlyOwnerCanChange(file, "manifest").ok());

  EXPECT_EQ(CheckOnlyOwnerCanChange(dir + "/missing.toml", "manifest").code(), absl::StatusCode::kNotFound);
}

TEST(FileTrustTest, OnlyCharacterDevicesThatAreNotTerminalsAreGranted) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/devices";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  const std::string file = dir + "/drop";
  const int fd = open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  close(fd);
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
