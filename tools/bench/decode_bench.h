// File: tools/bench/decode_bench.h
//
// `codecvisor-bench decode`: what decoding through a sandboxed backend
// process costs against decoding in process, measured side by side in one
// run, per video:
//
//   in_process_fps                  the cpu backend's code linked in, C ABI
//   out_of_process_fps              Host -> VideoDecoder -> ForEachFrame, sandboxed
//   out_of_process_unsandboxed_fps  the same with the sandbox off
//   ffmpeg_cli_fps                  `ffmpeg -threads T -i FILE -pix_fmt rgb24 -f null -`
//                                   (process start and probing included)
//   ratio = out_of_process / in_process (target >= 0.97),
//   sandbox_cost = 1 - sandboxed / unsandboxed (target < 10%),
//   cli_ratio = out_of_process / ffmpeg_cli (target >= 1),
//   random_ratio: the same ratio for random indices with exact seeks,
//   host_rss_kb_300 / _3000: the host's peak RSS after 300 and 3000 frames,
//   host_private_kb_300 / _3000: its own memory then, the shared frame
//   arena's pages apart (target: no growth),
// and, to read those by, CPU time per frame on each side (out of process,
// the host's part apart): the work done, as opposed to the waiting.
//
// A sequential pass decodes the video's frames in order, repeated in the
// same session until the pass lasts about a second (`repeats`, from one
// in-process pass timed first: 1 at 1080p, ~4 at 360p), so that one
// scheduling burst does not decide a short pass.
//
// The sides take turns. In each round the in-process, sandboxed and
// unsandboxed decoders are opened side by side and kept open; the
// sequential pass is cut into chunks of about 0.1 s (`chunk_frames`), and
// every side decodes chunk 1, then every side chunk 2, and so on, the
// order of the sides rotating by one from chunk to chunk (A B C, B C A,
// C A B: every side takes every place, and none runs twice in a row). Out
// of process each chunk is one request, which continues where the last
// one left the decoder, as in process. Then the in-process and sandboxed
// decoders take turns the same way on the random indices, 5 at a time. A
// load that comes and goes on this shared machine over more than a few
// tenths of a second so falls on every side alike. (Before, each side ran
// whole passes of a second or more in turn, and one burst decided a
// round's ratio by up to 15%.) The ffmpeg CLI, a process per pass, runs
// its pass once before the round's chunks and once after. Each fps figure
// is the median over rounds of the round's fps (all chunks of the side),
// and each ratio the median of the ratios taken within each round (so it
// need not equal the ratio of the median fps). The quartiles of the ratios
// taken per chunk pair (chunk k of one side against chunk k of the other)
// are reported beside them, to show the spread: between the sandboxed and
// unsandboxed decoders, which differ only by the sandbox, that spread is
// the machine's own noise.
//
// Thread-safety: RunDecodeBench runs on the calling thread (the Host adds
// its own); call it once at a time.

#ifndef CODECVISOR_TOOLS_BENCH_DECODE_BENCH_H_
#define CODECVISOR_TOOLS_BENCH_DECODE_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/bench/targets.h"

namespace codecvisor::bench {

// The host's memory is read after this many frames decoded out of
// process, and again after this many.
inline constexpr int64_t kRssFramesFirst = 300;
inline constexpr int64_t kRssFramesLast = 3000;

struct DecodeBenchOptions {
  // The video to measure; empty: generate a 1080p and a 360p H.264 file
  // (testsrc2, libx264, yuv420p) with the ffmpeg CLI in a scratch folder.
  std::string file;
  uint32_t threads = 0;    // decoder threads on every side; 0 lets FFmpeg choose
  int frames = 300;        // decoded per sequential pass (at most the video's)
  int rounds = 5;          // each figure is the median of its rounds (3 swing by 10% here)
  int random_frames = 50;  // random indices per side and round (two passes of half each)
  // Frame slots of each out-of-process decoder (DecoderOptions' default).
  // The in-process side writes every frame into one buffer, which stays in
  // cache; each more slot adds a frame's worth to the cache footprint.
  uint32_t arena_slots = 4;
  // Buffers the in-process side writes its frames into, in turn. 1, the
  // baseline the targets are judged on; as many as the out-of-process side
  // spreads its frames over (out_of_process_slot_use) gives both sides the
  // same cache footprint, so that the ratio shows the channel's own cost
  // (a diagnostic: each more buffer makes the in-process side slower).
  uint32_t in_process_buffers = 1;
  // Another build of the runner (codecvisor-backend) to set against the
  // discovered one: when not empty, a fourth decoder, sandboxed, started
  // through this runner with the same cpu backend library, takes its turns
  // on the sequential chunks beside the other three (compare_runner_*).
  std::string compare_runner;
  uint64_t seed = 20261120;  // of the random indices, the same on both sides
};

struct DecodeBenchResult {
  std::string file;
  std::string codec;
  uint32_t width = 0;
  uint32_t height = 0;
  int64_t frames = 0;               // the video's frames decoded in a sequential pass,
  int repeats = 1;                  // this many times over (so that a pass lasts ~1 s),
  int64_t chunk_frames = 0;         // in chunks of this many frames (~0.1 s)
  int64_t random_chunk_frames = 0;  // random indices per chunk
  uint32_t threads = 0;
  uint32_t arena_slots = 0;
  uint32_t in_process_buffers = 0;
  int rounds = 0;

