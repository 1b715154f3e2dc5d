// The suite's checks of what a backend decodes: metadata against ffprobe
// (the rules in metadata_checks.h),
// every frame against the ffmpeg CLI, the access methods, approximate seek
// and its first request, and planar output (see suite.h).

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "media/native_rgb.h"
#include "tools/conformance/first_seek.h"
#include "tools/conformance/metadata_checks.h"
#include "tools/conformance/process_io.h"
#include "tools/conformance/suite.h"

namespace codecvisor::conformance::internal {

using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::StreamMetadata;
using ::codecvisor::internal::SeekMode;
using ::codecvisor::internal::OutputFormat;
using ::codecvisor::internal::DecoderOptions;
namespace {

// Runs one access method and checks that it returned exactly the frames at
// `expected` indices.
template <typename Call>
absl::Status ExpectFrames(absl::string_view what, Call call, const std::vector<int64_t>& expected,
                          const std::function<absl::Status(const Frame&, int64_t, absl::string_view)>& compare) {
  absl::StatusOr<std::vector<Frame>> frames = call();
  if (!frames.ok()) return absl::Status(frames.status().code(), absl::StrCat(what, ": ", frames.status().message()));
  if (frames->size() != expected.size()) {
    return absl::InternalError(absl::StrCat(what, ": ", frames->size(), " frames, expected ", expected.size(),
                                            " (indices ", absl::StrJoin(expected, ","), ")"));
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    if (absl::Status s = compare((*frames)[i], expected[i], what); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Suite::Metadata(const Sample& sample, std::string* detail) {
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path);
  if (!decoder.ok()) return decoder.status();
  return CheckMetadata((*decoder)->metadata(), sample, exact_, detail);
}

absl::Status Suite::Sequential(const Sample& sample, std::string* detail) {
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path);
  if (!decoder.ok()) return decoder.status();
  int64_t next = 0, lowest_at = 0;
  double lowest = std::numeric_limits<double>::infinity();
  absl::Status status = (*decoder)->ForEachFrame(
      {ipc::IndexRange{0, sample.num_frames(), 1}}, [&](Frame frame) -> absl::Status {
        if (next >= sample.num_frames()) return absl::InternalError("more frames than requested");
        double psnr = 0;
        absl::Status s = Compare(frame, sample, next, "every frame in order", &psnr);
        if (psnr < lowest) {
          lowest = psnr;
          lowest_at = next;
        }
        ++next;
        return s;
      });
  if (!status.ok()) return status;
  if (next != sample.num_frames()) {
    return absl::InternalError(absl::StrCat(next, " frames delivered of ", sample.num_frames()));
  }
  *detail = absl::StrCat(next, " frames, ",
                         exact_ ? absl::StrCat("bit-exact with ", sample.reference)
                                : absl::StrFormat("at least %.2f dB against %s (lowest %.2f dB, frame %d)",
                                                  min_psnr_db_, sample.reference, lowest, lowest_at),
                         ", pts and durations as the reference");
  return absl::OkStatus();
}

absl::Status Suite::AccessMethods(const Sample& sample, std::string* detail) {
  absl::StatusOr<std::unique_ptr<VideoDecoder>> opened = Open(sample.path);
  if (!opened.ok()) return opened.status();
  VideoDecoder& decoder = **opened;
  const int64_t n = sample.num_frames();
  auto compare = [&](const Frame& f, int64_t index, absl::string_view what) { return Compare(f, sample, index, what); };
  auto single = [](absl::StatusOr<Frame> frame) -> absl::StatusOr<std::vector<Frame>> {
    if (!frame.ok()) return frame.status();
    std::vector<Frame> out;
    out.push_back(*std::move(frame));
    return out;
  };
  // A time inside frame k's display interval.
  auto inside = [&](int64_t k) { return Seconds(sample, sample.pts[k]) + 0.5 * Seconds(sample, sample.durations[k]); };
  // Frame k of a 36-frame stream, at the same fraction of this one.
  auto at = [n](int64_t k) { return k * n / 36; };
  // The start of frame k: the pts_seconds the backend gives the frame,
  // which the frame played at a time is the last to be at or before. Not
  // this suite's pts * num / den: k / 24 can round to either side of it
  // (frame 10 at 1/24: 10 * (1 / 24.0) is a step below 10 / 24.0), and a
  // backend rounding the other way would rightly answer frame k - 1.
  std::map<int64_t, double> starts;
  for (int64_t k : {at(9), at(11), at(30)}) {
    absl::StatusOr<Frame> frame = decoder.GetFrameAt(k);
    if (!frame.ok()) return frame.status();
    if (absl::Status s = compare(*frame, k, absl::StrCat("get_frame_at(", k, ")")); !s.ok()) return s;
    starts[k] = frame->pts_seconds();
  }
  auto start_of = [&](int64_t k) { return starts.at(k); };

  const std::vector<int64_t> scattered = {n - 1, 0, at(17), at(17), at(5), n / 2};
  const std::vector<double> times = {inside(at(20)), inside(at(3)), inside(at(20)), start_of(at(11))};
  struct Case {
    std::string what;
    std::function<absl::StatusOr<std::vector<Frame>>()> call;
    std::vector<int64_t> expected;
  };
  const std::vector<Case> cases = {
      {absl::StrCat("get_frame_at(", at(7), ")"), [&] { return single(decoder.GetFrameAt(at(7))); }, {at(7)}},
      {"get_frame_at(-1)", [&] { return single(decoder.GetFrameAt(-1)); }, {n - 1}},
      {absl::StrCat("get_frames_at(", absl::StrJoin(scattered, ","), ")"),
       [&] { return decoder.GetFramesAt(scattered); }, scattered},
      {absl::StrCat("get_frames_in_range(2, ", n, ", 5)"), [&] { return decoder.GetFramesInRange(2, n, 5); },
       [&] {
         std::vector<int64_t> v;
         for (int64_t i = 2; i < n; i += 5) v.push_back(i);
         return v;
       }()},
      {absl::StrCat("get_frame_played_at(inside frame ", at(13), ")"),
       [&] { return single(decoder.GetFramePlayedAt(inside(at(13)))); }, {at(13)}},
      {absl::StrCat("get_frames_played_at(frames ", at(20), ", ", at(3), ", ", at(20), ", start of ", at(11), ")"),
       [&] { return decoder.GetFramesPlayedAt(times); }, {at(20), at(3), at(20), at(11)}},
      {absl::StrCat("get_frames_played_in_range(inside frame ", at(3), ", start of frame ", at(9), ")"),
       [&] { return decoder.GetFramesPlayedInRange(inside(at(3)), start_of(at(9))); },
       [&] {
         std::vector<int64_t> v;
         for (int64_t i = at(3); i < at(9); ++i) v.push_back(i);
         return v;
       }()},
      {absl::StrCat("get_frames_played_in_range(start of frame ", at(30), ", end)"),
       [&] { return decoder.GetFramesPlayedInRange(start_of(at(30)), Seconds(sample, sample.pts[n - 1] + sample.durations[n - 1])); },
       [&] {
         std::vector<int64_t> v;
         for (int64_t i = at(30); i < n; ++i) v.push_back(i);
         return v;
       }()},
  };
  for (const Case& c : cases) {
    if (absl::Status s = ExpectFrames(c.what, c.call, c.expected, compare); !s.ok()) return s;
  }
  *detail = absl::StrCat(cases.size(), " calls: frame at index (and -1), at indices, in a range, played at a time, "
                         "at times, in a time range");
  return absl::OkStatus();
}

absl::Status Suite::Approximate(const Sample& sample, std::string* detail) {
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path, SeekMode::kApproximate);
  if (!decoder.ok()) return decoder.status();
  const int64_t n = sample.num_frames();
  // Approximate mode names frames by the header's constant rate: on a
  // variable frame rate, index i is the frame shown at i / rate, not the
  // i-th. Each frame it returns must still be the reference's frame of its
  // pts, bit-exact.
  // Constant: every pts within a tick of the line through the first and
  // the last (Matroska's 1/1000 at 24 fps steps 42, 41, 42...).
  bool constant_rate = true;
  const double step = n > 1 ? static_cast<double>(sample.pts[n - 1] - sample.pts[0]) / static_cast<double>(n - 1) : 0;
  for (int64_t k = 1; k < n; ++k) {
    constant_rate = constant_rate &&
                    std::abs(static_cast<double>(sample.pts[k] - sample.pts[0]) - step * static_cast<double>(k)) <= 1.0;
  }
  auto compare = [&](const Frame& frame, int64_t index, absl::string_view what) {
    return constant_rate ? Compare(frame, sample, index, what) : CompareByPts(frame, sample, what);
  };
  std::string header;
  if (absl::Status s = CheckApproximateMetadata((*decoder)->metadata(), sample, &header); !s.ok()) return s;
  const std::vector<int64_t> indices = {n - 1, 0, 13 * n / 36, 13 * n / 36, 25 * n / 36, 1};
  absl::StatusOr<std::vector<Frame>> frames = (*decoder)->GetFramesAt(indices);
  if (!frames.ok()) return frames.status();
  if (frames->size() != indices.size()) return absl::InternalError(absl::StrCat(frames->size(), " frames returned"));
  for (size_t i = 0; i < indices.size(); ++i) {
    if (absl::Status s = compare((*frames)[i], indices[i], "approximate seek"); !s.ok()) return s;
  }
  const int64_t played = 22 * n / 36;
  const double t = Seconds(sample, sample.pts[played]) + 0.5 * Seconds(sample, sample.durations[played]);
  absl::StatusOr<Frame> at = (*decoder)->GetFramePlayedAt(t);
  if (!at.ok()) return at.status();
  if (at->pts() != sample.pts[played]) {
    return absl::InternalError(absl::StrCat("approximate seek, played at ", t, " s: ", sample.path, ": pts ", at->pts(),
                                            ", the reference's frame shown then has pts ", sample.pts[played]));
  }
  if (absl::Status s = compare(*at, played, "approximate seek, played at a time"); !s.ok()) return s;
  *detail = absl::StrCat(header, "; indices ", absl::StrJoin(indices, ","), " and a time",
                         constant_rate ? "" : "; a variable frame rate: each the reference's frame of its pts");
  return absl::OkStatus();
}

absl::Status Suite::FirstSeek(const Sample& sample, std::string* detail) {
  const int64_t target = sample.num_frames() - 1;
  const std::string what = absl::StrCat("frame ", target, " of ", sample.path);
  absl::StatusOr<std::vector<PacketInfo>> packets = ProbePackets(sample.path);
  if (!packets.ok()) return packets.status();
  absl::StatusOr<KeyFrameSpan> span = SpanBefore(*packets, sample.pts[target]);
  if (!span.ok()) return absl::Status(span.status().code(), absl::StrCat(what, ": ", span.status().message()));
  // Its reads are counted from its process: one must be running (an
  // earlier check may have left it quarantined or restarting).
  absl::StatusOr<BackendStatus> backend = Running("count reads of");
  if (!backend.ok()) return backend.status();
  const pid_t pid = backend->pid;
  absl::StatusOr<int64_t> before_open = BytesRead(pid);
  if (!before_open.ok()) return before_open.status();
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path, SeekMode::kApproximate);
  if (!decoder.ok()) return decoder.status();
  absl::StatusOr<int64_t> after_open = BytesRead(pid);
  if (!after_open.ok()) return after_open.status();
  absl::StatusOr<Frame> frame = (*decoder)->GetFrameAt(target);
  if (!frame.ok()) return frame.status();
  absl::StatusOr<int64_t> after_frame = BytesRead(pid);
  if (!after_frame.ok()) return after_frame.status();
  backend = Status();
  if (!backend.ok()) return backend.status();
  if (backend->pid != pid) {
    return absl::InternalError(absl::StrCat(what, ": the backend process changed (pid ", pid, ", now ", backend->pid,
                                            ") during the request; its reads cannot be counted"));
  }
  if (absl::Status s = Compare(*frame, sample, target, "approximate mode's first request"); !s.ok()) return s;
  const int64_t open_bytes = *after_open - *before_open, request_bytes = *after_frame - *after_open;
  if (absl::Status s = JudgeFirstRequest(*span, open_bytes, request_bytes, what); !s.ok()) return s;
  *detail = absl::StrCat(what, ", the first request of a fresh approximate-mode decoder: read ", request_bytes,
                         " bytes (", open_bytes, " to open), against ", span->bytes_before,
                         " bytes of packets before its key frame");
  return absl::OkStatus();
}

absl::Status Suite::Cancel(const Sample& sample, std::string* detail) {
  absl::StatusOr<BackendStatus> before = Running("interrupt a request of");
  if (!before.ok()) return before.status();
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path);
  if (!decoder.ok()) return decoder.status();
  const int64_t last = sample.num_frames() - 1;
  // Frame 0, then the last: interrupted as frame 0 arrives, so that the
  // Cancel reaches the backend as it starts on the last frame (a call
  // interrupted before its request goes out sends none).
  std::atomic<bool> interrupted{false};
  int delivered = 0;
  const absl::Status cancelled = (*decoder)->ForEachFrame(
      ::codecvisor::internal::FrameSelection{ipc::IndexList{{0, last}}},
      [&](Frame) {
        ++delivered;
        interrupted.store(true);
        return absl::OkStatus();
      },
      &interrupted);
  if (!absl::IsCancelled(cancelled)) {
    return absl::InternalError(absl::StrCat("an interrupted request for frame ", last, " of ", sample.path,
                                            " ended with ", cancelled.ToString(), ", not CANCELLED"));
  }
  absl::StatusOr<BackendStatus> after = Status();
  if (!after.ok()) return after.status();
  if (after->restarts != before->restarts || after->pid != before->pid) {
    return absl::InternalError(absl::StrCat(
        "the backend was replaced after a request for frame ", last, " of ", sample.path, " was cancelled (",
        after->last_exit, "): a backend that cannot finish a frame within ", VideoDecoder::kInterruptGrace.count(),
        " ms of a cancel must ask cv_cancel_check (cv_open_options.cancel_check) while it decodes, and stop"));
  }
  for (const int64_t index : {last, last > 0 ? last - 1 : last, int64_t{0}}) {
    absl::StatusOr<Frame> frame = (*decoder)->GetFrameAt(index);
    if (!frame.ok()) {
      return absl::InternalError(
          absl::StrCat("frame ", index, " after a cancelled request: ", frame.status().message()));
    }
    if (absl::Status s = Compare(*frame, sample, index, "after a cancelled request"); !s.ok()) return s;
  }
  if (delivered != 1) {
    return absl::InternalError(absl::StrCat("a request for frames 0 and ", last, " interrupted as frame 0 came gave ",
                                            delivered, " frames, not 1"));
  }
  *detail = absl::StrCat("frames 0 and ", last, " of ", sample.path,
                         ", interrupted as frame 0 came: CANCELLED, the same process; frames ", last, ", ", last - 1,
                         " and 0 right after");
  return absl::OkStatus();
}

