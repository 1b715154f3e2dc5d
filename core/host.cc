#include "core/host.h"

#include <fcntl.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace codecvisor {

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

Host::Host(HostOptions options, InstallLayout layout)
    : options_(std::move(options)),
      layout_(std::move(layout)),
      launcher_(std::make_shared<SystemProcessLauncher>()) {}

absl::StatusOr<std::unique_ptr<Host>> Host::Create(HostOptions options) {
  InstallLayout layout;
  if (options.layout.has_value()) {
    layout = *options.layout;
  } else {
    absl::StatusOr<InstallLayout> found = InstallLayout::Discover();
    if (!found.ok()) return found.status();
    layout = *found;
  }
  std::unique_ptr<Host> host(new Host(std::move(options), layout));
  absl::StatusOr<BackendManifest> cpu = LoadManifest(layout.builtin_dir + "/cpu.toml");
  if (!cpu.ok()) return cpu.status();  // the built-in backend is part of the install
  MutexLock lock(&host->mu_);
  if (absl::Status s = host->Register(*cpu); !s.ok()) return s;
  return host;
}

Host::~Host() {
  MutexLock lock(&mu_);
  for (auto& [name, entry] : backends_) {
    if (entry.process != nullptr) entry.process->Shutdown();
  }
}

absl::Status Host::Register(const BackendManifest& manifest) {
  if (backends_.count(manifest.name) != 0) {
    return absl::AlreadyExistsError(absl::StrCat("backend '", manifest.name, "' is already registered from ",
                                                 backends_[manifest.name].manifest.path));
  }
  for (const std::string& device : manifest.devices) devices_.emplace(device, manifest.name);
  backends_[manifest.name].manifest = manifest;
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<BackendProcess>> Host::BackendFor(absl::string_view device) {
  absl::StatusOr<std::pair<std::string, int>> parsed = ParseDevice(device);
  if (!parsed.ok()) return parsed.status();
  MutexLock lock(&mu_);
  auto dev = devices_.find(parsed->first);
  if (dev == devices_.end()) {
    return absl::NotFoundError(absl::StrCat("no backend serves device '", device,
                                            "'; `codecvisor backends` lists the installed ones"));
  }
  Entry& entry = backends_[dev->second];
  if (entry.process != nullptr) return entry.process;
  absl::StatusOr<std::unique_ptr<BackendProcess>> started = BackendProcess::Start(
      entry.manifest, layout_, launcher_, ipc::Clock::now() + options_.spawn_timeout);
  if (!started.ok()) {
    entry.failure = started.status();
    return started.status();
  }
  entry.failure = absl::OkStatus();
  entry.process = *std::move(started);
  return entry.process;
}

absl::StatusOr<std::unique_ptr<VideoDecoder>> Host::OpenDecoder(absl::string_view path, DecoderOptions options) {
  if (options.device.empty()) options.device = options_.default_device;
  if (options.arena_slots == 0 || options.arena_slots > ipc::kMaxSlots) {
    return absl::InvalidArgumentError(absl::StrCat("arena_slots must be in [1, ", ipc::kMaxSlots, "]"));
  }
  const std::string label(path);
  ipc::UniqueFd fd(open(label.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ipc::ErrnoStatus(absl::StrCat("open(", label, ")"));
  absl::StatusOr<std::shared_ptr<BackendProcess>> backend = BackendFor(options.device);
  if (!backend.ok()) return backend.status();
  ipc::OpenSession open;
  open.file_label = label;
  open.stream_index = options.stream_index;
  open.seek_mode = options.seek_mode;
  open.output_format = options.output_format;
  open.decoder_threads = options.decoder_threads;
  open.device = options.device;
  open.output_width = options.output_width;
  open.output_height = options.output_height;
  absl::StatusOr<OpenedSession> session =
      (*backend)->OpenSession(fd.get(), open, options.arena_slots, ipc::Clock::now() + options.open_timeout);
  if (!session.ok()) {
    return absl::Status(session.status().code(),
                        absl::StrCat(label, " (backend '", (*backend)->manifest().name, "'): ",
                                     session.status().message()));
  }
  return std::make_unique<VideoDecoder>(*std::move(backend), *std::move(session), std::move(fd), label,
                                        std::move(options));
}

absl::Status Host::LoadBackend(absl::string_view manifest_path) {
  absl::StatusOr<BackendManifest> manifest = LoadManifest(manifest_path);
  if (!manifest.ok()) return manifest.status();
  MutexLock lock(&mu_);
  return Register(*manifest);
}

std::vector<BackendStatus> Host::Backends() const {
  MutexLock lock(&mu_);
  std::vector<BackendStatus> out;
  for (const auto& [name, entry] : backends_) {
    BackendStatus s;
    s.name = name;
    s.devices = entry.manifest.devices;
    s.manifest_path = entry.manifest.path;
    if (entry.process != nullptr) {
      s.state = "ready";
      s.pid = entry.process->pid();
    } else if (!entry.failure.ok()) {
      s.state = "failed";
      s.diagnostic = std::string(entry.failure.message());
    } else {
      s.state = "discovered";
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace codecvisor
