#include "ipc/plane_shapes.h"

namespace codecvisor::ipc {

std::optional<std::vector<PlaneShape>> PlaneShapesOf(absl::string_view f, uint32_t width, uint32_t height) {
  const uint64_t w = width, h = height;
  const uint64_t half_w = (w + 1) / 2, half_h = (h + 1) / 2;
  if (f == "rgb24") return std::vector<PlaneShape>{{3 * w, h}};
  if (f == "rgbp" || f == "yuv444p" || f == "yuvj444p") return std::vector<PlaneShape>{{w, h}, {w, h}, {w, h}};
  if (f == "yuv420p" || f == "yuvj420p") return std::vector<PlaneShape>{{w, h}, {half_w, half_h}, {half_w, half_h}};
  if (f == "yuv422p" || f == "yuvj422p") return std::vector<PlaneShape>{{w, h}, {half_w, h}, {half_w, h}};
  if (f == "nv12" || f == "nv21") return std::vector<PlaneShape>{{w, h}, {2 * half_w, half_h}};
  if (f == "gray") return std::vector<PlaneShape>{{w, h}};
  return std::nullopt;
}

absl::string_view RgbPixelFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kRgb24:
      return "rgb24";
    case OutputFormat::kRgb24Planar:
      return "rgbp";
    case OutputFormat::kNative:
      break;
  }
  return "";
}

}  // namespace codecvisor::ipc
