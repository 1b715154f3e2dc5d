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
                VideoNodeKind video = VideoNodeKind::kNotVideo4Linux, bool tty = false) {
  return WhyDeviceIsRefused(DeviceFacts{major, minor, driver, tty, video});
}

TEST(DevicePolicyTest, WhatDecodersUseIsGranted) {
  // /dev/null, zero, urandom; a DRM card and render node; NVIDIA's nodes;
  // an accel node; /dev/kfd and nvidia-uvm (dynamic majors); raw USB.
  for (auto [major, minor, driver] :
       std::vector<std::tuple<unsigned, unsigned, std::string>>{{1, 3, "mem"},
                                                                {1, 5, "mem"},
                                                                {1, 9, "mem"},
                                                                {226, 0, "drm"},
                                                                {226, 128, "drm"},
                                                                {195, 0, "nvidia-frontend"},
                                                                {195, 255, "nvidia-frontend"},
                                                                {261, 0, "accel"},
                                                                {235, 0, "kfd"},
                                                                {508, 0, "nvidia-uvm"},
                                                                {237, 0, "media"},
                                                                {250, 0, "dma_heap"}}) {
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
  EXPECT_EQ(Why(81, 0, "video4linux", VideoNodeKind::kOther)
                .find("a video4linux node that is not a codec (a camera or capture device) (name the codec's node by a "
                      "stable path"),
            0u);
  EXPECT_EQ(Why(81, 0, "video4linux", VideoNodeKind::kUnknown)
                .find("a video4linux node that could not be asked whether it is a codec"),
            0u);
}

// The review's list: serial and USB terminals (any tty driver's major),
// raw USB and USB sniffing, raw SCSI and NVMe passthrough.
TEST(DevicePolicyTest, AnyTerminalRawUsbAndRawDisksAreRefused) {
  EXPECT_EQ(Why(188, 0, "ttyUSB", VideoNodeKind::kNotVideo4Linux, /*tty=*/true), "a terminal");
  EXPECT_EQ(Why(166, 0, "ttyACM", VideoNodeKind::kNotVideo4Linux, /*tty=*/true), "a terminal");
  EXPECT_EQ(Why(189, 0, "usb_device"), "raw USB access (any device on the bus: cameras, phones, security keys)");
  EXPECT_EQ(Why(245, 0, "usbmon"), "raw USB access (any device on the bus: cameras, phones, security keys)");
  for (const char* disk : {"sg", "bsg", "nvme-generic"}) {
    EXPECT_EQ(Why(21, 0, disk), "raw access to a disk (SCSI, NVMe)") << disk;
  }
}

TEST(DevicePolicyTest, ProcDevicesNamesTheDrivers) {
  struct stat null {};
  ASSERT_EQ(stat("/dev/null", &null), 0);
  EXPECT_EQ(CharacterDriverName(major(null.st_rdev)), "mem");
  EXPECT_EQ(CharacterDriverName(100000), "");
  EXPECT_EQ(QueryVideoNode("/dev/null"), VideoNodeKind::kUnknown) << "not a video4linux node";
  EXPECT_FALSE(IsTtyMajor(major(null.st_rdev)));
  struct stat tty {};
  if (stat("/dev/tty", &tty) == 0) {
    EXPECT_TRUE(IsTtyMajor(major(tty.st_rdev)));
    EXPECT_EQ(WhyDeviceIsRefused(ReadDeviceFacts("/dev/tty", tty.st_rdev)), "a terminal");
  }
  EXPECT_EQ(WhyDeviceIsRefused(ReadDeviceFacts("/dev/null", null.st_rdev)), "");
}

}  // namespace
}  // namespace codecvisor
