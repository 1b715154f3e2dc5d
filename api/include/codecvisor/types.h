// File: codecvisor/types.h
//
// The value types of codecvisor's C++ API: how frames are laid out, which
// frames a request selects, what a stream is, and how a decoder is opened.
// Plain structs and enums, copyable, with no behaviour beyond validation.

#ifndef CODECVISOR_TYPES_H_
#define CODECVISOR_TYPES_H_

#if __cplusplus <= 201703L  // GCC 10 says 201709 for -std=c++20
#error "codecvisor's headers need C++20 or later: compile with -std=c++20 (or a later standard)"
#endif

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace codecvisor {

// How frame indices map to positions in the file. kExact scans the file
// once at open and seeks by its index; kApproximate trusts the header's
// frame count and rate (faster to open, may be off on variable-rate files).
enum class SeekMode { kExact, kApproximate };

// The pixels a decoder returns. kRgb24 is interleaved HWC (torchcodec's
// "NHWC"), kRgb24Planar three planes R, G, B (CHW, "NCHW"); kNative is the
// stream's own pixel format, one plane per component.
enum class OutputFormat { kRgb24, kRgb24Planar, kNative };

const char* SeekModeName(SeekMode mode);          // "exact", "approximate" ("unknown" for another value)
const char* OutputFormatName(OutputFormat format);  // "rgb24", "rgb24-planar", "native" (or "unknown")

// The type of a stream of a file.
enum class StreamType { kUnknown, kVideo, kAudio, kSubtitle, kData, kAttachment };

const char* StreamTypeName(StreamType type);  // "unknown", "video", "audio", "subtitle", "data", "attachment"

// One stream of a file, of any type, as the container describes it.
struct StreamInfo {
  int32_t index = 0;            // the container's stream index (what DecoderOptions::stream_index takes)
  StreamType type = StreamType::kUnknown;
  std::string codec;            // "h264", "aac", "subrip", ...; empty if unknown
  uint32_t width = 0;           // video: as stored, before any display rotation; else 0
  uint32_t height = 0;
  uint32_t sample_rate = 0;     // audio: in Hz, 0 if unknown; else 0
  uint32_t channels = 0;        // audio: 0 if unknown; else 0
  bool operator==(const StreamInfo&) const = default;
};

struct Rational {
  int64_t num = 0;
  int64_t den = 1;
  bool operator==(const Rational&) const = default;
};

// What the container's header says of a stream's times; 0 where it does not say.
struct HeaderTimes {
  double duration_seconds = 0;
  double begin_stream_seconds = 0;
  bool operator==(const HeaderTimes&) const = default;
};

// One video stream, as the backend reports it. Counts and times that the
// file does not say are -1 (counts) or 0 (times, rates).
struct StreamMetadata {
  int32_t stream_index = -1;
  std::string codec;            // "h264", "vp9", ...
  uint32_t width = 0;           // as output: after the display rotation, if applied
  uint32_t height = 0;
  std::string pixel_format;     // "yuv420p", ...
  int64_t num_frames_from_header = -1;
  int64_t num_frames_from_scan = -1;  // exact mode only
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
  // Every stream of the file (video, audio, subtitles, ...) by ascending
  // index, checked by the host; empty when the backend does not list them
  // (one built before get_streams), which means unknown, not none.
  std::vector<StreamInfo> streams;
  // What the header says of the stream's times. In approximate mode they are the times above;
  // in exact mode those are the scanned frames' (first pts; last pts + duration) and these are
  // what the header claimed. Absent when the backend does not say (in exact mode, a backend
  // without get_header_times).
  std::optional<HeaderTimes> header_times;
  // A pixel's width over its height in the frames as returned (after the
  // display rotation, if applied), as the file says: 1/1 for square
  // pixels, 8/9 for NTSC DV's. Absent where the file does not say or the
  // backend does not report it.
  std::optional<Rational> pixel_aspect_ratio;

  // The number of frames: from the scan when there was one, else the header's, else (as
  // torchcodec does) estimated as round(duration_seconds x average_fps), which is the count the
  // cpu backend's approximate mode then uses; -1 when none of them is known.
  int64_t num_frames() const {
    if (num_frames_from_scan >= 0) return num_frames_from_scan;
    if (num_frames_from_header >= 0) return num_frames_from_header;
    if (duration_seconds > 0 && average_fps > 0 && duration_seconds * average_fps < 9e18) {
      return std::llround(duration_seconds * average_fps);
    }
    return -1;
  }
  bool operator==(const StreamMetadata&) const = default;
};

// Which frames one request asks for, by index or by presentation time.
// Negative indices count from the end, as in Python.
class FrameSelection {
 public:
  struct Indices {
    std::vector<int64_t> indices;
    bool operator==(const Indices&) const = default;
  };
  struct Range {  // start, start + step, ... below stop
    int64_t start = 0;
    int64_t stop = 0;
    int64_t step = 1;
    bool operator==(const Range&) const = default;
  };
  struct PlayedAt {  // the frame on screen at each time
    std::vector<double> seconds;
    bool operator==(const PlayedAt&) const = default;
  };
  struct PlayedInRange {  // every frame played in [start, stop)
    double start_seconds = 0;
    double stop_seconds = 0;
    bool operator==(const PlayedInRange&) const = default;
  };
  using Variant = std::variant<Indices, Range, PlayedAt, PlayedInRange>;

  static FrameSelection AtIndices(std::vector<int64_t> indices) { return FrameSelection(Indices{std::move(indices)}); }
  static FrameSelection InRange(int64_t start, int64_t stop, int64_t step = 1) {
    return FrameSelection(Range{start, stop, step});
  }
  static FrameSelection PlayedAtSeconds(std::vector<double> seconds) {
    return FrameSelection(PlayedAt{std::move(seconds)});
  }
  static FrameSelection PlayedInSeconds(double start, double stop) { return FrameSelection(PlayedInRange{start, stop}); }

  const Variant& get() const { return selection_; }
  // "frame indices [3, 9]", "frames played in [1, 2) s".
  std::string ToString() const;
  bool operator==(const FrameSelection&) const = default;

 private:
  explicit FrameSelection(Variant selection) : selection_(std::move(selection)) {}
  Variant selection_;
};

struct DecoderOptions {
  std::string device;             // "cpu" (or torch's "cpu:0"), "acme:1"; empty: the host's default device
  int32_t stream_index = -1;      // -1: the best video stream
  SeekMode seek_mode = SeekMode::kExact;
  OutputFormat output_format = OutputFormat::kRgb24;
  uint32_t decoder_threads = 0;   // 0: the decoder chooses
  uint32_t output_width = 0;      // 0 (both): the stream's own size
  uint32_t output_height = 0;
  // Native pixel formats this caller converts to RGB itself (RgbConverter::
  // Formats()). When output_format is kRgb24 or kRgb24Planar, the stream is
  // not rotated, no output size is asked for, and its pixel format is one of
  // these, the backend may send its frames as kNative instead (each Frame's
  // format() says); an RgbConverter then gives the same bytes the backend's
  // RGB would have had. Empty: frames come as output_format.
  std::vector<std::string> native_formats;
  // How many frames can be in flight or held zero-copy at once (see
  // VideoDecoder: a Get* call copies its frames out when live frames hold
  // the slots, so it never waits for one). With native_formats, frames the
  // backend decodes in place come from a frame pool besides these (16
  // slots by default, CODECVISOR_FRAME_POOL_SLOTS) and are shared as well.
  uint32_t arena_slots = 4;
  // Longest wait for the backend to make progress on one request, and for
  // one attempt at opening the file. A backend that takes longer is
  // killed and restarted, and the request replayed once; one still using
  // CPU at a request's deadline (decoding many frames before its first
  // answer) gets another request_timeout, up to ten in all. Both must be
  // positive (kInvalidArgument at open); one longer than about ten years
  // (milliseconds::max() for "no limit") is taken as ten years. The
  // backend's process serves every decoder of its device in this Host: a
  // restart for one decoder's deadline replays the others' requests in
  // flight too (their retries() count them), so a deadline shorter than
  // the work takes costs every decoder of that backend, and a file whose
  // open times out twice is judged poison.
  std::chrono::milliseconds request_timeout{30'000};
  std::chrono::milliseconds open_timeout{120'000};
};

}  // namespace codecvisor

#endif  // CODECVISOR_TYPES_H_
