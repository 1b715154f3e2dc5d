#include "tools/bench/decode_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iterator>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/host.h"
#include "tools/bench/decode_paths.h"
#include "tools/bench/ffmpeg_cli.h"
#include "tools/bench/memory_usage.h"
#include "tools/bench/scratch_dir.h"
#include "tools/bench/stats.h"
#include "tools/cli/json.h"

namespace codecvisor::bench {
namespace {

constexpr int64_t kRssFramesFirst = 300;
constexpr int64_t kRssFramesLast = 3000;
constexpr double kRatioTarget = 0.97;
// A sequential pass repeats the video's frames until it lasts about this
// long (at most kMaxRepeats times over).
constexpr double kMinPassSeconds = 1.0;
constexpr int kMaxRepeats = 20;
constexpr double kSandboxCostTarget = 0.10;
// out_of_process_fps >= ffmpeg_cli_fps, judged on the per-round ratio.
constexpr double kCliRatioTarget = 1.0;
// "Does not grow": allocator noise aside. Per-frame state that leaked would
// be far above this after 2700 more frames.
constexpr int64_t kRssGrowthToleranceKb = 1024;

struct GeneratedVideo {
  const char* name;
  int width;
  int height;
};
constexpr GeneratedVideo kGenerated[] = {{"testsrc2_1080p.mp4", 1920, 1080}, {"testsrc2_360p.mp4", 640, 360}};

// Progress on stderr, only for a person watching a terminal.
void Progress(const std::string& line) {
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "bench decode: %s\n", line.c_str());
}

// A Host with only the built-in cpu backend (no third-party discovery, so
// the environment cannot change what is measured).
absl::StatusOr<std::unique_ptr<Host>> CreateBenchHost(bool sandbox) {
  absl::StatusOr<InstallLayout> layout = InstallLayout::Discover();
  if (!layout.ok()) return layout.status();
  HostOptions options;
  options.layout = *layout;
  options.discovery = DiscoveryOptions{{}, layout->builtin_dir, false};
  options.supervision.spawn.sandbox = sandbox;
  return Host::Create(options);
}

// One reading of the host's memory (kB).
struct RssReading {
  int64_t peak = 0;    // VmHWM
  int64_t rss = 0;     // VmRSS
  int64_t shared = 0;  // RssShmem: the arena's and the channel's pages
};

struct RssFigures {
  RssReading after_300, after_3000;
};

// The host's memory after 300 and 3000 frames decoded out of process (the
// video decoded again and again by one decoder until that many frames have
// been delivered). Must run before any InProcessPass in this process: the
// in-process passes run FFmpeg here, and its buffers and code pages would
// be counted as the host's. The peak is reset first, so that one video's
// figures do not carry the previous one's peak.
absl::StatusOr<RssFigures> MeasureHostRss(const std::string& path, uint32_t threads, uint32_t arena_slots,
                                          int64_t video_frames) {
  if (absl::Status s = ResetPeakRss(); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Host>> host = CreateBenchHost(/*sandbox=*/true);
  if (!host.ok()) return host.status();
  DecoderOptions options;
  options.device = "cpu";
  options.decoder_threads = threads;
  options.arena_slots = arena_slots;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = (*host)->OpenDecoder(path, options);
  if (!decoder.ok()) return decoder.status();
  int64_t decoded = 0;
  uint64_t checksum = 0;
  auto decode_until = [&](int64_t total) -> absl::Status {
    while (decoded < total) {
      const int64_t n = std::min(video_frames, total - decoded);
      absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, n, 1}}, [&](Frame frame) {
        checksum += TouchFrame(frame.data());
        ++decoded;
        return absl::OkStatus();
      });
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  };
  RssFigures r;
  auto read = [](RssReading* reading) -> absl::Status {
    int64_t* fields[] = {&reading->peak, &reading->rss, &reading->shared};
    const char* names[] = {"VmHWM", "VmRSS", "RssShmem"};
    for (size_t i = 0; i < std::size(names); ++i) {
      absl::StatusOr<int64_t> kb = ProcStatusKb(names[i]);
      if (!kb.ok()) return kb.status();
      *fields[i] = *kb;
    }
    return absl::OkStatus();
  };
  if (absl::Status s = decode_until(kRssFramesFirst); !s.ok()) return s;
  if (absl::Status s = read(&r.after_300); !s.ok()) return s;
  if (absl::Status s = decode_until(kRssFramesLast); !s.ok()) return s;
  if (absl::Status s = read(&r.after_3000); !s.ok()) return s;
  return r;
}

