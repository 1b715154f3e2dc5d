// File: core/device_policy.h
//
// Which character devices a backend's manifest may grant it ([sandbox]
// devices, bound read-write). A manifest is its vendor's, so a hostile
// plugin names whatever the user can open: the rule refuses the devices
// that hold the user's input, screens or sound, or the kernel's memory,
// whichever driver numbers them, and keeps what decoders use (GPUs and
// their render nodes, accelerators, mem-to-mem video4linux decoders).
// Pure but for reading /proc/devices and asking a video4linux node what it
// is. Thread-safe.

#ifndef CODECVISOR_CORE_DEVICE_POLICY_H_
#define CODECVISOR_CORE_DEVICE_POLICY_H_

#include <sys/types.h>

#include <string>

namespace codecvisor {

// What a video4linux node (major 81) is.
enum class VideoNodeKind {
  kNotVideo4Linux,
  kMemToMem,  // a codec: frames in, frames out (V4L2_CAP_VIDEO_M2M*)
  kOther,     // a camera, a capture card, a tuner, an output
  kUnknown,   // could not be asked
};

// What is known of a character device node.
struct DeviceFacts {
  unsigned major = 0, minor = 0;
  std::string driver;  // what /proc/devices calls its major; "" if unknown
  bool tty = false;    // its major is a tty driver's (/proc/tty/drivers)
  VideoNodeKind video = VideoNodeKind::kNotVideo4Linux;
  // Some of the above could not be read for want of descriptors (this
  // process at its limit): unknown, not harmless.
  bool short_of_descriptors = false;
};

// Pure: why the device may not be granted; "" when it may. Refused:
// terminals (4, 5, 136-143 and any tty driver's major: typed passwords,
// TIOCSTI), the consoles' screens (vcs, 7), input devices (13: keystrokes),
// sound (14, 116: microphones), /dev/mem, kmem, port and kmsg (1:1, 2, 4,
// 11), uinput, uhid and the PS/2 mouse (10:223, 239, 1), raw HID devices
// ("hidraw": keyboards, security keys), raw USB and USB sniffing
// ("usb_device", "usbmon": any device on the bus), raw SCSI and NVMe
// passthrough ("sg", "bsg", "nvme-generic": disks, around the block-device
// rule) and video4linux nodes but codecs (cameras).
std::string WhyDeviceIsRefused(const DeviceFacts& device);

// The facts of the character device `rdev` at `path`, from /proc/devices,
// /proc/tty/drivers and, for a video4linux node, VIDIOC_QUERYCAP (asked
// once per device number in a process: opening some nodes powers a camera
// up or loads a codec's firmware).
DeviceFacts ReadDeviceFacts(const std::string& path, dev_t rdev);

// The driver name /proc/devices gives character major `major`; "" if none.
std::string CharacterDriverName(unsigned major);

// Whether /proc/tty/drivers names a tty driver of major `major`.
bool IsTtyMajor(unsigned major);

// Asks the video4linux node at `path` what it is (VIDIOC_QUERYCAP).
VideoNodeKind QueryVideoNode(const std::string& path);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_DEVICE_POLICY_H_
