#include "core/environment_warnings.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace codecvisor {
namespace {

struct Choice {
  const char* name;                    // the variable
  std::span<const char* const> takes;  // the values it takes
  const char* otherwise;               // what any other value does
  bool empty_is_unset = true;          // an empty value is read as none
};

constexpr const char* kSwitch[] = {"0", "1"};
constexpr const char* kLog[] = {"log"};

// Variables with a few values each; any other is read as the default.
constexpr Choice kChoices[] = {
    {"CODECVISOR_BACKEND_LOG_LEVEL", kBackendLogLevels, "backends log nothing (quiet)"},
    // Read as torch reads its switch: only unset or "1" is on.
    {"CODECVISOR_DEVICE_BACKEND_AUTOLOAD", kSwitch, "plugins are not autoloaded (as 0)", false},
    {"CODECVISOR_ALLOW_DEGRADED_SANDBOX", kSwitch, "no degraded sandbox is allowed (as 0)"},
    {"CODECVISOR_SECCOMP", kLog, "the seccomp filter is enforced"},
    {"CODECVISOR_BACKEND_BACKTRACE", kSwitch, "no backtrace is written (as 0)"},
};

}  // namespace

FramePoolSlotsSetting ReadFramePoolSlots(const char* text) {
  FramePoolSlotsSetting setting;
  if (text == nullptr || text[0] == '\0') return setting;
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (*end != '\0' || text[0] == '-') {
    setting.well_formed = false;
    return setting;
  }
  setting.clamped = v > kMaxFramePoolSlots || errno == ERANGE;
  setting.slots = setting.clamped ? kMaxFramePoolSlots : static_cast<uint32_t>(v);
  return setting;
}

std::vector<std::string> EnvironmentWarnings(absl::FunctionRef<const char*(const char*)> get,
                                             absl::FunctionRef<bool(const std::string&)> is_folder) {
  std::vector<std::string> warnings;
  for (const Choice& c : kChoices) {
    const char* value = get(c.name);
    if (value == nullptr || (*value == '\0' && c.empty_is_unset)) continue;
    if (std::any_of(c.takes.begin(), c.takes.end(), [&](const char* v) { return std::string_view(v) == value; })) {
      continue;
    }
    warnings.push_back(absl::StrCat(c.name, "='", value, "' is not one of ", absl::StrJoin(c.takes, ", "), ": ",
                                    c.otherwise));
  }
  if (const char* value = get("CODECVISOR_FRAME_POOL_SLOTS"); value != nullptr) {
    const FramePoolSlotsSetting pool = ReadFramePoolSlots(value);
    if (!pool.well_formed) {
      warnings.push_back(absl::StrCat("CODECVISOR_FRAME_POOL_SLOTS='", value,
                                      "' is not a whole number: the default of ", kDefaultFramePoolSlots,
                                      " slots is used"));
    } else if (pool.clamped) {
      warnings.push_back(absl::StrCat("CODECVISOR_FRAME_POOL_SLOTS='", value, "' is more than ", kMaxFramePoolSlots,
                                      ": ", kMaxFramePoolSlots, " slots are used"));
    }
  }
  // As base/batch_memory.cc reads it.
  if (const char* value = get("CODECVISOR_BATCH_CACHE_MIB"); value != nullptr) {
    size_t mib = 0;
    if (!absl::SimpleAtoi(value, &mib)) {
      warnings.push_back(absl::StrCat("CODECVISOR_BATCH_CACHE_MIB='", value,
                                      "' is not a whole number: the default cache size is used"));
    }
  }
  if (const char* path = get("CODECVISOR_BACKEND_PATH"); path != nullptr) {
    for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
      if (!is_folder(std::string(dir))) {
        warnings.push_back(absl::StrCat("CODECVISOR_BACKEND_PATH names ", dir,
                                        ", which is not a folder this process can read: no backend is found there"));
      }
    }
  }
  return warnings;
}

}  // namespace codecvisor
