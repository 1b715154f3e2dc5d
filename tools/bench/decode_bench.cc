#include "tools/bench/decode_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <memory>
#include <random>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/host.h"
#include "tools/bench/chunks.h"
#include "tools/bench/cpu_time.h"
#include "tools/bench/decode_paths.h"
#include "tools/bench/ffmpeg_cli.h"
#include "tools/bench/memory_usage.h"
#include "tools/bench/scratch_dir.h"
#include "tools/bench/stats.h"
#include "tools/bench/take_turns.h"

namespace codecvisor::bench {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::StreamMetadata;
namespace {

constexpr double kRatioTarget = 0.97;
// A sequential pass repeats the video's frames until it lasts about this
// long (at most kMaxRepeats times over).
constexpr double kMinPassSeconds = 1.0;
constexpr int kMaxRepeats = 20;
// The sides take turns on chunks of a sequential pass that last about this
// long (in process), and on this many of the random indices at a time.
constexpr double kChunkSeconds = 0.1;
constexpr size_t kRandomChunkIndices = 5;
constexpr double kSandboxCostTarget = 0.05;
// The host's CPU per frame out of process, as a share of a frame's decode
// CPU in process, stays below this (waiting must not burn a core).
constexpr double kHostCpuShareTarget = 0.03;
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
// been delivered). Must run before any in-process decoder is opened in
// this process: that runs FFmpeg here, and its buffers and code pages
// would be counted as the host's. The peak is reset first, so that one
// video's figures do not carry the previous one's peak.
absl::StatusOr<RssFigures> MeasureHostRss(const std::string& path, uint32_t threads, uint32_t arena_slots,
                                          int64_t video_frames) {
  if (absl::Status s = ResetPeakRss(); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Host>> host = CreateBenchHost(/*sandbox=*/true);
  if (!host.ok()) return host.status();
  absl::StatusOr<std::unique_ptr<DecodePath>> decoder = OpenOutOfProcess(**host, path, threads, arena_slots);
  if (!decoder.ok()) return decoder.status();
  int64_t decoded = 0;
  auto decode_until = [&](int64_t total) -> absl::Status {
    while (decoded < total) {
      const int64_t n = std::min(video_frames, total - decoded);
      absl::StatusOr<ChunkTiming> t = (*decoder)->Decode({.start = 0, .stop = n});
      if (!t.ok()) return t.status();
      decoded += t->frames;
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

absl::StatusOr<DecodeBenchResult> MeasureVideo(const DecodeBenchOptions& o, const std::string& path,
                                               const StreamMetadata& m, const RssFigures& rss) {
  const int64_t video_frames = m.num_frames_from_scan;
  const int64_t count = std::min<int64_t>(o.frames, video_frames);
  // A pass of a small video takes a fraction of a second, over which one
  // scheduling burst on this shared machine moves the fps by 10%: decode
  // the frames as many times over (in the same session, on every side) as
  // makes a pass last about kMinPassSeconds; and cut the pass into chunks
  // of about kChunkSeconds, which the sides take turns on. Both from one
  // in-process pass, timed first.
  int repeats = 1;
  int64_t chunk_frames = count;
  {
    absl::StatusOr<std::unique_ptr<DecodePath>> probe = OpenInProcess(path, o.threads);
    if (!probe.ok()) return probe.status();
    absl::StatusOr<ChunkTiming> t = (*probe)->Decode({.start = 0, .stop = count});
    if (!t.ok()) return t.status();
    repeats = std::clamp(static_cast<int>(std::ceil(kMinPassSeconds / t->decode_seconds)), 1, kMaxRepeats);
    const double seconds_per_frame = t->decode_seconds / static_cast<double>(count);
    chunk_frames = std::clamp<int64_t>(std::llround(kChunkSeconds / seconds_per_frame), 1, count);
  }
  const std::vector<Chunk> sequential = SequentialChunks(count, repeats, chunk_frames);
  const std::vector<int64_t> indices = RandomIndices(o.random_frames, video_frames, o.seed);
  const std::vector<Chunk> random = ListChunks(indices, kRandomChunkIndices);

  absl::StatusOr<std::unique_ptr<Host>> sandboxed = CreateBenchHost(true);
  if (!sandboxed.ok()) return sandboxed.status();
  absl::StatusOr<std::unique_ptr<Host>> unsandboxed = CreateBenchHost(false);
  if (!unsandboxed.ok()) return unsandboxed.status();
  const bool compare = !o.compare_runner.empty();
  std::unique_ptr<Host> other_runner;
  if (compare) {
    absl::StatusOr<std::unique_ptr<Host>> h = CreateBenchHost(true, o.compare_runner);
    if (!h.ok()) return h.status();
    other_runner = *std::move(h);
  }

  // The decode paths, in this order in the arrays below (the last only
  // with a runner to compare); the random chunks run on the first two only.
  enum Side : size_t { kIn, kOut, kUnsandboxed, kCompare, kPaths };
  const size_t sides = compare ? kPaths : kCompare;
  // Per round, per side.
  std::vector<double> fps[kPaths], cpu_ms[kPaths], cli_fps;
  // Per round, the parts of the in-process and sandboxed sides' CPU time.
  std::vector<double> in_caller_cpu, in_other_cpu, out_host_cpu, out_session_cpu, out_other_cpu;
  std::vector<double> ratios, sandbox_costs, cli_ratios;
  std::vector<double> random_in_fps, random_out_fps, random_ratios;
  // Per round, with a runner to compare: the sandboxed side's speed over
  // the compared runner's, and that runner's CPU split and wake-ups.
  std::vector<double> compare_ratios, compare_session_cpu, compare_host_wakeups, chunk_compare_ratios;
  // Over every round, per chunk pair: the speed ratios out of process over
  // in process (sequential and random), and the sandbox's cost.
  std::vector<double> chunk_ratios, chunk_random_ratios, chunk_sandbox_costs;
  auto append = [](std::vector<double>* to, const std::vector<double>& from) {
    to->insert(to->end(), from.begin(), from.end());
  };
  // Per round, the sandboxed side's frames per arena slot, most used first.
  std::vector<std::vector<int64_t>> slot_use;
  // Per round, times the calling thread was scheduled in per frame.
  std::vector<double> in_caller_wakeups, out_host_wakeups;
  // The ffmpeg CLI cannot take turns by chunk: it runs the sequential pass
  // (as `repeats` processes) once before the round's chunks and once after.
  auto cli_pass = [&](SideSum* sum) -> absl::Status {
    for (int r = 0; r < repeats; ++r) {
      absl::StatusOr<double> seconds = TimeFfmpegDecode(path, o.threads, count, video_frames);
      if (!seconds.ok()) return seconds.status();
      sum->seconds += *seconds;
      sum->frames += count;
    }
    return absl::OkStatus();
  };
  // Every side runs the same backend code with the same thread count; what
  // differs is only the path around it. Within a round the sides take
  // turns chunk by chunk (about kChunkSeconds each), so that load which
  // comes and goes on this shared machine over more than a few chunks
  // falls on every side alike, and each ratio is taken within its round;
  // the median over rounds then drops the round a burst spoiled most.
  for (int round = 0; round < o.rounds; ++round) {
    Progress(absl::StrCat(path, ": round ", round + 1, " of ", o.rounds));
    SideSum cli;
    if (absl::Status s = cli_pass(&cli); !s.ok()) return s;
    std::unique_ptr<DecodePath> paths[kPaths];
    {
      absl::StatusOr<std::unique_ptr<DecodePath>> opened[kPaths] = {
          OpenInProcess(path, o.threads, o.in_process_buffers),
          OpenOutOfProcess(**sandboxed, path, o.threads, o.arena_slots),
          OpenOutOfProcess(**unsandboxed, path, o.threads, o.arena_slots),
          compare ? OpenOutOfProcess(*other_runner, path, o.threads, o.arena_slots)
                  : absl::StatusOr<std::unique_ptr<DecodePath>>(nullptr),
      };
      for (size_t side = 0; side < sides; ++side) {
        if (!opened[side].ok()) return opened[side].status();
        paths[side] = *std::move(opened[side]);
      }
    }
    SideSum sums[kPaths];
    if (absl::Status s = TakeTurns(std::span(paths, sides), sequential, round, std::span(sums, sides)); !s.ok()) {
      return s;
    }
    SideSum random_sums[2];
    if (absl::Status s = TakeTurns(std::span(paths, 2), random, round, random_sums); !s.ok()) return s;
    for (std::unique_ptr<DecodePath>& p : paths) p.reset();
    if (absl::Status s = cli_pass(&cli); !s.ok()) return s;

    for (size_t side = 0; side < sides; ++side) {
      fps[side].push_back(sums[side].Fps());
      cpu_ms[side].push_back(sums[side].CpuMsPerFrame());
    }
    in_caller_cpu.push_back(sums[kIn].MsPerFrame(sums[kIn].caller_cpu_seconds));
    in_other_cpu.push_back(sums[kIn].MsPerFrame(sums[kIn].other_cpu_seconds));
    out_host_cpu.push_back(sums[kOut].MsPerFrame(sums[kOut].caller_cpu_seconds));
    out_session_cpu.push_back(sums[kOut].MsPerFrame(sums[kOut].session_cpu_seconds));
    out_other_cpu.push_back(sums[kOut].MsPerFrame(sums[kOut].other_cpu_seconds));
    cli_fps.push_back(cli.Fps());
    slot_use.push_back(sums[kOut].buffers.CountsByRank());
    in_caller_wakeups.push_back(sums[kIn].PerFrame(sums[kIn].caller_timeslices));
    out_host_wakeups.push_back(sums[kOut].PerFrame(sums[kOut].caller_timeslices));
    ratios.push_back(sums[kOut].Fps() / sums[kIn].Fps());
    sandbox_costs.push_back(1 - sums[kOut].Fps() / sums[kUnsandboxed].Fps());
    cli_ratios.push_back(sums[kOut].Fps() / cli.Fps());
    random_in_fps.push_back(random_sums[kIn].Fps());
    random_out_fps.push_back(random_sums[kOut].Fps());
    random_ratios.push_back(random_sums[kOut].Fps() / random_sums[kIn].Fps());
    append(&chunk_ratios, PairedSpeedRatios(sums[kIn].chunk_seconds, sums[kOut].chunk_seconds));
    for (double speed : PairedSpeedRatios(sums[kUnsandboxed].chunk_seconds, sums[kOut].chunk_seconds)) {
      chunk_sandbox_costs.push_back(1 - speed);
    }
    append(&chunk_random_ratios, PairedSpeedRatios(random_sums[kIn].chunk_seconds, random_sums[kOut].chunk_seconds));
    if (compare) {
      compare_ratios.push_back(sums[kOut].Fps() / sums[kCompare].Fps());
      compare_session_cpu.push_back(sums[kCompare].MsPerFrame(sums[kCompare].session_cpu_seconds));
      compare_host_wakeups.push_back(sums[kCompare].PerFrame(sums[kCompare].caller_timeslices));
      append(&chunk_compare_ratios, PairedSpeedRatios(sums[kCompare].chunk_seconds, sums[kOut].chunk_seconds));
    }
  }

  DecodeBenchResult r;
  r.file = path;
  r.codec = m.codec;
  r.width = m.width;
  r.height = m.height;
  r.frames = count;
  r.repeats = repeats;
  r.chunk_frames = chunk_frames;
  r.random_chunk_frames = kRandomChunkIndices;
  r.threads = o.threads;
  r.arena_slots = o.arena_slots;
  r.in_process_buffers = o.in_process_buffers;
  r.rounds = o.rounds;
  r.out_of_process_slot_use = SharesByRank(slot_use);
  r.in_process_caller_wakeups_per_frame = Median(in_caller_wakeups);
  r.out_of_process_host_wakeups_per_frame = Median(out_host_wakeups);
  r.in_process_fps = Median(fps[kIn]);
  r.out_of_process_fps = Median(fps[kOut]);
  r.out_of_process_unsandboxed_fps = Median(fps[kUnsandboxed]);
  r.ffmpeg_cli_fps = Median(cli_fps);
  r.ratio = Median(ratios);
  r.sandbox_cost = Median(sandbox_costs);
  r.cli_ratio = Median(cli_ratios);
  r.in_process_cpu_ms_per_frame = Median(cpu_ms[kIn]);
  r.out_of_process_cpu_ms_per_frame = Median(cpu_ms[kOut]);
  r.out_of_process_host_cpu_ms_per_frame = Median(out_host_cpu);
  r.out_of_process_host_cpu_share =
      r.in_process_cpu_ms_per_frame > 0 ? r.out_of_process_host_cpu_ms_per_frame / r.in_process_cpu_ms_per_frame : 0;
  r.in_process_caller_cpu_ms_per_frame = Median(in_caller_cpu);
  r.in_process_other_cpu_ms_per_frame = Median(in_other_cpu);
  r.out_of_process_session_cpu_ms_per_frame = Median(out_session_cpu);
  r.out_of_process_other_cpu_ms_per_frame = Median(out_other_cpu);
  r.out_of_process_unsandboxed_cpu_ms_per_frame = Median(cpu_ms[kUnsandboxed]);
  r.random_frames = o.random_frames;
  r.random_in_process_fps = Median(random_in_fps);
  r.random_out_of_process_fps = Median(random_out_fps);
  r.random_ratio = Median(random_ratios);
  r.chunk_ratio_quartiles = Quartiles(chunk_ratios);
  r.chunk_random_ratio_quartiles = Quartiles(chunk_random_ratios);
  r.chunk_sandbox_cost_quartiles = Quartiles(chunk_sandbox_costs);
  r.chunk_pairs = static_cast<int>(chunk_ratios.size());
  if (compare) {
    r.compare_runner = o.compare_runner;
    r.compare_runner_fps = Median(fps[kCompare]);
    r.compare_runner_ratio = Median(compare_ratios);
    r.compare_runner_cpu_ms_per_frame = Median(cpu_ms[kCompare]);
    r.compare_runner_session_cpu_ms_per_frame = Median(compare_session_cpu);
    r.compare_runner_host_wakeups_per_frame = Median(compare_host_wakeups);
    r.chunk_compare_runner_ratio_quartiles = Quartiles(chunk_compare_ratios);
  }
  r.round_ratios = ratios;
  r.host_rss_kb_300 = rss.after_300.peak;
  r.host_rss_kb_3000 = rss.after_3000.peak;
  r.host_shared_kb_300 = rss.after_300.shared;
  r.host_shared_kb_3000 = rss.after_3000.shared;
  r.host_private_kb_300 = rss.after_300.rss - rss.after_300.shared;
  r.host_private_kb_3000 = rss.after_3000.rss - rss.after_3000.shared;
  r.targets = {
      {"ratio", absl::StrFormat(">= %.2f", kRatioTarget), r.ratio >= kRatioTarget},
      {"sandbox_cost", absl::StrFormat("< %.2f", kSandboxCostTarget), r.sandbox_cost < kSandboxCostTarget},
      {"random_ratio", absl::StrFormat(">= %.2f", kRatioTarget), r.random_ratio >= kRatioTarget},
      {"out_of_process_host_cpu_share", absl::StrFormat("< %.2f", kHostCpuShareTarget),
       r.out_of_process_host_cpu_share < kHostCpuShareTarget},
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
      if (absl::Status s = MakeBenchVideo(videos.back(), g.width, g.height, std::max(o.frames, 300)); !s.ok()) {
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

}  // namespace codecvisor::bench
