#include "core/host.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/kernel_file_system.h"
#include "base/standard_descriptors.h"
#include "core/backend_history.h"
#include "core/backend_output.h"
#include "core/backend_sandbox.h"
#include "core/death_record.h"
#include "core/environment_warnings.h"
#include "core/file_trust.h"
#include "core/system_supervisor_env.h"

namespace codecvisor::internal {
namespace {

// The longest wait a timeout may ask for (about ten years): a longer one is
// taken as this. Deadlines are now plus up to ten timeouts on a nanosecond
// clock, which milliseconds::max() would overflow into the past.
constexpr std::chrono::milliseconds kLongestTimeout = std::chrono::hours(24 * 365 * 10);

std::string IsoTime(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

absl::StatusOr<std::pair<std::string, int>> ParseDevice(absl::string_view device) {
  size_t colon = device.find(':');
  std::string name(device.substr(0, colon));
  int index = -1;
  if (colon != absl::string_view::npos &&
      (!absl::SimpleAtoi(device.substr(colon + 1), &index) || index < 0)) {
    return absl::InvalidArgumentError(absl::StrCat("device '", device, "': expected NAME or NAME:INDEX"));
  }
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("device '", device, "' has no name"));
  return std::make_pair(name, index);
}

Host::DefaultDevice Host::ChooseDefaultDevice(const HostOptions& options) {
  if (!options.default_device.empty()) return {options.default_device, ""};
  if (const char* env = std::getenv("CODECVISOR_DEFAULT_DEVICE"); env != nullptr && *env) {
    return {env, "CODECVISOR_DEFAULT_DEVICE"};
  }
  return {kBuiltinBackend, ""};
}

Host::Host(HostOptions options, InstallLayout layout)
    : options_(std::move(options)),
      layout_(std::move(layout)),
      default_device_(ChooseDefaultDevice(options_)),
      env_(std::make_shared<SystemSupervisorEnv>(layout_, std::make_shared<SystemProcessLauncher>())) {}

absl::StatusOr<std::unique_ptr<Host>> Host::Create(HostOptions options) {
  // Before the host opens anything: none of its descriptors may be 0-2.
  FillClosedStandardDescriptors();
  InstallLayout layout;
  if (options.layout.has_value()) {
    layout = *options.layout;
  } else {
    absl::StatusOr<InstallLayout> found = InstallLayout::Discover();
    if (!found.ok()) return found.status();
    layout = *found;
  }
  const bool discovery_from_environment = !options.discovery.has_value();
  const DiscoveryOptions discovery =
      options.discovery.has_value() ? *options.discovery : DiscoveryOptionsFromEnvironment(layout.builtin_dir);
  // For every backend of this process, as [sandbox] allow_degraded is for
  // one: the way for a user who cannot edit the installed manifests (the
  // built-in cpu's) on a machine without user namespaces (a container
  // whose seccomp profile refuses them).
  if (const char* degraded = std::getenv(kAllowDegradedEnv); degraded != nullptr && std::string(degraded) == "1") {
    options.supervision.spawn.allow_degraded = true;
  }
  // The host starts a thread of its own (the spawner): a process whose user
  // may start no more (RLIMIT_NPROC) gets the shortage as a status, not
  // std::thread's exception.
  std::unique_ptr<Host> host;
  try {
    host.reset(new Host(std::move(options), layout));
  } catch (const std::system_error& e) {
    return ThreadNotStarted("the host's thread", e);
  }
  if (!discovery.autoload) {
    host->autoload_off_ = discovery.autoload_setting.empty()
                              ? "this host was created with autoloading off"
                              : absl::StrCat(ReplaceUnsafeForTerminal(discovery.autoload_setting),
                                             " is set (anything but 1 turns autoloading off)");
  }
  Discovery found = DiscoverBackends(discovery);
  {
    MutexLock lock(&host->mu_);
    host->warnings_ = std::move(found.warnings);
    // The discovery variables only where the caller's options did not
    // replace what they set.
    auto variable = [discovery_from_environment](const char* name) -> const char* {
      const std::string_view n = name;
      if (!discovery_from_environment &&
          (n == "CODECVISOR_BACKEND_PATH" || n == "CODECVISOR_DEVICE_BACKEND_AUTOLOAD")) {
        return nullptr;
      }
      return std::getenv(name);
    };
    for (std::string& w : EnvironmentWarnings(variable, [](const std::string& path) {
           DIR* dir = opendir(path.c_str());
           if (dir != nullptr) closedir(dir);
           return dir != nullptr;
         })) {
      host->warnings_.push_back(std::move(w));
    }
    if (host->options_.supervision.spawn.sandbox) {
      if (std::string w = MissingCgroupWarning(); !w.empty()) host->warnings_.push_back(std::move(w));
    }
    for (DiscoveredBackend& b : found.backends) host->Add(std::move(b));
    if (host->options_.eager_spawn) {
      for (auto& [name, entry] : host->backends_) {
        if (entry.supervisor != nullptr) entry.supervisor->SpawnEagerly();
      }
    }
  }
  return host;
}

Host::~Host() {
  if (!options_.history_file.empty()) {
    std::vector<BackendSighting> seen;
    for (const BackendStatus& b : Backends()) {
      seen.push_back({.name = b.name,
                      .manifest = b.manifest_path,
                      .state = b.state,
                      .diagnostic = b.diagnostic,
                      .restarts = b.restarts,
                      .last_exit = b.last_exit,
                      .last_exit_time = b.last_exit_time});
    }
    // Written only when it changes (most hosts see no failure), or to
    // repair one that cannot be read (zeroed by a crash). Best effort: a
    // history that cannot be written costs only the record, which is said,
    // once, so that a later `codecvisor backends` that shows no earlier
    // failure is not taken for a clean record. With nothing to record, a
    // repair that fails (a HOME this user may not write, a file that is no
    // history, left as it is) is not said: nothing was lost.
    absl::StatusOr<BackendHistory> read = ReadBackendHistory(options_.history_file);
    const bool readable = read.ok();
    const BackendHistory before = readable ? *std::move(read) : BackendHistory{};
    BackendHistory after = before;
    AddSightings(seen, &after);
    const bool changed = after != before;
    if (changed || !readable) {
      const absl::Status written =
          UpdateBackendHistory(options_.history_file, [&](BackendHistory* h) { AddSightings(seen, h); });
      if (!written.ok() && changed) {
        std::fprintf(stderr,
                     "codecvisor: the backends' failures in this process were not recorded for "
                     "`codecvisor backends`: %s\n",
                     EscapeForTerminal(std::string(written.message())).c_str());
      }
    }
  }
  std::vector<std::shared_ptr<Supervisor>> supervisors;
  {
    MutexLock lock(&mu_);
    for (auto& [name, entry] : backends_) {
      if (entry.supervisor != nullptr) supervisors.push_back(entry.supervisor);
    }
  }
  for (auto& s : supervisors) s->Shutdown();
}

void Host::Add(DiscoveredBackend b) {
  if (backends_.count(b.name) > 0) {
    // Discovery gives every entry its own name; never let one replace another.
    warnings_.push_back(absl::StrCat("backend '", b.name, "' from ", b.manifest_path, " is already provided by ",
                                     backends_[b.name].manifest_path, "; ignored"));
    return;
  }
  Entry entry;
  // As loaded (absolute, normal), not as typed: the backend history tells
  // manifests apart by it.
  entry.manifest_path = b.manifest.ok() ? b.manifest->path : b.manifest_path;
  entry.devices = b.devices;
  if (b.manifest.ok()) {
    warnings_.insert(warnings_.end(), b.manifest->warnings.begin(), b.manifest->warnings.end());
    entry.supervisor = std::make_shared<Supervisor>(*b.manifest, env_, options_.supervision);
    std::vector<std::string> taken;
    for (const std::string& device : b.manifest->devices) {
      if (std::find(b.devices.begin(), b.devices.end(), device) == b.devices.end()) taken.push_back(device);
    }
    if (!taken.empty()) {
      entry.note = absl::StrCat("its device", taken.size() > 1 ? "s '" : " '", absl::StrJoin(taken, "', '"),
                                "' went to a backend found before it (see the warnings)");
    }
  } else {
    entry.failure = b.manifest.status();
  }
  for (const std::string& device : b.devices) devices_.emplace(device, b.name);
  backends_[b.name] = std::move(entry);
}

namespace {

// Whether two paths name one file (a path and a symlink to it, or the same
// file reached through two folders).
bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

absl::Status Host::LoadBackend(absl::string_view manifest_path) {
  if (manifest_path.empty()) return absl::InvalidArgumentError("no manifest path given to load a backend from");
  absl::StatusOr<BackendManifest> manifest = LoadManifest(manifest_path);
  if (!manifest.ok()) return manifest.status();
  MutexLock lock(&mu_);
  if (auto it = backends_.find(manifest->name); it != backends_.end()) {
    // The manifest discovery found already (a CLI user naming an installed
    // backend's manifest): loaded once, as Python's entry points are.
    if (it->second.supervisor != nullptr && SameFile(it->second.manifest_path, std::string(manifest_path))) {
      return absl::OkStatus();
    }
    // A broken manifest of that name (say one left on the search path by an
    // old install) yields the name to a sound one, as discovery does between
    // two path manifests; it stays listed, under a name that says where it is.
    if (it->second.supervisor != nullptr || manifest->name == kBuiltinBackend) {
      return absl::AlreadyExistsError(absl::StrCat("backend '", manifest->name, "' is already provided by ",
                                                   it->second.manifest_path));
    }
    auto broken = backends_.extract(it);
    broken.key() = absl::StrCat(manifest->name, " (", broken.mapped().manifest_path, ")");
    backends_.insert(std::move(broken));
  }
  DiscoveredBackend b;
  b.manifest_path = std::string(manifest_path);
  b.name = manifest->name;
  for (const std::string& device : manifest->devices) {
    if (auto it = devices_.find(device); it == devices_.end()) {
      b.devices.push_back(device);
    } else {
      warnings_.push_back(absl::StrCat("device '", device, "' is claimed by ", backends_[it->second].manifest_path,
                                       " and ", manifest_path, "; the first keeps it"));
    }
  }
  b.manifest = *std::move(manifest);
  Add(std::move(b));
  return absl::OkStatus();
}

absl::Status Host::NotInstalled(absl::string_view what, absl::string_view name) const {
  // Each backend with the devices it serves, so that one whose devices
  // others took (a plugin naming "cpu") is seen for what it is.
  std::vector<std::string> names;
  for (const auto& [backend, entry] : backends_) {
    if (entry.supervisor == nullptr) {
      names.push_back(absl::StrCat(backend, " (its manifest is broken)"));
    } else if (entry.devices.empty()) {
      names.push_back(absl::StrCat(backend, " (no device of its own: ", entry.note, ")"));
    } else {
      names.push_back(absl::StrCat(backend, " (", absl::StrJoin(entry.devices, ", "), ")"));
    }
  }
  std::string where =
      "; a plugin installed elsewhere is found by putting its manifest's folder on "
      "CODECVISOR_BACKEND_PATH";
  if (!autoload_off_.empty()) {
    where = absl::StrCat("; ", autoload_off_,
                         ", which loads the built-in cpu backend alone (CODECVISOR_BACKEND_PATH and plugin packages "
                         "are not searched)");
  }
  return absl::NotFoundError(absl::StrCat("no ", what, " '", name, "' (installed backends: ",
                                          names.empty() ? "none" : absl::StrJoin(names, "; "), ")", where));
}

absl::Status Host::ResetBackend(absl::string_view name) {
  MutexLock lock(&mu_);
  auto it = backends_.find(std::string(name));
  if (it == backends_.end()) return NotInstalled("backend named", name);
  if (it->second.supervisor == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("backend '", name, "' has a broken manifest: ",
                                                      it->second.failure.message()));
  }
  it->second.supervisor->Reset();
  return absl::OkStatus();
}

absl::Status Host::StartBackend(absl::string_view name, std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("the timeout must be positive, not ", timeout.count(), " ms"));
  }
  std::shared_ptr<Supervisor> supervisor;
  {
    MutexLock lock(&mu_);
    auto it = backends_.find(std::string(name));
    if (it == backends_.end()) return NotInstalled("backend named", name);
    if (it->second.supervisor == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("backend '", name, "' has a broken manifest: ",
                                                        it->second.failure.message()));
    }
    supervisor = it->second.supervisor;
  }
  // Outside mu_: the spawn takes as long as the child's start and handshake.
  absl::StatusOr<BackendHandle> handle = supervisor->Acquire(ipc::Clock::now() + std::min(timeout, kLongestTimeout));
  return handle.status();
}