absl::Status Suite::Rotation(const Sample& rotated, std::string* detail) {
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(rotated.path);
  if (!decoder.ok()) return decoder.status();
  const StreamMetadata& m = (*decoder)->metadata();
  const uint32_t w = rotated.stream.width, h = rotated.stream.height;  // after the CLI's rotation
  if (m.rotation_degrees != -90) {
    return absl::InternalError(
        absl::StrCat(rotated.path, ": rotation_degrees ", m.rotation_degrees, ", ffprobe's display matrix says -90"));
  }
  if (m.width == h && m.height == w) {
    *detail = absl::StrCat("not claimed: rotation_degrees -90 reported, frames left at the coded ", m.width, "x",
                           m.height);
    return absl::OkStatus();
  }
  std::string metadata, frames;
  absl::Status status = Metadata(rotated, &metadata);
  if (status.ok()) status = Sequential(rotated, &frames);
  if (!status.ok()) return status;
  *detail = absl::StrCat("display matrix -90, rotated to ", m.width, "x", m.height, ": ", frames);
  return absl::OkStatus();
}

absl::Status Suite::Planar(const Sample& sample, std::string* detail) {
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path, SeekMode::kExact, OutputFormat::kRgb24Planar);
  if (!decoder.ok()) return decoder.status();
  const int64_t index = sample.num_frames() / 3;
  absl::StatusOr<Frame> frame = (*decoder)->GetFrameAt(index);
  if (!frame.ok()) return frame.status();
  const uint32_t w = sample.stream.width, h = sample.stream.height;
  if (frame->num_planes() != 3 || frame->width() != w || frame->height() != h) {
    return absl::InternalError(absl::StrCat("planar frame ", frame->width(), "x", frame->height(), " with ",
                                            frame->num_planes(), " planes; expected 3 planes of ", w, "x", h));
  }
  // Interleave the planes back and compare as RGB24.
  std::vector<uint8_t> interleaved(size_t{w} * h * 3);
  for (size_t c = 0; c < 3; ++c) {
    std::span<const uint8_t> plane = frame->plane(c);
    for (uint32_t y = 0; y < h; ++y) {
      for (uint32_t x = 0; x < w; ++x) {
        const size_t at = size_t{y} * frame->stride(c) + x;
        if (at >= plane.size()) return absl::InternalError(absl::StrCat("plane ", c, " is shorter than its rows"));
        interleaved[(size_t{y} * w + x) * 3 + c] = plane[at];
      }
    }
  }
  std::span<const uint8_t> reference = sample.Frame(index);
  const double psnr = Psnr(interleaved, reference);
  if (exact_ ? !std::equal(interleaved.begin(), interleaved.end(), reference.begin()) : psnr < min_psnr_db_) {
    return absl::InternalError(absl::StrCat("planar RGB of frame ", index, " of ", sample.path, " differs from ",
                                            sample.reference, ": ", Describe(Difference(interleaved, reference, w, h))));
  }
  *detail = absl::StrCat("frame ", index, " as three planes matches the RGB24 reference");
  return absl::OkStatus();
}