// The same `count` indices in [0, frames) for both sides, in random order.
std::vector<int64_t> RandomIndices(int count, int64_t frames, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> indices(static_cast<size_t>(count));
  for (int64_t& i : indices) i = static_cast<int64_t>(rng() % static_cast<uint64_t>(frames));
  return indices;
}

// One side's passes within one round, summed: every per-round figure is
// taken over all of a side's passes in that round.
struct SideSum {
  double seconds = 0;
  double cpu_seconds = 0;
  double host_cpu_seconds = 0;
  double open_seconds = 0;
  int64_t frames = 0;
  int passes = 0;

  void Add(const PassTiming& t) {
    seconds += t.decode_seconds;
    cpu_seconds += t.cpu_seconds;
    host_cpu_seconds += t.host_cpu_seconds;
    open_seconds += t.open_seconds;
    frames += t.frames;
    ++passes;
  }
  double Fps() const { return static_cast<double>(frames) / seconds; }
  double CpuMsPerFrame() const { return cpu_seconds * 1e3 / static_cast<double>(frames); }
  double HostCpuMsPerFrame() const { return host_cpu_seconds * 1e3 / static_cast<double>(frames); }
  double OpenMs() const { return open_seconds * 1e3 / passes; }
};

absl::StatusOr<DecodeBenchResult> MeasureVideo(const DecodeBenchOptions& o, const std::string& path,
                                               const StreamMetadata& m, const RssFigures& rss) {
  const int64_t video_frames = m.num_frames_from_scan;
  Workload sequential{.sequential = true, .count = std::min<int64_t>(o.frames, video_frames)};
  // A pass of a small video takes a fraction of a second, over which one
  // scheduling burst on this shared machine moves the fps by 10%: decode
  // the frames as many times over (in the same session, on every side) as
  // makes a pass last about kMinPassSeconds, timed by one in-process pass.
  {
    absl::StatusOr<PassTiming> probe = InProcessPass(path, o.threads, sequential);
    if (!probe.ok()) return probe.status();
    sequential.repeats = std::clamp(static_cast<int>(std::ceil(kMinPassSeconds / probe->decode_seconds)), 1,
                                    kMaxRepeats);
  }
  // The random indices in two halves, each a pass of its own (see below).
  const std::vector<int64_t> indices = RandomIndices(o.random_frames, video_frames, o.seed);
  const auto middle = indices.begin() + static_cast<std::ptrdiff_t>(indices.size() / 2);
  const Workload random_halves[2] = {{.sequential = false, .indices = {indices.begin(), middle}},
                                     {.sequential = false, .indices = {middle, indices.end()}}};

  absl::StatusOr<std::unique_ptr<Host>> sandboxed = CreateBenchHost(true);
  if (!sandboxed.ok()) return sandboxed.status();
  absl::StatusOr<std::unique_ptr<Host>> unsandboxed = CreateBenchHost(false);
  if (!unsandboxed.ok()) return unsandboxed.status();

  // Sequential sides, in this order in the arrays below.
  enum Side : size_t { kIn, kOut, kUnsandboxed, kCli, kSides };
  // Per round, per side.
  std::vector<double> fps[kSides], cpu_ms[kSides], open_ms[kSides], out_host_cpu;
  std::vector<double> ratios, sandbox_costs, cli_ratios;
  std::vector<double> random_in_fps, random_out_fps, random_ratios;
  using Pass = std::function<absl::StatusOr<PassTiming>()>;
  const Pass sequential_passes[kSides] = {
      [&] { return InProcessPass(path, o.threads, sequential); },
      [&] { return OutOfProcessPass(**sandboxed, path, o.threads, o.arena_slots, sequential); },
      [&] { return OutOfProcessPass(**unsandboxed, path, o.threads, o.arena_slots, sequential); },
      [&]() -> absl::StatusOr<PassTiming> {
        PassTiming t;
        for (int r = 0; r < sequential.repeats; ++r) {
          absl::StatusOr<double> seconds = TimeFfmpegDecode(path, o.threads, sequential.count, video_frames);
          if (!seconds.ok()) return seconds.status();
          t.decode_seconds += *seconds;
          t.frames += sequential.count;
        }
        return t;
      },
  };
  auto random_pass = [&](size_t side, const Workload& half) {
    return side == 0 ? InProcessPass(path, o.threads, half)
                     : OutOfProcessPass(**sandboxed, path, o.threads, o.arena_slots, half);
  };
  // Every side runs the same backend code with the same thread count; what
  // differs is only the path around it. The sequential passes a ratio
  // compares all run in each round, each side twice in mirrored order, and
  // each ratio is taken within its round over both passes of each side: a
  // load that rises or falls steadily through the round weighs on every side
  // alike, and the median over rounds drops the round a burst spoiled most.
  // The random passes are long (~25 s at 1080p), so rather than run each
  // twice, each side decodes the first half of the indices in one session
  // and the second half in another, mirrored as A1 B1 B2 A2 (which side goes
  // first alternating with the round): the same work on both sides, and the
  // same cancelling of a steady drift.
  for (int round = 0; round < o.rounds; ++round) {
    Progress(absl::StrCat(path, ": round ", round + 1, " of ", o.rounds));
    SideSum sums[kSides];
    for (size_t side : MirroredOrder(kSides, round)) {
      absl::StatusOr<PassTiming> t = sequential_passes[side]();
      if (!t.ok()) return t.status();
      sums[side].Add(*t);
    }
    for (size_t side = 0; side < kSides; ++side) {
      fps[side].push_back(sums[side].Fps());
      cpu_ms[side].push_back(sums[side].CpuMsPerFrame());
      open_ms[side].push_back(sums[side].OpenMs());
    }
    out_host_cpu.push_back(sums[kOut].HostCpuMsPerFrame());
    ratios.push_back(sums[kOut].Fps() / sums[kIn].Fps());
    sandbox_costs.push_back(1 - sums[kOut].Fps() / sums[kUnsandboxed].Fps());
    cli_ratios.push_back(sums[kOut].Fps() / sums[kCli].Fps());

    SideSum random_sums[2];
    const std::vector<size_t> random_order = MirroredOrder(2, round);
    for (size_t i = 0; i < random_order.size(); ++i) {
      const size_t side = random_order[i];
      absl::StatusOr<PassTiming> t = random_pass(side, random_halves[i / 2]);
      if (!t.ok()) return t.status();
      random_sums[side].Add(*t);
    }
    random_in_fps.push_back(random_sums[0].Fps());
    random_out_fps.push_back(random_sums[1].Fps());
    random_ratios.push_back(random_sums[1].Fps() / random_sums[0].Fps());
  }

  DecodeBenchResult r;
  r.file = path;
  r.codec = m.codec;
  r.width = m.width;
  r.height = m.height;
  r.frames = sequential.count;
  r.repeats = sequential.repeats;
  r.threads = o.threads;
  r.arena_slots = o.arena_slots;
  r.rounds = o.rounds;
  r.in_process_fps = Median(fps[kIn]);
  r.out_of_process_fps = Median(fps[kOut]);
  r.out_of_process_unsandboxed_fps = Median(fps[kUnsandboxed]);
  r.ffmpeg_cli_fps = Median(fps[kCli]);
  r.ratio = Median(ratios);
  r.sandbox_cost = Median(sandbox_costs);
  r.cli_ratio = Median(cli_ratios);
  r.in_process_cpu_ms_per_frame = Median(cpu_ms[kIn]);
  r.out_of_process_cpu_ms_per_frame = Median(cpu_ms[kOut]);
  r.out_of_process_host_cpu_ms_per_frame = Median(out_host_cpu);
  r.out_of_process_unsandboxed_cpu_ms_per_frame = Median(cpu_ms[kUnsandboxed]);
  r.in_process_open_ms = Median(open_ms[kIn]);
  r.out_of_process_open_ms = Median(open_ms[kOut]);
  r.random_frames = o.random_frames;
  r.random_in_process_fps = Median(random_in_fps);
  r.random_out_of_process_fps = Median(random_out_fps);
  r.random_ratio = Median(random_ratios);
  r.round_ratios = ratios;
  r.round_random_ratios = random_ratios;
  r.round_cli_ratios = cli_ratios;
  r.host_rss_kb_300 = rss.after_300.peak;
  r.host_rss_kb_3000 = rss.after_3000.peak;
  r.host_vmrss_kb_300 = rss.after_300.rss;
  r.host_vmrss_kb_3000 = rss.after_3000.rss;
  r.host_shared_kb_300 = rss.after_300.shared;
  r.host_shared_kb_3000 = rss.after_3000.shared;
  r.host_private_kb_300 = rss.after_300.rss - rss.after_300.shared;
  r.host_private_kb_3000 = rss.after_3000.rss - rss.after_3000.shared;
  r.targets = {
      {"ratio", absl::StrFormat(">= %.2f", kRatioTarget), r.ratio >= kRatioTarget},
      {"sandbox_cost", absl::StrFormat("< %.2f", kSandboxCostTarget), r.sandbox_cost < kSandboxCostTarget},
      {"random_ratio", absl::StrFormat(">= %.2f", kRatioTarget), r.random_ratio >= kRatioTarget},
      {"cli_ratio", absl::StrFormat(">= %.2f", kCliRatioTarget), r.cli_ratio >= kCliRatioTarget},
      {"host_private_kb_3000", absl::StrFormat("<= host_private_kb_300 + %d", kRssGrowthToleranceKb),
       r.host_private_kb_3000 <= r.host_private_kb_300 + kRssGrowthToleranceKb},
  };
  return r;
}

}  // namespace