absl::StatusOr<std::shared_ptr<Supervisor>> Host::SupervisorFor(absl::string_view device) {
  absl::StatusOr<std::pair<std::string, int>> parsed = ParseDevice(device);
  if (!parsed.ok()) return parsed.status();
  // The cpu is one device: "cpu:0" is torch's name for it, "cpu:1" no
  // device at all, not silently the cpu (the CLI refuses it too).
  if (parsed->first == kBuiltinBackend && parsed->second > 0) {
    return absl::InvalidArgumentError(absl::StrCat("device '", device, "': the cpu device has no index (use \"cpu\")"));
  }
  MutexLock lock(&mu_);
  auto dev = devices_.find(parsed->first);
  if (dev == devices_.end()) {
    // A failed manifest may still be what the caller meant: say so.
    for (const auto& [name, entry] : backends_) {
      if (name == parsed->first && entry.supervisor == nullptr) {
        // The built-in backend is no plugin: autoloading plugins off leaves
        // it as it is, and removing it leaves nothing to decode with.
        const absl::string_view way_out =
            name != kBuiltinBackend ? "; fix or remove the plugin, or set CODECVISOR_DEVICE_BACKEND_AUTOLOAD=0"
            : IsUnmappedOwnerRefusal(entry.failure) ? ""
            : absl::IsPermissionDenied(entry.failure)
                ? "; reinstall codecvisor where no other user can write (its own or root's folders)"
                : "; reinstall codecvisor";
        return absl::NotFoundError(
            absl::StrCat("device '", device, "': backend '", name, "' failed to load: ", entry.failure.message(), way_out));
      }
    }
    return NotInstalled("backend serves device", device);
  }
  const Entry& entry = backends_[dev->second];
  if (entry.supervisor == nullptr) {
    return absl::NotFoundError(absl::StrCat("device '", device, "': backend '", dev->second,
                                            "' failed to load: ", entry.failure.message()));
  }
  return entry.supervisor;
}

