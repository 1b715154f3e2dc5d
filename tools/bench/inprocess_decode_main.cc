// `codecvisor-decode-inprocess FILE --frames N [--threads T] [--buffers B]`:
// the baseline of the Python bench's "C++ in-process decoder" figures.
// Decodes frames [0, N) of FILE to RGB24 with the cpu backend's own code
// linked into this process (no sandbox, no channel), into B frame buffers
// taken in turn, in one region allocated as the Python package allocates a
// batch (huge pages, populated). With B = N every frame is kept, as a batch
// keeps them: the job the Python bench compares with. B = 1 keeps one
// buffer warm: the decoder's own cost, with no memory to fill. It prints
// one JSON object: {"frames": N, "seconds": S, "cpu_seconds": U,
// "checksum": C}, where S covers opening the decoder, allocating the
// buffers and decoding, not this process's start nor freeing the decoder
// and buffers after, and U is the CPU time of every thread of this process
// over S. Before the clock starts it opens the decoder
// once, buffers included, and closes it (--no-warm-up: not), so that the
// timed buffers are memory this process has had before, as a long-running
// process's batches are after its first: on a VM the first use of fresh
// memory can cost seconds per GB, which would charge the baseline for this
// process being new. Exit 1 with one line on stderr if decoding fails.

#include <cstdint>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tools/bench/chunks.h"
#include "tools/bench/cpu_time.h"
#include "tools/bench/decode_paths.h"

int main(int argc, char** argv) {
  using namespace codecvisor::bench;
  CLI::App app{"codecvisor-decode-inprocess: decode frames [0, N) of a video in this process, timed"};
  std::string file;
  int64_t frames = 0;
  uint32_t threads = 1;
  uint32_t buffers = 1;
  bool warm_up = true;
  app.add_option("file", file, "the video")->required()->check(CLI::ExistingFile);
  app.add_option("--frames", frames, "frames to decode, from frame 0")->required()->check(CLI::Range(1, 100'000));
  app.add_option("--threads", threads, "decoder threads; 0 lets FFmpeg choose");
  app.add_option("--buffers", buffers, "frame buffers, taken in turn")->check(CLI::Range(1, 100'000));
  app.add_flag("--warm-up,!--no-warm-up", warm_up, "open (and allocate) once before the timed run; default on");
  CLI11_PARSE(app, argc, argv);

  if (warm_up) {
    if (absl::Status s = OpenInProcess(file, threads, buffers).status(); !s.ok()) {
      std::cerr << "codecvisor-decode-inprocess: " << s.message() << "\n";
      return 1;
    }
  }
  const absl::Time start = absl::Now();
  const double cpu_start = SelfCpuSeconds();
  absl::StatusOr<std::unique_ptr<DecodePath>> decoder = OpenInProcess(file, threads, buffers);
  if (!decoder.ok()) {
    std::cerr << "codecvisor-decode-inprocess: " << decoder.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<ChunkTiming> timing = (*decoder)->Decode(Chunk{.start = 0, .stop = frames});
  if (!timing.ok()) {
    std::cerr << "codecvisor-decode-inprocess: " << timing.status().message() << "\n";
    return 1;
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const double cpu_seconds = SelfCpuSeconds() - cpu_start;
  std::cout << "{\"frames\": " << timing->frames << ", \"seconds\": " << seconds << ", \"cpu_seconds\": "
            << cpu_seconds << ", \"checksum\": " << timing->checksum << "}\n";
  return 0;
}
