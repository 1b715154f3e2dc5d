#include "core/environment_warnings.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace codecvisor {
namespace {

struct Choice {
  const char* name;                          // the variable
  std::initializer_list<const char*> takes;  // the values it takes
  const char* otherwise;                     // what any other value does
  bool empty_is_unset = true;                // an empty value is read as none
};

// Variables with a few values each; any other is read as the default.
constexpr Choice kChoices[] = {
    {"CODECVISOR_BACKEND_LOG_LEVEL",
     {"quiet", "panic", "fatal", "error", "warning", "info", "verbose", "debug", "trace"},
     "backends log nothing (quiet)"},
    // Read as torch reads its switch: only unset or "1" is on.
    {"CODECVISOR_DEVICE_BACKEND_AUTOLOAD", {"0", "1"}, "plugins are not autoloaded (as 0)", false},
    {"CODECVISOR_ALLOW_DEGRADED_SANDBOX", {"0", "1"}, "no degraded sandbox is allowed (as 0)"},
    {"CODECVISOR_SECCOMP", {"log"}, "the seccomp filter is enforced"},
    {"CODECVISOR_BACKEND_BACKTRACE", {"0", "1"}, "no backtrace is written (as 0)"},
};

// As core/backend_process_open.cc reads CODECVISOR_FRAME_POOL_SLOTS:
// strtoul's whole number, at most kMostPoolSlots.
constexpr unsigned long kMostPoolSlots = 64;
std::optional<std::string> PoolSlotsWarning(const char* text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (*end != '\0' || text[0] == '-' || end == text) {
    return absl::StrCat("CODECVISOR_FRAME_POOL_SLOTS='", text,
                        "' is not a whole number: the default of 16 slots is used");
  }
  if (v > kMostPoolSlots || errno == ERANGE) {
    return absl::StrCat("CODECVISOR_FRAME_POOL_SLOTS='", text, "' is more than ", kMostPoolSlots, ": ", kMostPoolSlots,
                        " slots are used");
  }
  return std::nullopt;
}

}  // namespace

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
  if (const char* value = get("CODECVISOR_FRAME_POOL_SLOTS"); value != nullptr && *value != '\0') {
    if (std::optional<std::string> w = PoolSlotsWarning(value)) warnings.push_back(*std::move(w));
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