absl::StatusOr<std::unique_ptr<VideoDecoder>> Host::OpenDecoder(absl::string_view path, DecoderOptions options) {
  const std::string label(path);
  // O_NONBLOCK: opening a FIFO with no writer would otherwise block forever.
  ipc::UniqueFd fd(open(label.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return MaybeHostShortage(ipc::ErrnoStatus(absl::StrCat("open(", label, ")")));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ipc::ErrnoStatus(absl::StrCat("fstat(", label, ")"));
  if (!S_ISREG(st.st_mode)) {
    // The backend seeks and reads at offsets: a pipe, FIFO or folder cannot be decoded.
    return absl::InvalidArgumentError(absl::StrCat(label, ": not a regular file"));
  }
  // SECURITY: a file of the kernel's is no video, and some would hand the
  // backend this process's own state: /proc/self/mem (its memory, read at
  // any offset), /proc/self/environ. A dataset's symlink may name one.
  if (OnAKernelFileSystem(fd.get())) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": not a regular file (one of the kernel's, in /proc or /sys), never given to a backend"));
  }
  // A size of 0 is read to be sure: procfs, sysfs and some FUSE
  // filesystems give it for files with contents.
  char first = 0;
  if (st.st_size == 0 && pread(fd.get(), &first, 1, 0) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": the file is empty (0 bytes)"));
  }
  if (fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK) != 0) {
    return ipc::ErrnoStatus(absl::StrCat("fcntl(", label, ")"));
  }
  return OpenDescriptor(std::move(fd), label, std::move(options));
}

