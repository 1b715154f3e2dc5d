#include "core/device_policy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <string>
#include <tuple>
#include <vector>

namespace codecvisor {
namespace {

std::string Why(unsigned major, unsigned minor, const std::string& driver = "",
                VideoNodeKind video = VideoNodeKind::kNotVideo4Linux) {
  return WhyDeviceIsRefused(major, minor, driver, video);
}

TEST(DevicePolicyTest, WhatDecodersUseIsGranted) {
  // /dev/null, zero, urandom; a DRM card and render node; NVIDIA's nodes;
  // an accel node; /dev/kfd and nvidia-uvm (dynamic majors); raw USB.
  for (auto [major, minor, driver] : std::vector<std::tuple<unsigned, unsigned, std::string>>{
           {1, 3, "mem"}, {1, 5, "mem"}, {1, 9, "mem"}, {226, 0, "drm"}, {226, 128, "drm"}, {195, 0, "nvidia-frontend"},
           {195, 255, "nvidia-frontend"}, {261, 0, "accel"}, {235, 0, "kfd"}, {508, 0, "nvidia-uvm"}, {189, 0, "usb_device"}}) {
    EXPECT_EQ(Why(major, minor, driver), "") << major << ":" << minor << " " << driver;
  }
  EXPECT_EQ(Why(81, 10, "video4linux", VideoNodeKind::kMemToMem), "") << "a v4l2 mem-to-mem decoder";
}

// The red team's reads: the consoles' screens; and what a hostile plugin
// would reach for next on a desktop, where the logged-in user may open
// cameras, sound and raw HID nodes.
TEST(DevicePolicyTest, TheUsersInputScreensSoundCamerasAndKernelMemoryAreRefused) {
  EXPECT_EQ(Why(4, 1), "a terminal");
  EXPECT_EQ(Why(5, 0), "a terminal");
  EXPECT_EQ(Why(136, 0), "a terminal");
  EXPECT_EQ(Why(7, 1, "vcs"), "a console's screen (vcs)");
  EXPECT_EQ(Why(7, 129, "vcs"), "a console's screen (vcs)");
  EXPECT_EQ(Why(13, 64, "input"), "an input device (keystrokes, pointers)");
  EXPECT_EQ(Why(116, 0, "alsa"), "a sound device (microphones)");
  EXPECT_EQ(Why(14, 3, "sound"), "a sound device (microphones)");
  for (unsigned minor : {1u, 2u, 4u, 11u}) {
    EXPECT_EQ(Why(1, minor, "mem"), "the kernel's or the machine's memory, I/O ports or log") << minor;
  }
  EXPECT_EQ(Why(10, 223, "misc"), "a device that makes input (uinput, uhid)");
  EXPECT_EQ(Why(10, 239, "misc"), "a device that makes input (uinput, uhid)");
  EXPECT_EQ(Why(10, 1, "misc"), "an input device (the PS/2 mouse)");
  EXPECT_EQ(Why(240, 0, "hidraw"), "a raw HID device (keyboards, security keys)");
  EXPECT_EQ(Why(81, 0, "video4linux", VideoNodeKind::kOther),
            "a video4linux node that is not a codec (a camera or capture device)");
  EXPECT_EQ(Why(81, 0, "video4linux", VideoNodeKind::kUnknown),
            "a video4linux node that could not be asked whether it is a codec");
}

TEST(DevicePolicyTest, ProcDevicesNamesTheDrivers) {
  struct stat null {};
  ASSERT_EQ(stat("/dev/null", &null), 0);
  EXPECT_EQ(CharacterDriverName(major(null.st_rdev)), "mem");
  EXPECT_EQ(CharacterDriverName(100000), "");
  EXPECT_EQ(QueryVideoNode("/dev/null"), VideoNodeKind::kUnknown) << "not a video4linux node";
}

}  // namespace
}  // namespace codecvisor
