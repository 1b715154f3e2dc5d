#include "core/environment_warnings.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
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
};

// Variables with a few values each; any other is read as the default.
constexpr Choice kChoices[] = {
    {"CODECVISOR_BACKEND_LOG_LEVEL",
     {"quiet", "panic", "fatal", "error", "warning", "info", "verbose", "debug", "trace"},
     "backends log nothing (quiet)"},
    {"CODECVISOR_DEVICE_BACKEND_AUTOLOAD", {"0", "1"}, "plugins are not autoloaded (as 0)"},
    {"CODECVISOR_ALLOW_DEGRADED_SANDBOX", {"0", "1"}, "no degraded sandbox is allowed (as 0)"},
    {"CODECVISOR_SECCOMP", {"log"}, "the seccomp filter is enforced"},
    {"CODECVISOR_BACKEND_BACKTRACE", {"0", "1"}, "no backtrace is written (as 0)"},
};

// Variables that take a whole number.
struct Number {
  const char* name;
  const char* otherwise;
};
constexpr Number kNumbers[] = {
    {"CODECVISOR_FRAME_POOL_SLOTS", "the default of 16 slots is used"},
    {"CODECVISOR_BATCH_CACHE_MIB", "the default cache size is used"},
};

}  // namespace

std::vector<std::string> EnvironmentWarnings(absl::FunctionRef<const char*(const char*)> get,
                                             absl::FunctionRef<bool(const std::string&)> is_folder) {
  std::vector<std::string> warnings;
  for (const Choice& c : kChoices) {
    const char* value = get(c.name);
    if (value == nullptr || *value == '\0') continue;
    if (std::any_of(c.takes.begin(), c.takes.end(), [&](const char* v) { return std::string_view(v) == value; })) {
      continue;
    }
    warnings.push_back(absl::StrCat(c.name, "='", value, "' is not one of ", absl::StrJoin(c.takes, ", "), ": ",
                                    c.otherwise));
  }
  for (const Number& n : kNumbers) {
    const char* value = get(n.name);
    if (value == nullptr || *value == '\0') continue;
    uint64_t v = 0;
    if (absl::SimpleAtoi(value, &v)) continue;
    warnings.push_back(absl::StrCat(n.name, "='", value, "' is not a whole number from 0: ", n.otherwise));
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