absl::StatusOr<std::vector<DecodeBenchResult>> RunDecodeBench(const DecodeBenchOptions& o) {
  std::unique_ptr<ScratchDir> scratch;
  std::vector<std::string> videos;
  if (!o.file.empty()) {
    videos.push_back(o.file);
  } else {
    absl::StatusOr<std::unique_ptr<ScratchDir>> made = ScratchDir::Create("bench-decode");
    if (!made.ok()) return made.status();
    scratch = *std::move(made);
    for (const GeneratedVideo& g : kGenerated) {
      Progress(absl::StrCat("encoding ", g.name));
      videos.push_back(scratch->File(g.name));
      if (absl::Status s = MakeTestVideo(videos.back(), g.width, g.height, std::max(o.frames, 300)); !s.ok()) {
        return s;
      }
    }
  }

  std::vector<StreamMetadata> metadata;
  {
    absl::StatusOr<std::unique_ptr<Host>> host = CreateBenchHost(true);
    if (!host.ok()) return host.status();
    for (const std::string& video : videos) {
      absl::StatusOr<StreamMetadata> m = ProbeStream(**host, video);
      if (!m.ok()) return m.status();
      if (m->num_frames_from_scan <= 0) return absl::InvalidArgumentError(absl::StrCat(video, ": no frames"));
      metadata.push_back(*std::move(m));
    }
  }
  // Every memory figure first, before the first in-process pass.
  std::vector<RssFigures> rss;
  for (size_t i = 0; i < videos.size(); ++i) {
    Progress(absl::StrCat(videos[i], ": host memory over ", kRssFramesLast, " frames"));
    absl::StatusOr<RssFigures> r =
        MeasureHostRss(videos[i], o.threads, o.arena_slots, metadata[i].num_frames_from_scan);
    if (!r.ok()) return r.status();
    rss.push_back(*r);
  }
  std::vector<DecodeBenchResult> results;
  for (size_t i = 0; i < videos.size(); ++i) {
    absl::StatusOr<DecodeBenchResult> r = MeasureVideo(o, videos[i], metadata[i], rss[i]);
    if (!r.ok()) return r.status();
    // A generated video's path dies with the scratch folder: name it only.
    if (scratch != nullptr) r->file = r->file.substr(r->file.rfind('/') + 1);
    results.push_back(*std::move(r));
  }
  return results;
}

