// File: ipc/ring.h
//
// A single-producer single-consumer ring of length-prefixed records in the
// shared region. Each side keeps its own index privately and only stores it
// to shared memory; the other side's index is loaded once per call and
// checked, because the peer may have written anything there. Not
// thread-safe: one writer thread and one reader thread per ring.

#ifndef CODECVISOR_IPC_RING_H_
#define CODECVISOR_IPC_RING_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "capnp/common.h"
#include "kj/array.h"
#include "ipc/region.h"

namespace codecvisor::ipc {

// Largest record payload: bounds the host's copy-out buffer whatever length a
// peer writes. A batch of frame references is a few KiB.
inline constexpr uint64_t kMaxMessageBytes = 1 << 20;

// Bytes a payload of `n` bytes takes in the ring: an 8-byte header, padded.
constexpr uint64_t RecordBytes(uint64_t n) { return 8 + ((n + 7) & ~uint64_t{7}); }

class RingWriter {
 public:
  RingWriter(RingControl* control, uint8_t* data, uint64_t capacity)
      : control_(control), data_(data), capacity_(capacity) {}

  // Largest payload this ring takes.
  uint64_t max_payload() const;
  // True if a payload of `n` bytes fits now.
  bool HasRoomFor(uint64_t n) const;
  // Appends one record and rings the data doorbell (with `wake` false, only
  // advances it: see AdvanceDoorbell). kResourceExhausted if it does not fit
  // now (wait on space_bell and retry); kInvalidArgument if it never could;
  // kDataLoss if the consumer's index is impossible.
  [[nodiscard]] absl::Status Write(std::span<const uint8_t> payload, bool wake = true);

  RingControl* control() const { return control_; }

 private:
  // Loads the consumer's head once; error if it is not within our tail.
  absl::StatusOr<uint64_t> LoadHead() const;

  RingControl* control_;
  uint8_t* data_;
  uint64_t capacity_;
  uint64_t tail_ = 0;  // private copy; the shared one is only ever stored
};

class RingReader {
 public:
  RingReader(RingControl* control, uint8_t* data, uint64_t capacity)
      : control_(control), data_(data), capacity_(capacity) {}

  // True if the producer has published bytes we have not read.
  bool HasData() const;
  // Copies the next record's payload out of shared memory into word-aligned
  // private memory, frees its ring space and rings the space doorbell.
  // An empty array if there is none. kDataLoss if the producer wrote an
  // impossible index or record header: the ring is unusable after that.
  [[nodiscard]] absl::StatusOr<kj::Array<capnp::word>> Read();

  RingControl* control() const { return control_; }

 private:
  void CopyOut(uint64_t from, uint8_t* to, uint64_t n) const;

  RingControl* control_;
  uint8_t* data_;
  uint64_t capacity_;
  uint64_t head_ = 0;  // private copy
};

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_RING_H_
