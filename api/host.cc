#include "codecvisor/host.h"

#include <unistd.h>

#include <string>
#include <utility>

#include "api/convert.h"
#include "api/inherited.h"
#include "api/video_decoder_impl.h"
#include "core/backend_history.h"
#include "core/discovery.h"
#include "core/host.h"
#include "core/install_layout.h"

namespace codecvisor {

struct __attribute__((visibility("hidden"))) Host::Impl {
  std::unique_ptr<internal::Host> host;
  pid_t owner = getpid();  // the process that made it; a forked child leaks it
};

namespace {

// The error of a call on a Host inherited across fork().
Status Forked(pid_t owner) {
  return Status(StatusCode::kFailedPrecondition,
                "this Host was made in process " + std::to_string(owner) +
                    "; a forked child must create a Host of its own (it shares the parent's backends' channels)");
}

}  // namespace

Host::Host(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

// In a forked child the Host is the parent's: its threads are not there to
// join and its backends are the parent's to stop, so it is left as it is.
Host::~Host() {
  if (impl_ != nullptr && impl_->owner != getpid()) api::LeaveInherited(impl_);
}

std::string Host::DefaultHistoryFile() { return DefaultBackendHistoryPath(); }

Result<std::unique_ptr<Host>> Host::Create(HostOptions options) {
  internal::HostOptions o;
  o.default_device = options.default_device;
  o.eager_spawn = options.eager_spawn;
  o.supervision.warm_spare = options.warm_spare;
  o.history_file = options.history_file;
  if (options.backend_path.has_value() || options.autoload.has_value()) {
    absl::StatusOr<InstallLayout> layout = InstallLayout::Discover();
    if (!layout.ok()) return api::FromAbsl(layout.status());
    DiscoveryOptions discovery = DiscoveryOptionsFromEnvironment(layout->builtin_dir);
    if (options.backend_path.has_value()) discovery.search_path = *options.backend_path;
    if (options.autoload.has_value()) {
      discovery.autoload = *options.autoload;
      discovery.autoload_setting.clear();  // the options decide, not the environment
    }
    o.layout = *std::move(layout);
    o.discovery = std::move(discovery);
  }
  absl::StatusOr<std::unique_ptr<internal::Host>> host = internal::Host::Create(std::move(o));
  if (!host.ok()) return api::FromAbsl(host.status());
  auto impl = std::make_unique<Impl>();
  impl->host = *std::move(host);
  return std::unique_ptr<Host>(new Host(std::move(impl)));
}

Result<std::unique_ptr<VideoDecoder>> Host::OpenDecoder(const std::string& path, DecoderOptions options) {
  if (impl_->owner != getpid()) return Forked(impl_->owner);
  if (path.find('\0') != std::string::npos) {
    // open(2) would stop at it and open another file.
    return Status(StatusCode::kInvalidArgument, "the path has an embedded NUL byte");
  }
  if (Status s = api::CheckEnums(options); !s.ok()) return s;
  return api::DecoderAccess::Wrap(impl_->host->OpenDecoder(path, api::ToInternal(options)));
}

Result<std::unique_ptr<VideoDecoder>> Host::OpenDecoderFromBytes(std::string_view bytes, const std::string& label,
                                                                 DecoderOptions options) {
  if (impl_->owner != getpid()) return Forked(impl_->owner);
  if (Status s = api::CheckEnums(options); !s.ok()) return s;
  return api::DecoderAccess::Wrap(impl_->host->OpenDecoderFromBytes(absl::string_view(bytes.data(), bytes.size()), label, api::ToInternal(options)));
}

Status Host::LoadBackend(const std::string& manifest_path) {
  if (impl_->owner != getpid()) return Forked(impl_->owner);
  return api::FromAbsl(impl_->host->LoadBackend(manifest_path));
}

Status Host::ResetBackend(const std::string& name) {
  if (impl_->owner != getpid()) return Forked(impl_->owner);
  return api::FromAbsl(impl_->host->ResetBackend(name));
}

Status Host::StartBackend(const std::string& name, std::chrono::milliseconds timeout) {
  if (impl_->owner != getpid()) return Forked(impl_->owner);
  return api::FromAbsl(impl_->host->StartBackend(name, timeout));
}

// In a forked child the parent's threads may have held the Host's locks at
// the fork, and never release them there: nothing behind them is read.
std::vector<BackendInfo> Host::Backends() const {
  if (impl_->owner != getpid()) return {};
  std::vector<BackendInfo> out;
  for (const internal::BackendStatus& s : impl_->host->Backends()) out.push_back(api::FromInternal(s));
  return out;
}

std::vector<std::string> Host::warnings() const {
  if (impl_->owner != getpid()) return {};
  return impl_->host->warnings();
}
const std::string& Host::default_device() const { return impl_->host->default_device(); }

}  // namespace codecvisor
