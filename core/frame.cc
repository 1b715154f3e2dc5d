#include "core/frame.h"

#include <algorithm>

namespace codecvisor::internal {

Frame::Frame(ipc::FrameLease lease) : ref_(lease.ref()), lease_(std::move(lease)) {
  // Plane offsets become relative to the frame's own first byte; validated
  // to lie inside [offset, offset + size) when the lease was claimed.
  for (ipc::Plane& p : ref_.planes) p.offset -= ref_.offset;
  ref_.offset = 0;
}

std::span<const uint8_t> Frame::data() const {
  if (lease_.valid()) return lease_.bytes();
  return std::span<const uint8_t>(owned_).first(owned_.size() - std::min(owned_.size(), kReadPadding));
}

void Frame::Own(std::span<const uint8_t> bytes) {
  owned_.assign(bytes.size() + kReadPadding, 0);
  std::copy(bytes.begin(), bytes.end(), owned_.begin());
}

std::span<const uint8_t> Frame::plane(size_t i) const {
  const ipc::Plane& p = ref_.planes[i];
  return data().subspan(p.offset, uint64_t{p.stride} * p.rows);
}

Frame Frame::CopyOut() const {
  Frame copy;
  copy.ref_ = ref_;
  copy.Own(data());
  return copy;
}

void Frame::Detach() {
  if (!lease_.valid()) return;
  Own(lease_.bytes());
  lease_.Reset();
}

}  // namespace codecvisor::internal
