// File: core/device_policy.cc

#include "core/device_policy.h"

#include <fcntl.h>
#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/small_file.h"

namespace codecvisor {

namespace {

constexpr unsigned kMemMajor = 1, kMiscMajor = 10, kVideoMajor = 81;

}  // namespace

std::string WhyDeviceIsRefused(const DeviceFacts& device) {
  const unsigned major = device.major, minor = device.minor;
  const std::string& driver = device.driver;
  if (device.tty || major == 4 || major == 5 || (major >= 136 && major <= 143)) return "a terminal";
  if (major == 7) return "a console's screen (vcs)";
  if (major == 13) return "an input device (keystrokes, pointers)";
  if (major == 14 || major == 116) return "a sound device (microphones)";
  if (major == kMemMajor && (minor == 1 || minor == 2 || minor == 4 || minor == 11)) {
    return "the kernel's or the machine's memory, I/O ports or log";
  }
  if (major == kMiscMajor && (minor == 223 || minor == 239)) return "a device that makes input (uinput, uhid)";
  if (major == kMiscMajor && minor == 1) return "an input device (the PS/2 mouse)";
  if (driver == "hidraw") return "a raw HID device (keyboards, security keys)";
  if (driver == "usb_device" || driver == "usbmon") {
    return "raw USB access (any device on the bus: cameras, phones, security keys)";
  }
  if (driver == "sg" || driver == "bsg" || driver == "nvme-generic") return "raw access to a disk (SCSI, NVMe)";
  if (major == kVideoMajor && device.video != VideoNodeKind::kMemToMem) {
    const char* advice = " (name the codec's node by a stable path, such as its udev link under /dev/v4l/by-path)";
    return absl::StrCat(device.video == VideoNodeKind::kUnknown
                            ? "a video4linux node that could not be asked whether it is a codec"
                            : "a video4linux node that is not a codec (a camera or capture device)",
                        advice);
  }
  return "";
}

namespace {

bool TtyMajorIn(const std::string& drivers, unsigned major) {
  // "name  /dev/node  major  minor-range  type", one driver a line.
  std::istringstream in(drivers);
  std::string name, node, type, minors;
  unsigned driver_major = 0;
  while (in >> name >> node >> driver_major >> minors >> type) {
    if (driver_major == major) return true;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return false;
}

std::string DriverNameIn(const std::string& devices, unsigned major) {
  std::istringstream in(devices);
  std::string line;
  bool character = false;
  while (std::getline(in, line)) {
    if (line == "Character devices:") {
      character = true;
      continue;
    }
    if (line.empty() || line.back() == ':') {
      character = false;
      continue;
    }
    if (!character) continue;
    const size_t start = line.find_first_not_of(' ');
    const size_t space = line.find(' ', start);
    if (start == std::string::npos || space == std::string::npos) continue;
    if (line.compare(start, space - start, std::to_string(major)) == 0) return line.substr(space + 1);
  }
  return "";
}

}  // namespace

DeviceFacts ReadDeviceFacts(const std::string& path, dev_t rdev) {
  DeviceFacts f;
  f.major = major(rdev);
  f.minor = minor(rdev);
  // What cannot be read for want of descriptors is not known to be
  // harmless: said, so that the caller refuses rather than allows.
  const std::optional<std::string> devices = ReadSmallFile("/proc/devices");
  f.short_of_descriptors |= !devices.has_value() && OutOfDescriptors(errno);
  f.driver = devices.has_value() ? DriverNameIn(*devices, f.major) : "";
  const std::optional<std::string> drivers = ReadSmallFile("/proc/tty/drivers");
  f.short_of_descriptors |= !drivers.has_value() && OutOfDescriptors(errno);
  f.tty = drivers.has_value() && TtyMajorIn(*drivers, f.major);
  if (f.major == kVideoMajor) {
    static std::mutex mu;
    static std::map<dev_t, VideoNodeKind> asked;
    std::lock_guard<std::mutex> lock(mu);
    auto it = asked.find(rdev);
    if (it != asked.end()) {
      f.video = it->second;
    } else {
      errno = 0;
      f.video = QueryVideoNode(path);
      if (f.video == VideoNodeKind::kUnknown && OutOfDescriptors(errno)) {
        f.short_of_descriptors = true;  // asked again next time
      } else {
        asked.emplace(rdev, f.video);
      }
    }
  }
  return f;
}

bool IsTtyMajor(unsigned major) {
  const std::optional<std::string> drivers = ReadSmallFile("/proc/tty/drivers");
  return drivers.has_value() && TtyMajorIn(*drivers, major);
}

std::string CharacterDriverName(unsigned major) {
  const std::optional<std::string> devices = ReadSmallFile("/proc/devices");
  return devices.has_value() ? DriverNameIn(*devices, major) : "";
}

VideoNodeKind QueryVideoNode(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return VideoNodeKind::kUnknown;
  v4l2_capability caps{};
  const int got = ioctl(fd, VIDIOC_QUERYCAP, &caps);
  close(fd);
  if (got != 0) return VideoNodeKind::kUnknown;
  const uint32_t device_caps = (caps.capabilities & V4L2_CAP_DEVICE_CAPS) != 0 ? caps.device_caps : caps.capabilities;
  return (device_caps & (V4L2_CAP_VIDEO_M2M | V4L2_CAP_VIDEO_M2M_MPLANE)) != 0 ? VideoNodeKind::kMemToMem
                                                                                 : VideoNodeKind::kOther;
}

}  // namespace codecvisor
