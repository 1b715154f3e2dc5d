#include "tools/bench/seek_bench.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/host.h"
#include "tools/bench/decode_paths.h"
#include "tools/bench/ffmpeg_cli.h"
#include "tools/bench/scratch_dir.h"
#include "tools/bench/stats.h"
#include "tools/cli/json.h"

namespace codecvisor::bench {

using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::OutputFormat;
using ::codecvisor::internal::SeekMode;
using ::codecvisor::internal::VideoDecoder;
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kTargetRatio = 1.2;
// The generated video: the 1080p, 20 s clip with long GOPs.
constexpr int kWidth = 1920, kHeight = 1080, kFrames = 600, kKeyInterval = 250;

void Progress(const std::string& line) {
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "bench seek: %s\n", line.c_str());
}

// The frame a first access asks for, and what ffmpeg -ss is given for it.
struct Target {
  int64_t index = 0;
  double ss_seconds = 0;
  size_t frame_bytes = 0;
};

// Opens `path` in `mode` on `host` (whose cpu child is running) and gets
// frame `index`, reading it as a consumer would; the seconds from the
// call to open to the frame in hand. The decoder is closed after the
// clock stops.
absl::StatusOr<double> TimeFirstAccess(Host& host, const std::string& path, SeekMode mode, uint32_t threads,
                                       int64_t index, uint64_t* checksum) {
  DecoderOptions options;
  options.device = "cpu";
  options.seek_mode = mode;
  options.output_format = OutputFormat::kRgb24;
  options.decoder_threads = threads;
  const auto start = Clock::now();
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = host.OpenDecoder(path, options);
  if (!decoder.ok()) return decoder.status();
  absl::StatusOr<Frame> frame = (*decoder)->GetFrameAt(index);
  if (!frame.ok()) return frame.status();
  *checksum += TouchFrame(frame->plane(0));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (frame->index() != index) {
    return absl::InternalError(absl::StrCat(path, ": asked for frame ", index, ", got frame ", frame->index()));
  }
  return seconds;
}

// The frame asked for, resolved against exact mode's count, and the time
// for ffmpeg -ss: a quarter of a frame before its start, from the stream's
// beginning, so that the CLI's first frame at or after it is this one.
absl::StatusOr<Target> Resolve(Host& host, const std::string& path, const SeekBenchOptions& o,
                               SeekBenchResult* r) {
  DecoderOptions options;
  options.device = "cpu";
  options.decoder_threads = o.threads;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = host.OpenDecoder(path, options);
  if (!decoder.ok()) return decoder.status();
  const StreamMetadata& m = (*decoder)->metadata();
  const int64_t index = o.index < 0 ? m.num_frames_from_scan + o.index : o.index;
  if (index < 0 || index >= m.num_frames_from_scan) {
    return absl::InvalidArgumentError(
        absl::StrCat("--index ", o.index, ": ", path, " has ", m.num_frames_from_scan, " frames"));
  }
  absl::StatusOr<Frame> frame = (*decoder)->GetFrameAt(index);
  if (!frame.ok()) return frame.status();
  r->width = m.width;
  r->height = m.height;
  r->frames = m.num_frames_from_scan;
  r->index = index;
  Target t;
  t.index = index;
  t.ss_seconds = frame->pts_seconds() - m.begin_stream_seconds - frame->duration_seconds() / 4;
  t.frame_bytes = size_t{m.width} * m.height * 3;
  r->seconds = t.ss_seconds;
  return t;
}

}  // namespace