  double in_process_fps = 0;
  double out_of_process_fps = 0;
  double out_of_process_unsandboxed_fps = 0;
  double ffmpeg_cli_fps = 0;
  double ratio = 0;         // out_of_process_fps / in_process_fps, per round
  double sandbox_cost = 0;  // 1 - out_of_process_fps / out_of_process_unsandboxed_fps, per round
  double cli_ratio = 0;     // out_of_process_fps / ffmpeg_cli_fps, per round
  // CPU time per frame (all threads; out of process the host's and the
  // backend child's together): the work, apart from waiting and from
  // other load on the machine.
  double in_process_cpu_ms_per_frame = 0;
  double out_of_process_cpu_ms_per_frame = 0;
  double out_of_process_host_cpu_ms_per_frame = 0;  // the host's part of it
  // The host's part over a frame's CPU in process: what the host's thread
  // (receiving, claiming, waiting: a spinning or polling wait costs CPU,
  // ipc/wait_policy.h) adds per frame, as a share of decoding it.
  double out_of_process_host_cpu_share = 0;
  // Where that CPU time goes, thread by thread (each the median of its
  // rounds, so the parts need not add up to the medians above exactly):
  // in process, the decode's calling thread (the decode_frame calls:
  // demuxing, sending packets, taking frames, the RGB conversion) and the
  // process's other threads (FFmpeg's frame threads); out of process, the
  // host's thread (the host's part above), the runner's session thread
  // (the same decode_frame calls, plus the channel's work in the child)
  // and the child's other threads (FFmpeg's frame threads, the runner's
  // control thread). From /proc/PID/task/TID/schedstat (nanoseconds) and
  // the runner's session thread name (runner_args.h).
  double in_process_caller_cpu_ms_per_frame = 0;
  double in_process_other_cpu_ms_per_frame = 0;
  double out_of_process_session_cpu_ms_per_frame = 0;
  double out_of_process_other_cpu_ms_per_frame = 0;
  double out_of_process_unsandboxed_cpu_ms_per_frame = 0;
  // The sandboxed side's sequential frames per arena slot, as shares of
  // all of them, most used slot first (summed by rank over the rounds): how
  // far the frames rotate through the arena instead of reusing one warm
  // slot, as the in-process side reuses its one buffer.
  std::vector<double> out_of_process_slot_use;
  // Times the calling thread was scheduled in per sequential frame (median
  // of rounds; /proc/thread-self/schedstat): in process the decode's caller
  // (woken by FFmpeg's frame threads), out of process the host (woken by
  // the backend: fewer than one a frame when cheap frames share a wake-up).
  double in_process_caller_wakeups_per_frame = 0;
  double out_of_process_host_wakeups_per_frame = 0;

  int random_frames = 0;
  double random_in_process_fps = 0;
  double random_out_of_process_fps = 0;
  double random_ratio = 0;
  // Per chunk pair (see above), over every round: the 25th, 50th and 75th
  // percentiles of the paired ratios, and how many pairs there were.
  std::vector<double> chunk_ratio_quartiles;
  std::vector<double> chunk_random_ratio_quartiles;
  std::vector<double> chunk_sandbox_cost_quartiles;
  int chunk_pairs = 0;
  // With DecodeBenchOptions::compare_runner, that runner's side: its fps,
  // the sandboxed side's speed over it (per round, median; above 1: the
  // discovered runner is faster), its CPU time per frame (all, and its
  // session thread's), the host woken per frame, and the per-chunk-pair
  // quartiles of the speed ratio. Empty / 0 without.
  std::string compare_runner;
  double compare_runner_fps = 0;
  double compare_runner_ratio = 0;
  double compare_runner_cpu_ms_per_frame = 0;
  double compare_runner_session_cpu_ms_per_frame = 0;
  double compare_runner_host_wakeups_per_frame = 0;
  std::vector<double> chunk_compare_runner_ratio_quartiles;
  // Each round's `ratio`, in round order (the median above is over these):
  // the spread says how far one figure can be trusted on this machine.
  std::vector<double> round_ratios;

  // The host process's peak RSS (VmHWM, reset before the phase) after 300
  // and after 3000 frames decoded out of process, measured before any
  // in-process decoding in this process.
  int64_t host_rss_kb_300 = 0;
  int64_t host_rss_kb_3000 = 0;
  // Its current RSS (VmRSS) then, in two parts: the shared pages (RssShmem:
  // the frame arena's, the channel's) and the host's own (VmRSS - RssShmem). The arena is a fixed
  // mapping; which of its pages count in the host's RSS depends only on
  // which slots the backend happened to use and the host read (it prefers
  // the lowest free slot, so a slot first needed after 300 frames shows up
  // then). Growth of the host's own memory is what the target judges.
  int64_t host_shared_kb_300 = 0;
  int64_t host_shared_kb_3000 = 0;
  int64_t host_private_kb_300 = 0;
  int64_t host_private_kb_3000 = 0;

  std::vector<TargetCheck> targets;

  std::string ToJson() const;  // one line, no newline
  std::string ToText() const;  // a few lines
};

// Measures every video (the given one, or the two generated ones). Fails
// if a video cannot be made, opened or decoded on some side.
[[nodiscard]] absl::StatusOr<std::vector<DecodeBenchResult>> RunDecodeBench(const DecodeBenchOptions& options);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_DECODE_BENCH_H_
