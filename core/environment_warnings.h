// File: core/environment_warnings.h
//
// The CODECVISOR_* variables a user sets, checked when a Host is made: a
// value codecvisor would not take as written (a typo such as
// CODECVISOR_BACKEND_LOG_LEVEL=warn, a folder on CODECVISOR_BACKEND_PATH
// that is not there) is otherwise silently read as the default. Each gives
// one warning among the host's (the CLI prints them, Python's
// codecvisor.backends.warnings() lists them) naming the variable, its
// value, what it takes and what happens instead. Pure logic: the variables
// and folders are read through the functions given.

#ifndef CODECVISOR_CORE_ENVIRONMENT_WARNINGS_H_
#define CODECVISOR_CORE_ENVIRONMENT_WARNINGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"

namespace codecvisor {

// The levels CODECVISOR_BACKEND_LOG_LEVEL takes (the ffmpeg CLI's
// -loglevel names, as the SDK header says), the CLI's --loglevel too.
inline constexpr const char* kBackendLogLevels[] = {"quiet", "panic",   "fatal", "error", "warning",
                                                    "info",  "verbose", "debug", "trace"};

// CODECVISOR_FRAME_POOL_SLOTS (`text`, null when unset) as the host reads
// it at every open: strtoul's whole number, at most kMaxFramePoolSlots;
// anything else is the default.
inline constexpr uint32_t kDefaultFramePoolSlots = 16;
inline constexpr uint32_t kMaxFramePoolSlots = 64;
struct FramePoolSlotsSetting {
  uint32_t slots = kDefaultFramePoolSlots;
  bool well_formed = true;  // unset, empty or a whole number
  bool clamped = false;     // a number above kMaxFramePoolSlots
};
FramePoolSlotsSetting ReadFramePoolSlots(const char* text);

// `get(name)`: the variable's value, or null when unset (std::getenv).
// `is_folder(path)`: whether `path` is a folder this process can list.
std::vector<std::string> EnvironmentWarnings(absl::FunctionRef<const char*(const char*)> get,
                                             absl::FunctionRef<bool(const std::string&)> is_folder);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_ENVIRONMENT_WARNINGS_H_