absl::Status Suite::Native(const Sample& sample, std::string* detail) {
  DecoderOptions options;
  options.device = device_;
  options.native_formats = media::NativeRgb::Formats();
  options.request_timeout = options_.timeout;
  options.open_timeout = options_.timeout;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = host_->OpenDecoder(sample.path, options);
  if (!decoder.ok()) return decoder.status();
  const StreamMetadata& m = (*decoder)->metadata();
  const media::NativeStream stream{.pixel_format = m.pixel_format,
                                   .width = m.width,
                                   .height = m.height,
                                   .color_space = m.color_space,
                                   .color_range = m.color_range,
                                   .rotation_degrees = m.rotation_degrees};
  media::NativeRgb rgb(stream);
  int native = 0;
  int64_t next = 0;
  std::vector<uint8_t> pixels(size_t{m.width} * m.height * 3);
  // Every frame: one that differs anywhere must fail here as in frames_.
  const absl::Status every = (*decoder)->ForEachFrame(
      {ipc::IndexRange{0, sample.num_frames(), 1}}, [&](Frame f) -> absl::Status {
        const int64_t index = next++;
        if (f.format() == OutputFormat::kRgb24) return Compare(f, sample, index, "RGB24 with native formats offered");
        if (f.format() != OutputFormat::kNative) {
          return absl::InternalError(absl::StrCat("frame ", index, " came as ", static_cast<int>(f.format()),
                                                  " for an RGB24 request: only RGB24 or native may come"));
        }
        if (!media::NativeRgb::Accepts(stream)) {
          return absl::InternalError(absl::StrCat("frame ", index, " came native (", f.pixel_format(),
                                                  ") for a stream the host does not convert (", m.pixel_format,
                                                  ", rotation ", m.rotation_degrees, "): send RGB24"));
        }
        if (absl::Status s = rgb.ConvertFrame(f, false, pixels); !s.ok()) {
          return absl::InternalError(absl::StrCat("native frame ", index, " cannot be converted: ", s.message()));
        }
        ++native;
        return Compare(f, pixels, sample, index, "native, converted by the host");
      });
  if (!every.ok()) return every;
  *detail = native > 0 ? absl::StrCat("native ", m.pixel_format, " frames, converted by the host, match the reference")
                       : "RGB24 frames (the backend does not send native ones)";
  return absl::OkStatus();
}

}  // namespace codecvisor::conformance::internal
