#include "backends/sdk/runner/runner_args.h"

#include <unistd.h>

#include <cstddef>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ipc/unique_fd.h"

namespace codecvisor::runner {
namespace {

// Each mode's name on the command line.
template <typename Mode>
struct ModeName {
  Mode mode;
  const char* name;
};
constexpr ModeName<RunnerArgs::Landlock> kLandlockNames[] = {{RunnerArgs::Landlock::kRequire, "require"},
                                                             {RunnerArgs::Landlock::kTry, "try"},
                                                             {RunnerArgs::Landlock::kOff, "off"}};
constexpr ModeName<RunnerArgs::Seccomp> kSeccompNames[] = {{RunnerArgs::Seccomp::kRequire, "require"},
                                                           {RunnerArgs::Seccomp::kLog, "log"},
                                                           {RunnerArgs::Seccomp::kOff, "off"}};

template <typename Mode, size_t N>
const char* NameOf(const ModeName<Mode> (&names)[N], Mode mode) {
  for (const ModeName<Mode>& n : names) {
    if (n.mode == mode) return n.name;
  }
  return names[0].name;
}

// Sets *mode from `value`; false if it names none.
template <typename Mode, size_t N>
bool ModeOf(const ModeName<Mode> (&names)[N], const std::string& value, Mode* mode) {
  for (const ModeName<Mode>& n : names) {
    if (value == n.name) {
      *mode = n.mode;
      return true;
    }
  }
  return false;
}

absl::Status BadValue(const char* flag, const std::string& value, const char* expected) {
  return absl::InvalidArgumentError(absl::StrCat(flag, " ", value, ": expected ", expected));
}

}  // namespace

std::vector<std::string> RunnerArgs::ToArgv() const {
  std::vector<std::string> argv = {"codecvisor-backend", kFlagName, name, kFlagLibrary, library};
  auto add = [&](const char* flag, std::string value) {
    argv.push_back(flag);
    argv.push_back(std::move(value));
  };
  if (!entry.empty()) add(kFlagEntry, entry);
  if (library_fd >= 0) add(kFlagLibraryFd, std::to_string(library_fd));
  if (!config.empty()) add(kFlagConfig, config);
  if (config_fd >= 0) add(kFlagConfigFd, std::to_string(config_fd));
  for (const std::string& p : read_paths) add(kFlagReadPath, p);
  for (const std::string& d : devices) add(kFlagDevice, d);
  add(kFlagLandlock, NameOf(kLandlockNames, landlock));
  add(kFlagSeccomp, NameOf(kSeccompNames, seccomp));
  if (backtrace) add(kFlagBacktrace, "1");
  if (!memfd) add(kFlagMemfd, "0");
  if (close_timeout_ms != kDefaultCloseTimeoutMs) add(kFlagCloseTimeout, std::to_string(close_timeout_ms));
  return argv;
}

absl::StatusOr<RunnerArgs> RunnerArgs::Parse(const std::vector<std::string>& argv) {
  std::vector<const char*> raw;
  for (const std::string& a : argv) raw.push_back(a.c_str());
  return Parse(static_cast<int>(raw.size()), raw.data());
}

absl::StatusOr<RunnerArgs> RunnerArgs::Parse(int argc, const char* const* argv) {
  RunnerArgs args;
  std::set<std::string> seen;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(flag, ": no value"));
    const std::string value = argv[i + 1];
    const bool repeatable = flag == kFlagReadPath || flag == kFlagDevice;
    if (!repeatable && !seen.insert(flag).second) {
      return absl::InvalidArgumentError(absl::StrCat(flag, " given twice"));
    }
    if (flag == kFlagName) {
      args.name = value;
    } else if (flag == kFlagLibrary) {
      args.library = value;
    } else if (flag == kFlagEntry) {
      args.entry = value;
    } else if (flag == kFlagConfig) {
      args.config = value;
    } else if (flag == kFlagConfigFd) {
      if (!absl::SimpleAtoi(value, &args.config_fd) || args.config_fd < 0) {
        return BadValue(kFlagConfigFd, value, "a descriptor number");
      }
    } else if (flag == kFlagLibraryFd) {
      if (!absl::SimpleAtoi(value, &args.library_fd) || args.library_fd < 0) {
        return BadValue(kFlagLibraryFd, value, "a descriptor number");
      }
    } else if (flag == kFlagReadPath) {
      args.read_paths.push_back(value);
    } else if (flag == kFlagDevice) {
      args.devices.push_back(value);
    } else if (flag == kFlagLandlock) {
      if (!ModeOf(kLandlockNames, value, &args.landlock)) return BadValue(kFlagLandlock, value, "require, try or off");
    } else if (flag == kFlagSeccomp) {
      if (!ModeOf(kSeccompNames, value, &args.seccomp)) return BadValue(kFlagSeccomp, value, "require, log or off");
    } else if (flag == kFlagBacktrace) {
      if (value != "0" && value != "1") return BadValue(kFlagBacktrace, value, "0 or 1");
      args.backtrace = value == "1";
    } else if (flag == kFlagMemfd) {
      if (value != "0" && value != "1") return BadValue(kFlagMemfd, value, "0 or 1");
      args.memfd = value == "1";
    } else if (flag == kFlagCloseTimeout) {
      if (!absl::SimpleAtoi(value, &args.close_timeout_ms) || args.close_timeout_ms < 1 ||
          args.close_timeout_ms > kMaxCloseTimeoutMs) {
        return BadValue(kFlagCloseTimeout, value, "milliseconds, 1 to 3600000");
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", flag));
    }
  }
  if (args.name.empty()) return absl::InvalidArgumentError(absl::StrCat(kFlagName, " is required"));
  if (args.library.empty()) return absl::InvalidArgumentError(absl::StrCat(kFlagLibrary, " is required"));
  if (!args.config.empty() && args.config_fd >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(kFlagConfig, " and ", kFlagConfigFd, " exclude each other"));
  }
  return args;
}

absl::Status RunnerArgs::ReadConfig() {
  if (config_fd < 0) return absl::OkStatus();
  ipc::UniqueFd fd(std::exchange(config_fd, -1));
  std::string text(kMaxConfigBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ipc::RetryEintr([&] { return pread(fd.get(), text.data() + got, text.size() - got, got); });
    if (n < 0) return ipc::ErrnoStatus(absl::StrCat(kFlagConfigFd, " ", fd.get()));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxConfigBytes) {
    return absl::InvalidArgumentError(absl::StrCat("[config] of more than ", kMaxConfigBytes, " bytes"));
  }
  text.resize(got);
  config = std::move(text);
  return absl::OkStatus();
}

}  // namespace codecvisor::runner