absl::StatusOr<std::unique_ptr<VideoDecoder>> Host::OpenDecoderFromBytes(absl::string_view bytes, std::string label,
                                                                         DecoderOptions options) {
  if (bytes.empty()) return absl::InvalidArgumentError(absl::StrCat(label, ": no bytes to decode"));
  // Sealed: neither side can change the bytes or their size from now on.
  absl::StatusOr<ipc::UniqueFd> fd = ipc::SealedMemfd("codecvisor-video", bytes, label);
  if (!fd.ok()) return MaybeHostShortage(fd.status());
  return OpenDescriptor(*std::move(fd), std::move(label), std::move(options));
}

absl::StatusOr<std::unique_ptr<VideoDecoder>> Host::OpenDescriptor(ipc::UniqueFd fd, std::string label,
                                                                   DecoderOptions options) {
  const bool defaulted = options.device.empty();
  if (defaulted) options.device = default_device_.name;
  if (options.arena_slots == 0 || options.arena_slots > ipc::kMaxSlots) {
    return absl::InvalidArgumentError(absl::StrCat("arena_slots must be in [1, ", ipc::kMaxSlots, "]"));
  }
  // A timeout of none would declare every backend hung at its first wait.
  if (options.request_timeout.count() <= 0 || options.open_timeout.count() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("request_timeout and open_timeout must be positive, not ",
                                                   options.request_timeout.count(), " ms and ",
                                                   options.open_timeout.count(), " ms"));
  }
  if (options.stream_index < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("stream_index must be a stream's index, or -1 for the best video stream, not ", options.stream_index));
  }
  options.request_timeout = std::min(options.request_timeout, kLongestTimeout);
  options.open_timeout = std::min(options.open_timeout, kLongestTimeout);
  if (options.native_formats.size() > ipc::kMaxNativeFormats) {
    return absl::InvalidArgumentError(
        absl::StrCat("native_formats names ", options.native_formats.size(), " formats; at most ", ipc::kMaxNativeFormats));
  }
  for (const std::string& f : options.native_formats) {
    // FFmpeg's pixel format names: "yuv420p", "nv12", "yuv420p10le".
    if (f.empty() || f.size() > 32 ||
        !std::all_of(f.begin(), f.end(), [](char c) { return absl::ascii_isalnum(c) || c == '_'; })) {
      return absl::InvalidArgumentError(absl::StrCat("native_formats: \"", absl::CEscape(f.substr(0, 40)),
                                                     "\" is not a pixel format name"));
    }
  }
  absl::StatusOr<std::shared_ptr<Supervisor>> supervisor = SupervisorFor(options.device);
  if (!supervisor.ok() && defaulted && !default_device_.source.empty()) {
    // A device the caller never named: say where it came from.
    return absl::Status(supervisor.status().code(),
                        absl::StrCat(default_device_.source, "='", default_device_.name,
                                     "', the default device: ", supervisor.status().message()));
  }
  if (!supervisor.ok()) return supervisor.status();
  return VideoDecoder::Open(*std::move(supervisor), std::move(fd), std::move(label), std::move(options));
}

