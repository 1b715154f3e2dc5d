// File: api/rgb_converter.cc

#include "codecvisor/rgb_converter.h"

#include <utility>
#include <vector>

#include "api/absl_interop.h"
#include "api/frame_impl.h"
#include "ipc/messages.h"
#include "media/native_rgb.h"

namespace codecvisor {
namespace {

static_assert(media::NativeRgb::kMostPlanes == ipc::kMaxPlanes);

media::NativeStream Describe(const StreamMetadata& stream) {
  return media::NativeStream{.pixel_format = stream.pixel_format,
                             .width = stream.width,
                             .height = stream.height,
                             .color_space = stream.color_space,
                             .color_range = stream.color_range,
                             .rotation_degrees = stream.rotation_degrees};
}

}  // namespace

static_assert(RgbConverter::kSlack == media::NativeRgb::kSlack);
static_assert(internal::Frame::kReadPadding >= media::NativeRgb::kReadPadding,
              "swscale's loads past a frame's last pixel must stay in its padding");

struct __attribute__((visibility("hidden"))) RgbConverter::Impl {
  explicit Impl(const StreamMetadata& stream)
      : native(Describe(stream)), accepts(media::NativeRgb::Accepts(Describe(stream))) {}
  media::NativeRgb native;
  bool accepts;
};

std::vector<std::string> RgbConverter::Formats() { return media::NativeRgb::Formats(); }

bool RgbConverter::Accepts(const StreamMetadata& stream) { return media::NativeRgb::Accepts(Describe(stream)); }

RgbConverter::RgbConverter(const StreamMetadata& stream) : impl_(std::make_unique<Impl>(stream)) {}
RgbConverter::~RgbConverter() = default;
RgbConverter::RgbConverter(RgbConverter&&) noexcept = default;
RgbConverter& RgbConverter::operator=(RgbConverter&&) noexcept = default;

Status RgbConverter::Convert(const Frame& frame, OutputFormat to, std::span<uint8_t> out) {
  if (impl_ == nullptr) return Status(StatusCode::kFailedPrecondition, "this RgbConverter was moved from");
  if (to != OutputFormat::kRgb24 && to != OutputFormat::kRgb24Planar) {
    return Status(StatusCode::kInvalidArgument, "convert to kRgb24 or kRgb24Planar");
  }
  if (frame.data().empty()) {
    // A default-constructed (or moved-from) Frame: the caller's, not the backend's.
    return Status(StatusCode::kInvalidArgument, "the frame holds no pixels (a default-constructed or moved-from Frame)");
  }
  if (!impl_->accepts) {
    return Status(StatusCode::kDataLoss,
                  "this converter's stream is not one whose frames come native (RgbConverter::Accepts is false "
                  "for it: rotated, or a pixel format not in Formats()): its frames come as RGB already");
  }
  if (frame.format() != OutputFormat::kNative) {
    return Status(StatusCode::kDataLoss, std::string("this ") + OutputFormatName(frame.format()) +
                                             " frame is RGB already: a backend may send RGB for a stream whose "
                                             "frames could come native (check Frame::format() before Convert)");
  }
  // Per frame, on the batch's hot path: ConvertFrame allocates nothing.
  // A Frame's bytes are followed by padding (core/frame.h) for swscale's loads.
  return FromAbsl(impl_->native.ConvertFrame(frame, to == OutputFormat::kRgb24Planar, out));
}

}  // namespace codecvisor
