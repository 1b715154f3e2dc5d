#include "tools/cli/host_setup.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/absl_interop.h"
#include "backends/sdk/codecvisor_backend.h"
#include "core/backend_history.h"
#include "core/backend_output.h"

namespace codecvisor::cli {


absl::StatusOr<std::unique_ptr<Host>> CreateHost(const std::vector<std::string>& manifests,
                                                 std::vector<ManifestFailure>* failures) {
  HostOptions options;
  options.history_file = DefaultBackendHistoryPath();  // `codecvisor backends` shows it
  absl::StatusOr<std::unique_ptr<Host>> host = ToAbsl(Host::Create(options));
  if (!host.ok()) return host.status();
  // The default device is held to --device's rule: "cpu:1" is no device,
  // not silently the cpu ("cpu:0", torch's name for it, is).
  if (!CheckDeviceFlag((*host)->default_device()).ok()) {
    return absl::InvalidArgumentError(absl::StrCat("CODECVISOR_DEFAULT_DEVICE='", (*host)->default_device(),
                                                   "': the cpu device has no index; set it to cpu"));
  }
  for (const std::string& manifest : manifests) {
    absl::Status loaded = ToAbsl((*host)->LoadBackend(manifest));
    if (loaded.ok()) continue;
    if (failures == nullptr) {
      return absl::Status(loaded.code(), absl::StrCat("--backend-manifest ", manifest, ": ", loaded.message()));
    }
    failures->push_back({manifest, loaded});
  }
  return host;
}

BackendInfo FailedManifestStatus(const ManifestFailure& failure) {
  BackendInfo s;
  s.name = std::filesystem::path(failure.path).stem().string();
  s.manifest_path = failure.path;
  s.state = "failed";
  s.diagnostic = std::string(failure.status.message());
  return s;
}

DecoderOptions DecoderOptionsFor(const OpenArgs& args) {
  DecoderOptions options;
  options.device = args.device;
  options.stream_index = args.stream;
  options.seek_mode = args.seek_mode;
  options.decoder_threads = args.threads;
  // At least a millisecond: the flags' check keeps them positive.
  auto milliseconds = [](double seconds) {
    return std::chrono::milliseconds(std::max<int64_t>(1, std::llround(seconds * 1000)));
  };
  if (args.timeout > 0) options.request_timeout = milliseconds(args.timeout);
  if (args.open_timeout > 0) options.open_timeout = milliseconds(args.open_timeout);
  return options;
}

std::string DeviceFor(const OpenArgs& args, const Host& host) {
  return args.device.empty() ? host.default_device() : args.device;
}

void PrintWarnings(absl::string_view command, const Host& host) {
  for (const std::string& warning : host.warnings()) {
    std::fprintf(stderr, "codecvisor %.*s: warning: %s\n", static_cast<int>(command.size()), command.data(),
                 warning.c_str());
  }
}

namespace {

// "scheme://...", e.g. http://, file://: what the backends do not open.
bool LooksLikeUrl(const std::string& path) {
  const size_t colon = path.find("://");
  if (colon == std::string::npos || colon == 0 || !absl::ascii_isalpha(static_cast<unsigned char>(path[0]))) {
    return false;
  }
  return std::all_of(path.begin(), path.begin() + colon, [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  });
}

}  // namespace

absl::Status CheckReadableFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    // A URL, not a missing file: say so rather than "No such file".
    if (LooksLikeUrl(path)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": URLs are not supported; give the path of a local file (for file://, the path itself)"));
    }
    return absl::Status(absl::ErrnoToStatusCode(err), absl::StrCat(path, ": ", std::strerror(err)));
  }
  if (S_ISDIR(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(path, ": is a folder, not a video"));
  if (access(path.c_str(), R_OK) != 0) {
    const int err = errno;
    return absl::Status(absl::ErrnoToStatusCode(err), absl::StrCat(path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

absl::Status CheckDeviceFlag(absl::string_view device) {
  const size_t colon = device.find(':');
  if (device.substr(0, colon) == "cpu" && colon != absl::string_view::npos && device != "cpu:0") {
    return absl::InvalidArgumentError(absl::StrCat("'", device, "': the cpu device has no index; use --device cpu"));
  }
  return absl::OkStatus();
}

bool StdoutWritten() { return std::fflush(stdout) == 0 && std::ferror(stdout) == 0; }

int ReportFailure(absl::string_view command, absl::string_view subject, const absl::Status& status) {
  // Errors quote backends' messages: escaped before they reach a terminal.
  const std::string escaped = EscapeForTerminal(std::string_view(status.message().data(), status.message().size()));
  const absl::string_view message = escaped;
  // The file's name too: a newline in it would split the one line, an
  // escape sequence in it would reach the terminal. Messages name the file
  // escaped the same way.
  const std::string escaped_subject = EscapeForTerminal(std::string_view(subject.data(), subject.size()));
  subject = escaped_subject;
  if (subject.empty() || absl::StartsWith(message, subject)) {
    std::fprintf(stderr, "codecvisor %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
                 static_cast<int>(message.size()), message.data());
  } else {
    std::fprintf(stderr, "codecvisor %.*s: %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
                 static_cast<int>(subject.size()), subject.data(), static_cast<int>(message.size()),
                 message.data());
  }
  return 1;
}

void SetBackendLogLevel(const std::string& level) {
  if (!level.empty()) setenv(CODECVISOR_BACKEND_LOG_LEVEL_ENV, level.c_str(), 1);
}

bool BackendsMayLog() {
  const char* level = std::getenv(CODECVISOR_BACKEND_LOG_LEVEL_ENV);
  return level != nullptr && *level != '\0' && std::string(level) != "quiet";
}

}  // namespace codecvisor::cli
