#include "backends/sdk/runner/control_server.h"

#include <pthread.h>

#include <cstdio>
#include <optional>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "backends/sdk/runner/abi_convert.h"
#include "backends/sdk/runner/cancel_check.h"
#include "backends/sdk/runner/crash_hints.h"
#include "backends/sdk/runner/header_times.h"
#include "backends/sdk/runner/runner_args.h"
#include "backends/sdk/runner/stream_list.h"
#include "backends/sdk/runner/thread_shortage.h"

namespace codecvisor::runner {
namespace {

using ipc::Clock;

constexpr auto kIdleWait = std::chrono::hours(24);
constexpr auto kDescriptorWait = std::chrono::seconds(10);

}  // namespace

absl::Status ControlServer::Reply(ipc::Response response) {
  return control_->Send(std::move(response), Clock::now() + kHostProgressTimeout);
}

ipc::Error ControlServer::NoDescriptorFree(const absl::Status& why) const {
  // Not a broken channel: the message was read, only its descriptors were
  // dropped. The open fails, the sessions already open go on, and the host
  // does not replace the backend for it.
  return ipc::Error{ipc::ErrorCode::kNoDescriptorFree,
                    absl::StrCat("backend '", name_,
                                 "' has no descriptor free for another session: close a decoder, or raise [sandbox] "
                                 "open_files in its manifest (",
                                 why.message(), ")")};
}

absl::Status ControlServer::HandleOpen(uint64_t id, const ipc::OpenSession& open) {
  // The descriptor was sent just before the request.
  absl::StatusOr<ipc::UniqueFd> fd = control_->ReceiveDescriptor(open.file_token, Clock::now() + kDescriptorWait);
  if (absl::IsResourceExhausted(fd.status())) return Reply({id, NoDescriptorFree(fd.status())});
  if (!fd.ok()) return fd.status();  // a protocol failure: the host will see us go
  VendorSession session;
  session.vtable = vtable_;
  session.close_watchdog = close_watchdog_;
  session.video_fd = *std::move(fd);
  session.hints = control_->header();
  session.pool = std::make_unique<FramePool>();
  session.cancel = std::make_unique<CancelCheck>();
  std::string native_formats;
  cv_open_options options = ToAbi(open, native_formats);
  options.frame_pool = session.pool->abi();
  options.cancel_check = session.cancel->abi();
  cv_error error{};
  // Everything from open_session to the layout is one vendor call for the
  // crash hints: a crash anywhere in it blames this open.
  std::optional<VendorCall> call(std::in_place, session.hints, open.file_token);
  cv_status st = vtable_->open_session(backend_, session.video_fd.get(), &options, &session.session, &error);
  if (st != CV_OK) {
    call.reset();
    const absl::Status why = VendorError(st, error);
    if (absl::IsResourceExhausted(why) && SaysNoThread(why.message())) {
      return Reply({id, ThreadRefused(name_, why.message())});
    }
    return Reply({id, ToWireError(why)});
  }

  // From here on `session` owns the vendor session; close it on every error.
  auto fail = [&](absl::Status why) {
    vtable_->close_session(session.session);
    call.reset();
    return Reply({id, ToWireError(why)});
  };
  cv_stream_metadata metadata{};
  if ((st = vtable_->get_metadata(session.session, &metadata, &error)) != CV_OK) {
    return fail(VendorError(st, error));
  }
  cv_frame_layout layout{};
  if ((st = vtable_->get_frame_layout(session.session, &layout, &error)) != CV_OK) {
    return fail(VendorError(st, error));
  }
  if (layout.num_planes == 0 || layout.num_planes > CV_MAX_PLANES || layout.size == 0) {
    return fail(absl::InternalError(absl::StrCat("backend '", name_, "' reported a frame layout with ",
                                                 layout.num_planes, " planes and ", layout.size, " bytes")));
  }
  absl::StatusOr<std::vector<ipc::StreamInfo>> streams = ListStreams(*vtable_, session.session, name_);
  if (!streams.ok()) return fail(streams.status());
  ipc::StreamMetadata described = FromAbi(metadata);
  absl::StatusOr<std::optional<ipc::HeaderTimes>> header_times = HeaderTimesOf(*vtable_, session.session, described);
  if (!header_times.ok()) return fail(header_times.status());
  absl::StatusOr<std::optional<ipc::Rational>> pixel_aspect_ratio =
      PixelAspectRatioOf(*vtable_, session.session, name_);
  if (!pixel_aspect_ratio.ok()) return fail(pixel_aspect_ratio.status());
  call.reset();
  session.opened.session_id = next_session_id_++;
  session.opened.metadata = std::move(described);
  session.opened.metadata.streams = *std::move(streams);
  session.opened.metadata.header_times = *header_times;
  session.opened.metadata.pixel_aspect_ratio = *pixel_aspect_ratio;
  session.opened.layout = FromAbi(layout);
  ipc::SessionOpened reply = session.opened;
  pending_.emplace(reply.session_id, std::move(session));
  return Reply({id, std::move(reply)});
}

absl::Status ControlServer::HandleAttach(uint64_t id, const ipc::AttachSession& attach) {
  absl::StatusOr<std::vector<ipc::UniqueFd>> fds =
      control_->ReceiveDescriptors(attach.token, 2, Clock::now() + kDescriptorWait);
  if (absl::IsResourceExhausted(fds.status())) {
    if (auto it = pending_.find(attach.session_id); it != pending_.end()) {
      vtable_->close_session(it->second.session);
      pending_.erase(it);
    }
    return Reply({id, NoDescriptorFree(fds.status())});
  }
  if (!fds.ok()) return fds.status();
  auto it = pending_.find(attach.session_id);
  if (it == pending_.end()) {
    return Reply({id, ipc::Error{ipc::ErrorCode::kInvalidArgument,
                                 absl::StrCat("no opened session ", attach.session_id, " to attach")}});
  }
  absl::StatusOr<std::unique_ptr<ipc::BackendChannel>> channel =
      ipc::BackendChannel::Attach({std::move((*fds)[0]), std::move((*fds)[1])});
  if (!channel.ok()) {
    vtable_->close_session(it->second.session);
    pending_.erase(it);
    return Reply({id, ToWireError(channel.status())});
  }
  if (hangups_ != nullptr) (*channel)->WatchHangups(hangups_);
  it->second.pool->Attach(&(*channel)->arena());
  auto server = std::make_unique<SessionServer>(std::move(it->second), *std::move(channel));
  pending_.erase(it);
  std::thread thread;
  try {
    thread = std::thread([raw = server.get()] {
      pthread_setname_np(pthread_self(), kSessionThreadName);
      std::unique_ptr<SessionServer> owned(raw);
      owned->Run();
    });
  } catch (const std::system_error& e) {
    // Out of threads (RLIMIT_NPROC): refuse this session, keep the others.
    const std::string why = absl::StrCat("cannot start a thread for the session: ", e.what());
    if (e.code() != std::errc::resource_unavailable_try_again) {
      return Reply({id, ipc::Error{ipc::ErrorCode::kResourceExhausted, why}});
    }
    return Reply({id, ThreadRefused(name_, why)});
  }
  server.release();  // the thread owns it now
  thread.detach();
  return Reply({id, ipc::Attached{}});
}

int ControlServer::Run() {
  for (;;) {
    absl::StatusOr<ipc::Request> request = control_->Receive(Clock::now() + kIdleWait);
    if (!request.ok()) {
      if (absl::IsDeadlineExceeded(request.status())) continue;
      if (!absl::IsUnavailable(request.status())) {
        std::fprintf(stderr, "codecvisor-backend '%s': control channel failed: %s\n", name_.c_str(),
                     request.status().ToString().c_str());
      }
      return ExitCode(load_status_.ok() ? RunnerExit::kHostHungUp : RunnerExit::kLoadFailed);  // the host is gone
    }
    const uint64_t id = request->id;
    absl::Status handled;
    if (std::holds_alternative<ipc::Hello>(request->body)) {
      const auto& hello = std::get<ipc::Hello>(request->body);
      if (!load_status_.ok()) {
        // Say exactly why, then leave: a backend that cannot load serves nothing.
        (void)Reply({id, ToWireError(load_status_)});
        return ExitCode(RunnerExit::kLoadFailed);
      }
      if (hello.protocol_version != ipc::kProtocolVersion) {
        (void)Reply({id, ipc::Error{ipc::ErrorCode::kProtocolMismatch,
                                    absl::StrCat("host speaks protocol ", hello.protocol_version,
                                                 ", runner speaks ", ipc::kProtocolVersion)}});
        return ExitCode(RunnerExit::kLoadFailed);
      }
      ipc::HelloReply reply = sandbox_;
      reply.backend_name = name_;
      reply.backend_version = vtable_->version ? vtable_->version : "";
      reply.devices = {name_};
      reply.capabilities.exact_cpu_output = vtable_->exact_cpu_output != 0;
      reply.capabilities.psnr_threshold_db = vtable_->psnr_threshold_db;
      reply.capabilities.seek_modes = {ipc::SeekMode::kExact, ipc::SeekMode::kApproximate};
      reply.capabilities.output_formats = {ipc::OutputFormat::kRgb24, ipc::OutputFormat::kRgb24Planar,
                                           ipc::OutputFormat::kNative};
      handled = Reply({id, std::move(reply)});
    } else if (!load_status_.ok()) {
      handled = Reply({id, ToWireError(load_status_)});
    } else if (auto* open = std::get_if<ipc::OpenSession>(&request->body)) {
      handled = HandleOpen(id, *open);
    } else if (auto* attach = std::get_if<ipc::AttachSession>(&request->body)) {
      handled = HandleAttach(id, *attach);
    } else if (auto* close = std::get_if<ipc::Close>(&request->body)) {
      if (auto it = pending_.find(close->session_id); it != pending_.end()) {
        VendorCall call(control_->header());
        vtable_->close_session(it->second.session);
        pending_.erase(it);
      }
      handled = Reply({id, ipc::Closed{}});
    } else if (auto* ping = std::get_if<ipc::Ping>(&request->body)) {
      handled = Reply({id, ipc::Pong{ping->nonce}});
    } else {
      handled = Reply({id, ipc::Error{ipc::ErrorCode::kInvalidArgument,
                                      absl::StrCat("a ", ipc::KindName(*request),
                                                   " request is not valid on the control channel")}});
    }
    if (!handled.ok()) {
      // The control channel failed: nothing more can be served.
      std::fprintf(stderr, "codecvisor-backend '%s': %s request failed: %s\n", name_.c_str(),
                   ipc::KindName(*request), handled.ToString().c_str());
      return ExitCode(RunnerExit::kChannelBroken);
    }
  }
}

}  // namespace codecvisor::runner