std::string DecodeBenchResult::ToJson() const {
  cli::JsonWriter w;
  w.BeginObject();
  w.Key("file").String(file).Key("codec").String(codec).Key("width").Int(width).Key("height").Int(height);
  w.Key("frames").Int(frames).Key("repeats").Int(repeats).Key("threads").Int(threads).Key("arena_slots").Int(arena_slots);
  w.Key("rounds").Int(rounds);
  w.Key("in_process_fps").Double(Rounded(in_process_fps, 1));
  w.Key("out_of_process_fps").Double(Rounded(out_of_process_fps, 1));
  w.Key("out_of_process_unsandboxed_fps").Double(Rounded(out_of_process_unsandboxed_fps, 1));
  w.Key("ffmpeg_cli_fps").Double(Rounded(ffmpeg_cli_fps, 1));
  w.Key("ratio").Double(Rounded(ratio, 3));
  w.Key("sandbox_cost").Double(Rounded(sandbox_cost, 3));
  w.Key("cli_ratio").Double(Rounded(cli_ratio, 3));
  w.Key("in_process_cpu_ms_per_frame").Double(Rounded(in_process_cpu_ms_per_frame, 3));
  w.Key("out_of_process_cpu_ms_per_frame").Double(Rounded(out_of_process_cpu_ms_per_frame, 3));
  w.Key("out_of_process_host_cpu_ms_per_frame").Double(Rounded(out_of_process_host_cpu_ms_per_frame, 3));
  w.Key("out_of_process_unsandboxed_cpu_ms_per_frame").Double(Rounded(out_of_process_unsandboxed_cpu_ms_per_frame, 3));
  w.Key("in_process_open_ms").Double(Rounded(in_process_open_ms, 1));
  w.Key("out_of_process_open_ms").Double(Rounded(out_of_process_open_ms, 1));
  w.Key("random_frames").Int(random_frames);
  w.Key("random_in_process_fps").Double(Rounded(random_in_process_fps, 1));
  w.Key("random_out_of_process_fps").Double(Rounded(random_out_of_process_fps, 1));
  w.Key("random_ratio").Double(Rounded(random_ratio, 3));
  auto rounds_of = [&w](const char* key, const std::vector<double>& values) {
    w.Key(key).BeginArray();
    for (double v : values) w.Double(Rounded(v, 3));
    w.EndArray();
  };
  rounds_of("round_ratios", round_ratios);
  rounds_of("round_random_ratios", round_random_ratios);
  rounds_of("round_cli_ratios", round_cli_ratios);
  w.Key("host_rss_kb_300").Int(host_rss_kb_300).Key("host_rss_kb_3000").Int(host_rss_kb_3000);
  w.Key("host_vmrss_kb_300").Int(host_vmrss_kb_300).Key("host_vmrss_kb_3000").Int(host_vmrss_kb_3000);
  w.Key("host_shared_kb_300").Int(host_shared_kb_300).Key("host_shared_kb_3000").Int(host_shared_kb_3000);
  w.Key("host_private_kb_300").Int(host_private_kb_300).Key("host_private_kb_3000").Int(host_private_kb_3000);
  WriteTargets(w, targets);
  w.EndObject();
  return w.str();
}