std::vector<BackendStatus> Host::Backends() const {
  MutexLock lock(&mu_);
  std::vector<BackendStatus> out;
  for (const auto& [name, entry] : backends_) {
    BackendStatus s;
    s.name = name;
    s.devices = entry.devices;
    s.manifest_path = entry.manifest_path;
    if (entry.supervisor == nullptr) {
      s.state = StateName(BackendState::kFailed);
      s.diagnostic = std::string(entry.failure.message());
    } else {
      SupervisorStatus st = entry.supervisor->Status();
      s.state = StateName(st.state);
      s.diagnostic = st.diagnostic.empty() ? entry.note : st.diagnostic;
      s.pid = st.pid;
      s.uptime_seconds = std::chrono::duration<double>(st.uptime).count();
      s.sessions = st.sessions;
      s.parked = st.parked;
      s.restarts = st.restarts;
      s.warm_spare = st.spare_ready;
      s.spare_stopped = st.spare_stopped;
      s.sandbox = st.sandbox;
      s.hello = st.hello;
      s.control_call_in_vendor_code = st.control_call_in_vendor_code;
      if (st.last_exit.has_value()) {
        s.last_exit = st.last_exit->Describe();
        s.last_exit_advice = std::string(absl::StripPrefix(CrashAdvice(*st.last_exit, BacktraceEnabled()), "; "));
        s.last_exit_time = IsoTime(st.last_exit->when);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> Host::warnings() const {
  MutexLock lock(&mu_);
  return warnings_;
}

}  // namespace codecvisor::internal
