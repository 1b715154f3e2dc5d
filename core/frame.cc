#include "core/frame.h"

namespace codecvisor::internal {

Frame::Frame(ipc::FrameLease lease) : ref_(lease.ref()), lease_(std::move(lease)) {
  // Plane offsets become relative to the frame's own first byte; validated
  // to lie inside [offset, offset + size) when the lease was claimed.
  for (ipc::Plane& p : ref_.planes) p.offset -= ref_.offset;
  ref_.offset = 0;
}

std::span<const uint8_t> Frame::data() const {
  if (lease_.valid()) return lease_.bytes();
  return owned_;
}

std::span<const uint8_t> Frame::plane(size_t i) const {
  const ipc::Plane& p = ref_.planes[i];
  return data().subspan(p.offset, uint64_t{p.stride} * p.rows);
}

Frame Frame::CopyOut() const {
  Frame copy;
  copy.ref_ = ref_;
  auto bytes = data();
  copy.owned_.assign(bytes.begin(), bytes.end());
  return copy;
}

void Frame::Detach() {
  if (!lease_.valid()) return;
  auto bytes = lease_.bytes();
  owned_.assign(bytes.begin(), bytes.end());
  lease_.Reset();
}

}  // namespace codecvisor::internal