std::string DecodeBenchResult::ToText() const {
  std::string out = absl::StrFormat(
      "%s: %s %ux%u, %d frames (x%d per sequential pass), threads %u, %u arena slots, median of %d rounds\n", file,
      codec, width, height, frames, repeats, threads, arena_slots, rounds);
  absl::StrAppendFormat(&out, "  %-34s %8.1f fps, CPU %.3f ms/frame (open %.1f ms, not counted)\n",
                        "in process (cpu backend linked in)", in_process_fps, in_process_cpu_ms_per_frame,
                        in_process_open_ms);
  absl::StrAppendFormat(&out, "  %-34s %8.1f fps, CPU %.3f ms/frame (host %.3f; open %.1f ms); ratio %.3f %s\n",
                        "out of process, sandboxed", out_of_process_fps, out_of_process_cpu_ms_per_frame,
                        out_of_process_host_cpu_ms_per_frame, out_of_process_open_ms, ratio,
                        TargetNote(targets, "ratio"));
  absl::StrAppendFormat(&out, "  %-34s %8.1f fps, CPU %.3f ms/frame; sandbox cost %.1f%% %s\n",
                        "out of process, no sandbox", out_of_process_unsandboxed_fps,
                        out_of_process_unsandboxed_cpu_ms_per_frame, sandbox_cost * 100,
                        TargetNote(targets, "sandbox_cost"));
  absl::StrAppendFormat(&out, "  %-34s %8.1f fps (wall clock, process start included); out of process / CLI %.3f %s\n",
                        "ffmpeg CLI", ffmpeg_cli_fps, cli_ratio, TargetNote(targets, "cli_ratio"));
  absl::StrAppendFormat(&out, "  %d random frames, exact seek: in process %.1f fps, out of process %.1f fps; ratio %.3f %s\n",
                        random_frames, random_in_process_fps, random_out_of_process_fps, random_ratio,
                        TargetNote(targets, "random_ratio"));
  absl::StrAppendFormat(&out, "  host peak RSS: %d kB after %d frames, %d kB after %d frames\n", host_rss_kb_300,
                        kRssFramesFirst, host_rss_kb_3000, kRssFramesLast);
  absl::StrAppendFormat(&out, "  host current RSS: %d kB after %d frames, %d kB after %d frames\n", host_vmrss_kb_300,
                        kRssFramesFirst, host_vmrss_kb_3000, kRssFramesLast);
  absl::StrAppendFormat(&out, "    of which shared (frame arena, channel): %d kB, then %d kB\n", host_shared_kb_300,
                        host_shared_kb_3000);
  absl::StrAppendFormat(&out, "    the host's own: %d kB, then %d kB %s\n", host_private_kb_300, host_private_kb_3000,
                        TargetNote(targets, "host_private_kb_3000"));
  return out;
}

}  // namespace codecvisor::bench