absl::StatusOr<SeekBenchResult> RunSeekBench(const SeekBenchOptions& o) {
  std::unique_ptr<ScratchDir> scratch;
  std::string path = o.file;
  if (path.empty()) {
    absl::StatusOr<std::unique_ptr<ScratchDir>> made = ScratchDir::Create("bench-seek");
    if (!made.ok()) return made.status();
    scratch = *std::move(made);
    path = scratch->File("testsrc2_1080p_gop250.mp4");
    Progress(absl::StrCat("making ", path));
    if (absl::Status s = MakeBenchVideo(path, kWidth, kHeight, kFrames, kKeyInterval); !s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<Host>> host = CreateBenchHost(/*sandbox=*/true);
  if (!host.ok()) return host.status();
  SeekBenchResult r;
  r.file = path;
  r.threads = o.threads;
  r.rounds = o.rounds;
  // Starts the backend's child, outside every measurement.
  absl::StatusOr<Target> target = Resolve(**host, path, o, &r);
  if (!target.ok()) return target.status();

  enum Side { kApproximate, kExact, kFfmpeg, kSides };
  uint64_t checksum = 0;
  auto run = [&](int side) -> absl::StatusOr<double> {
    switch (side) {
      case kApproximate:
        return TimeFirstAccess(**host, path, SeekMode::kApproximate, o.threads, target->index, &checksum);
      case kExact:
        return TimeFirstAccess(**host, path, SeekMode::kExact, o.threads, target->index, &checksum);
      default:
        return TimeFfmpegSeek(path, o.threads, target->ss_seconds, target->frame_bytes);
    }
  };
  for (int side = 0; side < kSides; ++side) {  // untimed: the page cache, every side
    if (absl::StatusOr<double> s = run(side); !s.ok()) return s.status();
  }
  std::vector<double> seconds[kSides];
  for (int round = 0; round < o.rounds; ++round) {
    Progress(absl::StrCat(path, ": round ", round + 1, " of ", o.rounds));
    double taken[kSides] = {};
    for (int k = 0; k < kSides; ++k) {
      const int side = (round + k) % kSides;
      absl::StatusOr<double> s = run(side);
      if (!s.ok()) return s.status();
      taken[side] = *s;
      seconds[side].push_back(*s);
    }
    r.round_approx_first_vs_ffmpeg_ss.push_back(taken[kApproximate] / taken[kFfmpeg]);
    r.round_approx_first_vs_exact.push_back(taken[kApproximate] / taken[kExact]);
  }
  r.approximate_ms = Median(seconds[kApproximate]) * 1e3;
  r.exact_ms = Median(seconds[kExact]) * 1e3;
  r.ffmpeg_ss_ms = Median(seconds[kFfmpeg]) * 1e3;
  r.approx_first_vs_ffmpeg_ss = Median(r.round_approx_first_vs_ffmpeg_ss);
  r.approx_first_vs_exact = Median(r.round_approx_first_vs_exact);
  r.approx_first_vs_ffmpeg_ss_quartiles = Quartiles(r.round_approx_first_vs_ffmpeg_ss);
  r.approx_first_vs_exact_quartiles = Quartiles(r.round_approx_first_vs_exact);
  r.targets = {{"approx_first_vs_ffmpeg_ss", absl::StrFormat("<= %.1f", kTargetRatio),
                r.approx_first_vs_ffmpeg_ss <= kTargetRatio}};
  return r;
}

std::string SeekBenchResult::ToJson() const {
  cli::JsonWriter w;
  w.BeginObject();
  w.Key("file").String(file).Key("width").Int(width).Key("height").Int(height).Key("frames").Int(frames);
  w.Key("index").Int(index).Key("ss_seconds").Double(Rounded(seconds, 6));
  w.Key("threads").Int(threads).Key("rounds").Int(rounds);
  w.Key("approximate_ms").Double(Rounded(approximate_ms, 2));
  w.Key("exact_ms").Double(Rounded(exact_ms, 2));
  w.Key("ffmpeg_ss_ms").Double(Rounded(ffmpeg_ss_ms, 2));
  w.Key("approx_first_vs_ffmpeg_ss").Double(Rounded(approx_first_vs_ffmpeg_ss, 3));
  w.Key("approx_first_vs_exact").Double(Rounded(approx_first_vs_exact, 3));
  auto list = [&w](const char* key, const std::vector<double>& values) {
    w.Key(key).BeginArray();
    for (double v : values) w.Double(Rounded(v, 3));
    w.EndArray();
  };
  list("approx_first_vs_ffmpeg_ss_quartiles", approx_first_vs_ffmpeg_ss_quartiles);
  list("approx_first_vs_exact_quartiles", approx_first_vs_exact_quartiles);
  list("round_approx_first_vs_ffmpeg_ss", round_approx_first_vs_ffmpeg_ss);
  list("round_approx_first_vs_exact", round_approx_first_vs_exact);
  WriteTargets(w, targets);
  w.EndObject();
  return w.str();
}

std::string SeekBenchResult::ToText() const {
  auto quartiles = [](const std::vector<double>& q) {
    return q.size() == 3 ? absl::StrFormat("%.3f / %.3f / %.3f", q[0], q[1], q[2]) : std::string("-");
  };
  std::string out = absl::StrFormat(
      "%s: %ux%u, %d frames; first access to frame %d by a fresh decoder, threads %u, median of %d rounds\n", file,
      width, height, frames, index, threads, rounds);
  absl::StrAppendFormat(&out, "  %-38s %9.2f ms\n", "approximate mode (open + frame)", approximate_ms);
  absl::StrAppendFormat(&out, "  %-38s %9.2f ms\n", "exact mode (open, scan + frame)", exact_ms);
  absl::StrAppendFormat(&out, "  %-38s %9.2f ms\n", absl::StrFormat("ffmpeg -ss %.6f ... -frames:v 1", seconds),
                        ffmpeg_ss_ms);
  absl::StrAppendFormat(&out, "  approximate / ffmpeg -ss: %.3f (quartiles %s) %s\n", approx_first_vs_ffmpeg_ss,
                        quartiles(approx_first_vs_ffmpeg_ss_quartiles), TargetNote(targets, "approx_first_vs_ffmpeg_ss"));
  absl::StrAppendFormat(&out, "  approximate / exact: %.3f (quartiles %s)\n", approx_first_vs_exact,
                        quartiles(approx_first_vs_exact_quartiles));
  return out;
}

}  // namespace codecvisor::bench
