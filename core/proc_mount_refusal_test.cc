// File: core/proc_mount_refusal_test.cc

#include "core/proc_mount_refusal.h"

#include "gtest/gtest.h"

namespace codecvisor {
namespace {

constexpr char kPlainProc[] =
    "22 1 0:21 / / rw,relatime - ext4 /dev/vda rw\n"
    "23 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
    "24 22 0:23 / /sys rw,nosuid,nodev,noexec,relatime - sysfs sysfs rw\n"
    // systemd's, on a folder the kernel keeps empty: no masking.
    "30 23 0:27 / /proc/sys/fs/binfmt_misc rw,relatime shared:13 - autofs systemd-1 rw,fd=29\n"
    "31 30 0:28 / /proc/sys/fs/binfmt_misc rw,nosuid shared:14 - binfmt_misc binfmt_misc rw\n";

TEST(ProcMountRefusalTest, MountsOverProcAreAContainersMaskedProc) {
  const std::string docker = std::string(kPlainProc) +
                             "25 23 0:24 /null /proc/kcore rw,nosuid - tmpfs tmpfs rw\n"
                             "26 23 0:24 / /proc/acpi ro,relatime - tmpfs tmpfs ro\n"
                             "27 23 0:22 /sys /proc/sys ro,nosuid - proc proc rw\n"
                             "32 23 0:24 /null /proc/kcore rw,nosuid - tmpfs tmpfs rw\n"
                             "28 23 0:24 /null /proc/keys rw,nosuid - tmpfs tmpfs rw\n";
  const std::string hint = ProcMountRefusal(docker);
  EXPECT_NE(hint.find("parts masked (mounts over /proc/kcore, /proc/acpi, /proc/sys, ...)"), std::string::npos) << hint;
  EXPECT_NE(hint.find("systempaths=unconfined"), std::string::npos) << hint;
}

TEST(ProcMountRefusalTest, AReadOnlyProcIsNamed) {
  const std::string hint =
      ProcMountRefusal("22 1 0:21 / / rw - ext4 /dev/vda rw\n23 22 0:22 / /proc ro,nosuid,nodev - proc proc rw\n");
  EXPECT_NE(hint.find("where this /proc is read-only"), std::string::npos) << hint;
}

TEST(ProcMountRefusalTest, AnUncoveredProcMeansAPolicyRefusesMounts) {
  const std::string hint = ProcMountRefusal(kPlainProc);
  EXPECT_EQ(hint.find("container"), std::string::npos) << hint;
  EXPECT_NE(hint.find("a policy refuses mount(2)"), std::string::npos) << hint;
  EXPECT_NE(hint.find("SystemCallFilter"), std::string::npos) << hint;
  // A mount point that only begins like /proc is not inside it.
  EXPECT_EQ(ProcMountRefusal(std::string(kPlainProc) + "29 22 0:25 / /procedures rw - tmpfs tmpfs rw\n"), hint);
}

}  // namespace
}  // namespace codecvisor
