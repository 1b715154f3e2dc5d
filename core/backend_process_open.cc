// BackendProcess::OpenSession: a session opened on the control channel,
// its frame pool sized, its channel made and attached. The rest of the
// process's life (start, handshake, calls, shutdown) is in
// backend_process.cc.

#include <fcntl.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/backend_output.h"
#include "core/backend_process.h"
#include "core/environment_warnings.h"
#include "core/session_opened_check.h"
#include "core/stream_list_check.h"
#include "core/supervisor_env.h"

namespace codecvisor {
namespace {

// The frame pool (ipc/README.md): slots a backend may borrow for its
// decoder's own pictures and lend as frames without a copy. Only sessions
// asked for RGB whose frames come native (the host converts them) get one:
// an RGB frame is converted into its slot anyway, and a caller that asked
// for native frames gets them as they are laid out. 16 holds an H.264
// decoder's references, its reordering delay and a picture for each of a
// few frame threads; a decoder that keeps more gets its other pictures from
// its own memory, and those frames are copied. At most 256 MiB of pool per
// session (a 4K frame pool is then 16 slots, an 8K one 5): it costs the
// runner's address space even where the decoder never writes it.
// CODECVISOR_FRAME_POOL_SLOTS sets the count (0 turns decoding in place
// off; at most kMaxFramePoolSlots), read at every open
// (core/environment_warnings.h).
constexpr uint64_t kMaxFramePoolBytes = uint64_t{256} << 20;

uint32_t WantedFramePoolSlots() { return ReadFramePoolSlots(std::getenv("CODECVISOR_FRAME_POOL_SLOTS")).slots; }

uint32_t FramePoolSlots(ipc::OutputFormat asked, const ipc::FrameLayout& layout, uint32_t copy_slots,
                        uint64_t slot_bytes) {
  if (asked == ipc::OutputFormat::kNative || layout.format != ipc::OutputFormat::kNative ||
      copy_slots >= ipc::kMaxSlots || slot_bytes == 0) {
    return 0;
  }
  const uint64_t fit = ipc::kMaxArenaBytes / slot_bytes;  // slots the arena's limit allows
  if (fit <= copy_slots) return 0;
  return static_cast<uint32_t>(std::min<uint64_t>(
      {WantedFramePoolSlots(), ipc::kMaxSlots - copy_slots, fit - copy_slots, kMaxFramePoolBytes / slot_bytes}));
}

}  // namespace

absl::StatusOr<OpenedSession> BackendProcess::OpenSession(int video_fd, ipc::OpenSession options, uint32_t slots,
                                                          ipc::Deadline deadline, bool* channel_failure,
                                                          uint64_t* file_token) {
  // Everything but an Error reply from the backend is a channel failure.
  *channel_failure = true;
  *file_token = 0;
  const ipc::Clock::time_point asked = ipc::Clock::now();
  MutexLock lock(&mu_);
  // The backend opens files one at a time, on its main thread, and this
  // lock queues them: the time spent behind other decoders' opens is not
  // this one's (a slow but sound open must not fail the ones queued after
  // it). The queue is bounded, each open before it by its own deadline.
  deadline += ipc::Clock::now() - asked;
  if (control_ == nullptr) return absl::UnavailableError("backend was shut down");
  options.file_token = next_id_;
  *file_token = options.file_token;
  if (absl::Status s = control_->SendDescriptor(options.file_token, video_fd, deadline); !s.ok()) return s;
  absl::StatusOr<ipc::Response> reply = Call({0, options}, deadline, channel_failure);
  if (!reply.ok()) return reply.status();
  auto* opened = std::get_if<ipc::SessionOpened>(&reply->body);
  if (opened == nullptr) {
    return absl::DataLossError(absl::StrCat("backend answered open with ", ipc::KindName(*reply)));
  }
  // A protocol violation, as a malformed message is: the backend is replaced.
  if (absl::Status s = CheckStreamList(opened->metadata, options.stream_index); !s.ok()) return s;
  if (absl::Status s = CheckSessionLayout(*opened, options); !s.ok()) return s;
  // An open the host refuses on its own account: the backend's session is
  // closed, and the backend is not to blame.
  auto refuse_session = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    bool ignored;
    (void)Call({0, ipc::Close{opened->session_id}}, deadline, &ignored);
    *channel_failure = false;
  };
  // Names the plugin wrote, which `info`, Python's metadata and errors
  // show: no terminal control in them.
  ipc::StreamMetadata& m = opened->metadata;
  for (std::string* name : {&m.codec, &m.pixel_format, &m.color_space, &m.color_range, &m.color_primaries,
                            &m.color_transfer}) {
    *name = ReplaceUnsafeForTerminal(*name);
  }
  for (ipc::StreamInfo& stream : m.streams) stream.codec = ReplaceUnsafeForTerminal(stream.codec);
  if (absl::Status s = AcceptStreamNumbers(&opened->metadata); !s.ok()) {
    refuse_session();  // perhaps the file's own header: a VideoError, the backend kept
    return s;
  }
  ipc::Geometry geometry;
  geometry.slot_bytes = ipc::Geometry::SlotBytesFor(opened->layout.size);
  geometry.pool_slots = FramePoolSlots(options.output_format, opened->layout, slots, geometry.slot_bytes);
  geometry.slot_count = slots + geometry.pool_slots;
  auto created = ipc::HostChannel::Create(geometry, session_regions_.get());
  if (!created.ok()) {
    refuse_session();  // our own resource problem, not the backend's
    if (absl::IsResourceExhausted(created.status())) return HostShortage(created.status());  // not the video's size
    // A frame no arena holds even once is the video's size, not the
    // caller's arena_slots (whose excess stays INVALID_ARGUMENT).
    if (absl::IsInvalidArgument(created.status()) && geometry.slot_bytes > ipc::kMaxArenaBytes / 2) {
      return absl::UnimplementedError(absl::StrCat("frames of ", opened->layout.width, "x", opened->layout.height, " (",
                                                   opened->layout.size,
                                                   " bytes) are larger than a session's "
                                                   "shared memory holds: ",
                                                   created.status().message()));
    }
    return created.status();
  }
  const uint64_t token = next_id_;
  const int fds[] = {created->second.memfd.get(), created->second.socket.get()};
  if (absl::Status s = control_->SendDescriptors(token, fds, deadline); !s.ok()) return s;
  absl::StatusOr<ipc::Response> attached =
      Call({0, ipc::AttachSession{opened->session_id, token}}, deadline, channel_failure);
  if (!attached.ok()) return attached.status();
  if (!std::holds_alternative<ipc::Attached>(attached->body)) {
    return absl::DataLossError(absl::StrCat("backend answered attach with ", ipc::KindName(*attached)));
  }
  int pidfd = fcntl(child_.pidfd.get(), F_DUPFD_CLOEXEC, 0);
  if (pidfd < 0) {
    // The session ends as its channel, destroyed here, hangs up; the
    // backend is not to blame.
    *channel_failure = false;
    return MaybeHostShortage(ipc::ErrnoStatus("dup(pidfd)"));
  }
  created->first->WatchProcess(ipc::UniqueFd(pidfd));
  return OpenedSession{std::shared_ptr<ipc::HostChannel>(std::move(created->first)), *opened};
}

}  // namespace codecvisor
