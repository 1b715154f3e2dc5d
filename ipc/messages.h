// File: ipc/messages.h
//
// The protocol (ipc/protocol.capnp) as plain C++ values, and the only code
// that runs Cap'n Proto on bytes from the other process. Decode*() parses
// with ReaderOptions limits inside one try block and copies every field out,
// so no kj::Exception and no lazy read of peer memory escapes this file.
// All functions are thread-safe (no shared state).

#ifndef CODECVISOR_IPC_MESSAGES_H_
#define CODECVISOR_IPC_MESSAGES_H_

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "capnp/common.h"
#include "kj/array.h"

namespace codecvisor::ipc {

inline constexpr uint32_t kProtocolVersion = 2;

// Limits on what a decoded message may contain, beyond the byte limit of the
// ring. Each stops a peer from making the host allocate or iterate without
// bound: a text longer than this is rejected, not truncated.
inline constexpr size_t kMaxTextBytes = 16 << 10;
inline constexpr size_t kMaxDevices = 64;
inline constexpr size_t kMaxNativeFormats = 16;  // OpenSession::native_formats
inline constexpr size_t kMaxFramesPerBatch = 256;
inline constexpr size_t kMaxPlanes = 4;
inline constexpr size_t kMaxRequestEntries = 100'000;  // indices or times in one request
inline constexpr size_t kMaxStreams = 1024;  // StreamMetadata::streams; also the highest index + 1
// At most this many frames a second start in a time range (PtsRange),
// whatever a backend claims: more is a backend that never ends its answer
// (frames a nanosecond apart, or all at one time), and memory would fill.
// High-speed cameras record 1,000-10,000 frames a second. The runner stops
// resolving a range there, and the host checks the frames it gets against
// it (core/frame_check.h).
inline constexpr double kMaxFramesPerSecond = 10'000;
// Frames beyond kMaxFramesPerSecond a range may hold (its first frame
// starts before it), and the most frames in a row that may share a time.
inline constexpr uint64_t kTimeRangeSlack = 64;
// The largest time a stream or a frame may have, either way, in seconds
// (over 300 years), and a frame's longest duration: spans (end - begin,
// pts + duration) stay finite. The host refuses more as a forgery
// (core/session_opened_check.h, core/frame_check.h); the runner answers a
// frame the vendor timed beyond it (a file's own nonsense) as the file's
// error first.
inline constexpr double kMaxStreamSeconds = 1e10;
// Whether a frame may have these times: finite, the pts within
// kMaxStreamSeconds either way, the duration from 0 to it.
inline bool FrameTimesPossible(double pts_seconds, double duration_seconds) {
  return std::isfinite(pts_seconds) && std::isfinite(duration_seconds) && duration_seconds >= 0 &&
         std::abs(pts_seconds) <= kMaxStreamSeconds && duration_seconds <= kMaxStreamSeconds;
}
// Cap'n Proto traversal limit: a 1 MiB message is 128 Ki words; twice that
// allows for the pointer overhead and nothing like an amplification attack.
inline constexpr uint64_t kTraversalLimitWords = 256 << 10;
inline constexpr int kNestingLimit = 16;

enum class SeekMode { kExact = 0, kApproximate = 1 };
enum class OutputFormat { kRgb24 = 0, kRgb24Planar = 1, kNative = 2 };
enum class ErrorCode {
  kUnknown = 0,
  kInvalidArgument = 1,
  kOutOfRange = 2,
  kNotFound = 3,
  kCorruptData = 4,
  kUnsupported = 5,
  kResourceExhausted = 6,
  kInternal = 7,
  kProtocolMismatch = 8,
  kNativeChanged = 9,      // protocol.capnp: reopen for RGB and ask again
  kNoDescriptorFree = 10,  // protocol.capnp: the open fails, the backend goes on
  kNoThreadFree = 11,      // protocol.capnp: the user's limit; the open fails, the backend goes on
};

struct Hello {
  uint32_t protocol_version = kProtocolVersion;
  std::string host_version;
  bool operator==(const Hello&) const = default;
};

struct Capabilities {
  bool exact_cpu_output = false;
  double psnr_threshold_db = 0;
  std::vector<SeekMode> seek_modes;
  std::vector<OutputFormat> output_formats;
  uint32_t max_sessions = 0;
  bool operator==(const Capabilities&) const = default;
};

struct HelloReply {
  uint32_t protocol_version = kProtocolVersion;
  std::string backend_name;
  std::string backend_version;
  std::vector<std::string> devices;
  Capabilities capabilities;
  uint32_t sandbox_landlock_abi = 0;  // 0: Landlock not applied
  bool sandbox_seccomp = false;
  bool operator==(const HelloReply&) const = default;
};

struct OpenSession {
  uint64_t file_token = 0;
  std::string file_label;
  int32_t stream_index = -1;
  SeekMode seek_mode = SeekMode::kExact;
  OutputFormat output_format = OutputFormat::kRgb24;
  uint32_t decoder_threads = 0;
  std::string device;
  uint32_t output_width = 0;
  uint32_t output_height = 0;
  // Native pixel formats the host converts itself (protocol.capnp); at most
  // kMaxNativeFormats.
  std::vector<std::string> native_formats;
  bool operator==(const OpenSession&) const = default;
};

enum class StreamType { kUnknown = 0, kVideo = 1, kAudio = 2, kSubtitle = 3, kData = 4, kAttachment = 5 };

// One stream of the file, of any type (protocol.capnp's StreamInfo).
struct StreamInfo {
  int32_t index = 0;
  StreamType type = StreamType::kUnknown;
  std::string codec;
  uint32_t width = 0;  // video only
  uint32_t height = 0;
  uint32_t sample_rate = 0;  // audio only
  uint32_t channels = 0;
  bool operator==(const StreamInfo&) const = default;
};

struct Rational {
  int64_t num = 0;
  int64_t den = 1;
  bool operator==(const Rational&) const = default;
};

// What the container's header says of a stream's times (0: it does not say).
struct HeaderTimes {
  double duration_seconds = 0;
  double begin_stream_seconds = 0;
  bool operator==(const HeaderTimes&) const = default;
};

struct StreamMetadata {
  int32_t stream_index = -1;
  std::string codec;
  uint32_t width = 0;
  uint32_t height = 0;
  std::string pixel_format;
  int64_t num_frames_from_header = -1;
  int64_t num_frames_from_scan = -1;
  double average_fps = 0;
  double duration_seconds = 0;
  double begin_stream_seconds = 0;
  double end_stream_seconds = 0;
  int64_t bit_rate = 0;
  double rotation_degrees = 0;
  std::string color_space;
  std::string color_range;
  std::string color_primaries;
  std::string color_transfer;
  Rational time_base;
  uint32_t num_video_streams = 0;
  // Every stream of the file; empty when the backend does not list them.
  std::vector<StreamInfo> streams;
  // The header's times (in exact mode the times above are the scan's); absent when the backend
  // does not say.
  std::optional<HeaderTimes> header_times;
  // A pixel's width over its height; absent where the file does not say.
  std::optional<Rational> pixel_aspect_ratio;
  bool operator==(const StreamMetadata&) const = default;

