#include "codecvisor/frame.h"

#include <unistd.h>

#include <utility>

#include "api/convert.h"
#include "api/frame_impl.h"
#include "api/inherited.h"

namespace codecvisor {

Frame::Frame() : impl_(std::make_unique<Impl>()) {}
Frame::Frame(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
namespace {

// Whether destroying `impl` would give an arena slot back to a parent
// process's decoder (a frame inherited across fork() still on its slot):
// the slot's release would be written into the parent's channel.
template <typename Impl>
bool ParentsSlot(const std::unique_ptr<Impl>& impl) {
  return impl != nullptr && impl->owner != getpid() && impl->frame.shared();
}

}  // namespace

Frame::~Frame() {
  if (ParentsSlot(impl_)) api::LeaveInherited(impl_);  // the parent gives it back
}
Frame::Frame(Frame&& other) noexcept = default;
Frame& Frame::operator=(Frame&& other) noexcept {
  if (this != &other) {
    if (ParentsSlot(impl_)) api::LeaveInherited(impl_);
    impl_ = std::move(other.impl_);
  }
  return *this;
}

const Frame::Impl& Frame::impl() const {
  static const Impl* const empty = new Impl();
  return impl_ != nullptr ? *impl_ : *empty;
}

uint32_t Frame::width() const { return impl().frame.width(); }
uint32_t Frame::height() const { return impl().frame.height(); }
OutputFormat Frame::format() const { return api::FromIpc(impl().frame.format()); }
const std::string& Frame::pixel_format() const { return impl().frame.pixel_format(); }
int64_t Frame::index() const { return impl().frame.index(); }
int64_t Frame::pts() const { return impl().frame.pts(); }
double Frame::pts_seconds() const { return impl().frame.pts_seconds(); }
double Frame::duration_seconds() const { return impl().frame.duration_seconds(); }
bool Frame::key_frame() const { return impl().frame.key_frame(); }
size_t Frame::num_planes() const { return impl().frame.num_planes(); }
std::span<const uint8_t> Frame::plane(size_t i) const {
  return i < num_planes() ? impl().frame.plane(i) : std::span<const uint8_t>();
}
uint32_t Frame::stride(size_t i) const { return i < num_planes() ? impl().frame.stride(i) : 0; }
std::span<const uint8_t> Frame::data() const { return impl().frame.data(); }
bool Frame::shared() const { return impl().frame.shared(); }

Frame Frame::CopyOut() const { return Frame(std::make_unique<Impl>(impl().frame.CopyOut())); }

void Frame::Detach() {
  if (ParentsSlot(impl_)) {
    // Copied, the slot left to the parent.
    auto copy = std::make_unique<Impl>(impl_->frame.CopyOut());
    api::LeaveInherited(impl_);
    impl_ = std::move(copy);
    return;
  }
  if (impl_ != nullptr) impl_->frame.Detach();
}

}  // namespace codecvisor
