#include "ipc/ring.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace codecvisor::ipc {

uint64_t RingWriter::max_payload() const {
  return std::min<uint64_t>(kMaxMessageBytes, capacity_ / 2 - 8);
}

absl::StatusOr<uint64_t> RingWriter::LoadHead() const {
  const uint64_t head = control_->head.load(std::memory_order_acquire);
  if (head > tail_ || tail_ - head > capacity_) {
    return absl::DataLossError(
        absl::StrCat("ring consumer index ", head, " is impossible for producer index ", tail_));
  }
  return head;
}

bool RingWriter::HasRoomFor(uint64_t n) const {
  absl::StatusOr<uint64_t> head = LoadHead();
  // An impossible head reads as "room", so that Write() reports it.
  return !head.ok() || capacity_ - (tail_ - *head) >= RecordBytes(n);
}

absl::Status RingWriter::Write(std::span<const uint8_t> payload, bool wake) {
  if (payload.size() > max_payload()) {
    return absl::InvalidArgumentError(absl::StrCat("message of ", payload.size(),
                                                   " bytes exceeds the ring's limit of ", max_payload()));
  }
  absl::StatusOr<uint64_t> head = LoadHead();
  if (!head.ok()) return head.status();
  const uint64_t need = RecordBytes(payload.size());
  if (capacity_ - (tail_ - *head) < need) return absl::ResourceExhaustedError("ring full");

  uint8_t record_header[8];
  const uint32_t len = static_cast<uint32_t>(payload.size());
  const uint32_t check = ~len;
  std::memcpy(record_header, &len, 4);
  std::memcpy(record_header + 4, &check, 4);
  auto put = [&](uint64_t at, const uint8_t* from, uint64_t n) {
    if (n == 0) return;  // an empty payload may have no data pointer at all
    const uint64_t pos = at & (capacity_ - 1);
    const uint64_t first = std::min(n, capacity_ - pos);
    std::memcpy(data_ + pos, from, first);
    std::memcpy(data_, from + first, n - first);
  };
  put(tail_, record_header, 8);
  put(tail_ + 8, payload.data(), payload.size());
  tail_ += need;
  control_->tail.store(tail_, std::memory_order_release);
  if (wake) {
    RingDoorbell(&control_->data_bell);
  } else {
    AdvanceDoorbell(&control_->data_bell);
  }
  return absl::OkStatus();
}

bool RingReader::HasData() const {
  return control_->tail.load(std::memory_order_acquire) != head_;
}

void RingReader::CopyOut(uint64_t from, uint8_t* to, uint64_t n) const {
  const uint64_t pos = from & (capacity_ - 1);
  const uint64_t first = std::min(n, capacity_ - pos);
  std::memcpy(to, data_ + pos, first);
  std::memcpy(to + first, data_, n - first);
}

absl::StatusOr<kj::Array<capnp::word>> RingReader::Read() {
  // SECURITY: `tail` and the record header are each read from shared memory
  // exactly once; every later decision uses the private copies.
  const uint64_t tail = control_->tail.load(std::memory_order_acquire);
  if (tail == head_) return kj::Array<capnp::word>();
  if (tail < head_ || tail - head_ > capacity_) {
    return absl::DataLossError(
        absl::StrCat("ring producer index ", tail, " is impossible after consumer index ", head_));
  }
  const uint64_t available = tail - head_;
  if (available < 8) return absl::DataLossError("ring holds a partial record header");
  uint32_t header[2];
  CopyOut(head_, reinterpret_cast<uint8_t*>(header), 8);
  const uint32_t len = header[0];
  if (header[1] != ~len) {
    return absl::DataLossError(absl::StrCat("ring record header is corrupt (length ", len, ")"));
  }
  if (len > kMaxMessageBytes || RecordBytes(len) > available) {
    return absl::DataLossError(absl::StrCat("ring record claims ", len, " bytes; ", available - 8,
                                            " are published and at most ", kMaxMessageBytes,
                                            " allowed"));
  }
  if (len % sizeof(capnp::word) != 0) {
    return absl::DataLossError(absl::StrCat("ring record of ", len, " bytes is not whole words"));
  }
  auto words = kj::heapArray<capnp::word>(len / sizeof(capnp::word));
  CopyOut(head_ + 8, reinterpret_cast<uint8_t*>(words.begin()), len);
  head_ += RecordBytes(len);
  control_->head.store(head_, std::memory_order_release);
  RingDoorbell(&control_->space_bell);
  if (len == 0) return absl::DataLossError("ring record is empty");
  return words;
}

}  // namespace codecvisor::ipc
