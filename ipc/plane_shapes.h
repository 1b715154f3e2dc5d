// File: ipc/plane_shapes.h
//
// The planes a frame of a pixel format the host knows must have: each
// plane's bytes of pixels a row and its rows, as FFmpeg lays the format
// out. The host checks a backend's layout and frame records against them
// (a plugin that claims yuv420p with chroma rows of 8 bytes for a 64-pixel
// frame is lying, whatever else it gets right). Formats it does not know
// get no shapes: the generic checks of frame_arena.h apply to them alone.
// Pure; thread-safe.

#ifndef CODECVISOR_IPC_PLANE_SHAPES_H_
#define CODECVISOR_IPC_PLANE_SHAPES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/string_view.h"
#include "ipc/messages.h"

namespace codecvisor::ipc {

struct PlaneShape {
  uint64_t row_bytes;  // the least stride
  uint64_t rows;
};

// rgb24, rgbp (planar R, G, B), yuv420p, yuv422p, yuv444p (and their yuvj
// full-range names), nv12, nv21 and gray; nullopt for any other name.
std::optional<std::vector<PlaneShape>> PlaneShapesOf(absl::string_view pixel_format, uint32_t width,
                                                     uint32_t height);

// The pixel format name a frame of an RGB output format carries ("rgb24",
// "rgbp"); an empty name is accepted as it. Nothing for kNative.
absl::string_view RgbPixelFormatName(OutputFormat format);

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_PLANE_SHAPES_H_