  // The count from the scan, else the header; -1 when neither knows it.
  int64_t known_frame_count() const {
    return num_frames_from_scan >= 0 ? num_frames_from_scan : num_frames_from_header;
  }
  // known_frame_count(), else (as torchcodec does) round(duration x average
  // rate); -1 when none of them is known. Only places negative indices:
  // past an estimate, the backend finds the end.
  int64_t estimated_frame_count() const {
    if (const int64_t known = known_frame_count(); known >= 0) return known;
    if (duration_seconds > 0 && average_fps > 0 && duration_seconds * average_fps < 9e18) {
      return std::llround(duration_seconds * average_fps);
    }
    return -1;
  }
};

struct MetadataRequest {
  bool operator==(const MetadataRequest&) const = default;
};
struct IndexList {
  std::vector<int64_t> indices;
  bool operator==(const IndexList&) const = default;
};
struct IndexRange {
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  bool operator==(const IndexRange&) const = default;
};
struct PtsList {
  std::vector<double> seconds;
  bool operator==(const PtsList&) const = default;
};
struct PtsRange {
  double start_seconds = 0;
  double stop_seconds = 0;
  bool operator==(const PtsRange&) const = default;
};
struct FrameRequest {
  std::variant<IndexList, IndexRange, PtsList, PtsRange> selection;
  bool operator==(const FrameRequest&) const = default;
};

struct Plane {
  uint64_t offset = 0;
  uint32_t stride = 0;
  uint32_t rows = 0;
  bool operator==(const Plane&) const = default;
};

struct FrameLayout {
  uint32_t width = 0;
  uint32_t height = 0;
  OutputFormat format = OutputFormat::kRgb24;
  std::string pixel_format;
  std::vector<Plane> planes;
  uint64_t size = 0;
  bool operator==(const FrameLayout&) const = default;
};

struct FrameRef {
  uint32_t slot = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t width = 0;
  uint32_t height = 0;
  OutputFormat format = OutputFormat::kRgb24;
  std::string pixel_format;
  std::vector<Plane> planes;
  double pts_seconds = 0;
  double duration_seconds = 0;
  int64_t pts = 0;
  bool key_frame = false;
  int64_t index = 0;
  uint32_t request_position = 0;
  bool operator==(const FrameRef&) const = default;
};

struct FrameBatch {
  std::vector<FrameRef> frames;
  bool final = false;
  bool operator==(const FrameBatch&) const = default;
};

// The message the runner sends for a vendor error that came without one
// (the conformance suite fails a backend whose errors say only this).
inline constexpr char kVendorErrorWithoutMessage[] = "backend reported an error without a message";

struct Error {
  ErrorCode code = ErrorCode::kUnknown;
  std::string message;
  bool operator==(const Error&) const = default;
};

struct Ping {
  uint64_t nonce = 0;
  bool operator==(const Ping&) const = default;
};
struct Pong {
  uint64_t nonce = 0;
  bool operator==(const Pong&) const = default;
};
struct Close {
  uint64_t session_id = 0;  // on a session channel: ignored
  bool operator==(const Close&) const = default;
};
// Names, by the envelope's id, the frames request whose answer should end
// (protocol.capnp).
struct Cancel {
  bool operator==(const Cancel&) const = default;
};
struct AttachSession {
  uint64_t session_id = 0;
  uint64_t token = 0;
  bool operator==(const AttachSession&) const = default;
};
struct Attached {
  bool operator==(const Attached&) const = default;
};
struct Closed {
  bool operator==(const Closed&) const = default;
};
struct SessionOpened {
  uint64_t session_id = 0;
  StreamMetadata metadata;
  FrameLayout layout;
  bool operator==(const SessionOpened&) const = default;
};

struct Request {
  uint64_t id = 0;
  std::variant<Hello, OpenSession, MetadataRequest, FrameRequest, Ping, Close, AttachSession, Cancel> body;
  bool operator==(const Request&) const = default;
};

struct Response {
  uint64_t id = 0;
  std::variant<HelloReply, SessionOpened, StreamMetadata, FrameBatch, Error, Pong, Closed, Attached>
      body;
  bool operator==(const Response&) const = default;
};

// Serialises to one flat Cap'n Proto array. Fails (kInvalidArgument) only if
// a value breaks a limit above, so that we never send what the peer's
// decoder would reject.
[[nodiscard]] absl::StatusOr<kj::Array<capnp::word>> EncodeRequest(const Request& request);
[[nodiscard]] absl::StatusOr<kj::Array<capnp::word>> EncodeResponse(const Response& response);

// Parses a message copied out of shared memory. `words` must be private to
// the caller (never the shared region itself). Any malformed input, unknown
// union member or enum value, or broken limit is kDataLoss with a reason.
[[nodiscard]] absl::StatusOr<Request> DecodeRequest(kj::ArrayPtr<const capnp::word> words);
[[nodiscard]] absl::StatusOr<Response> DecodeResponse(kj::ArrayPtr<const capnp::word> words);

// Short human-readable name of a message kind, for errors and logs.
const char* KindName(const Request& request);
const char* KindName(const Response& response);
// "rgb24", "rgb24-planar" or "native" ("unknown" for a value outside the enum).
const char* OutputFormatName(OutputFormat format);

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_MESSAGES_H_
