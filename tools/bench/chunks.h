// File: tools/bench/chunks.h
//
// How `bench decode` cuts a workload into chunks that the sides it compares
// take turns on (see decode_bench.h): a chunk is a short run of frames that
// every side decodes once, so that load that comes and goes on the machine
// over more than a few chunks falls on every side alike. Header-only, pure
// functions.

#ifndef CODECVISOR_TOOLS_BENCH_CHUNKS_H_
#define CODECVISOR_TOOLS_BENCH_CHUNKS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace codecvisor::bench {

// Frames decoded in one go, in order: frames [start, stop) (one index range
// request out of process), or, when `indices` is not empty, those indices
// (one index list request).
struct Chunk {
  int64_t start = 0;
  int64_t stop = 0;
  std::vector<int64_t> indices;

  int64_t frames() const { return indices.empty() ? stop - start : static_cast<int64_t>(indices.size()); }
  // The index of the chunk's `i`-th frame, 0 <= i < frames().
  int64_t index(int64_t i) const { return indices.empty() ? start + i : indices[static_cast<size_t>(i)]; }
  friend bool operator==(const Chunk&, const Chunk&) = default;
};

// Frames 0..count-1, `repeats` times over, as ranges of at most
// `chunk_frames` frames (at least 1). No chunk crosses the end of the
// video, so each repeat starts a chunk at frame 0 (the seek back to the
// start falls inside one chunk on every side).
inline std::vector<Chunk> SequentialChunks(int64_t count, int repeats, int64_t chunk_frames) {
  chunk_frames = std::max<int64_t>(chunk_frames, 1);
  std::vector<Chunk> chunks;
  for (int r = 0; r < repeats; ++r) {
    for (int64_t start = 0; start < count; start += chunk_frames) {
      chunks.push_back({.start = start, .stop = std::min(count, start + chunk_frames)});
    }
  }
  return chunks;
}

// `indices` in order, as lists of at most `per_chunk` (at least 1).
inline std::vector<Chunk> ListChunks(std::span<const int64_t> indices, size_t per_chunk) {
  per_chunk = std::max<size_t>(per_chunk, 1);
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < indices.size(); i += per_chunk) {
    const auto first = indices.begin() + static_cast<std::ptrdiff_t>(i);
    const auto last = indices.begin() + static_cast<std::ptrdiff_t>(std::min(indices.size(), i + per_chunk));
    chunks.push_back({.indices = {first, last}});
  }
  return chunks;
}

// The order in which `sides` sides (0..sides-1) decode chunk number `chunk`:
// rotated by one from one chunk to the next (A B C, B C A, C A B, ...), so
// that every side takes every place in turn. With three sides or more no
// side runs twice in a row (which would find its caches warm from itself).
inline std::vector<size_t> RotatedOrder(size_t sides, size_t chunk) {
  std::vector<size_t> order;
  for (size_t i = 0; i < sides; ++i) order.push_back((i + chunk) % sides);
  return order;
}

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_CHUNKS_H_
