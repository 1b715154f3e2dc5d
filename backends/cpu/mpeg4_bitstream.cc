// File: backends/cpu/mpeg4_bitstream.cc

#include "backends/cpu/mpeg4_bitstream.h"

#include <algorithm>
#include <cstdio>

namespace codecvisor::cpu {

namespace {

constexpr uint8_t kUserDataCode = 0xB2;
constexpr uint8_t kVopCode = 0xB6;
constexpr uint8_t kVolCodes = 0x20;    // video_object_layer_start_code: 0x20..0x2F
constexpr uint32_t kExtendedPar = 15;  // aspect_ratio_info: the ratio follows
constexpr uint32_t kGrayscaleShape = 3;
// vbv_parameters: bit rate, buffer size and occupancy in halves, with
// their marker bits.
constexpr size_t kVbvParameterBits = 15 + 1 + 15 + 1 + 15 + 1 + 3 + 11 + 1 + 15 + 1;

// Reads bits most significant first; past the end every read is 0 and
// ok() false.
class BitReader {
 public:
  explicit BitReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint32_t Read(size_t n) {
    uint32_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      if (bit_ >= bytes_.size() * 8) {
        ok_ = false;
        return 0;
      }
      v = (v << 1) | ((bytes_[bit_ / 8] >> (7 - bit_ % 8)) & 1);
      ++bit_;
    }
    return v;
  }
  void Skip(size_t n) {
    if (bit_ + n > bytes_.size() * 8) ok_ = false;
    bit_ = std::min(bit_ + n, bytes_.size() * 8);
  }
  bool ok() const { return ok_; }

 private:
  std::span<const uint8_t> bytes_;
  size_t bit_ = 0;
  bool ok_ = true;
};

// The position just after the next start code 00 00 01 `code` at or after
// `from`, or bytes.size().
size_t AfterStartCode(std::span<const uint8_t> bytes, size_t from, uint8_t code) {
  for (size_t i = from; i + 4 <= bytes.size(); ++i) {
    if (bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1 && bytes[i + 3] == code) return i + 4;
  }
  return bytes.size();
}

// One user data field's text: up to the next start code prefix (two zero
// bytes) or 255 bytes, as a C string for sscanf.
bool IsPackedMarker(std::span<const uint8_t> bytes, size_t at) {
  char text[256] = {};
  size_t n = 0;
  while (at + n < bytes.size() && n + 1 < sizeof(text)) {
    if (bytes[at + n] == 0 && (at + n + 1 >= bytes.size() || bytes[at + n + 1] == 0)) break;
    text[n] = static_cast<char>(bytes[at + n]);
    ++n;
  }
  int version = 0, build = 0;
  char last = 0;
  int fields = std::sscanf(text, "DivX%dBuild%d%c", &version, &build, &last);
  if (fields < 2) fields = std::sscanf(text, "DivX%db%d%c", &version, &build, &last);
  return fields == 3 && last == 'p';
}

}  // namespace

bool HasPackedBitstreamMarker(std::span<const uint8_t> bytes) {
  for (size_t at = AfterStartCode(bytes, 0, kUserDataCode); at < bytes.size();
       at = AfterStartCode(bytes, at, kUserDataCode)) {
    if (IsPackedMarker(bytes, at)) return true;
  }
  return false;
}

int VopTimeIncrementBits(std::span<const uint8_t> bytes) {
  size_t at = bytes.size();
  for (size_t i = 0; i + 4 <= bytes.size(); ++i) {
    if (bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1 && (bytes[i + 3] & 0xF0) == kVolCodes) {
      at = i + 4;
      break;
    }
  }
  BitReader r(bytes.subspan(std::min(at, bytes.size())));
  r.Skip(1 + 8);  // random_accessible_vol, video_object_type_indication
  int verid = 1;
  if (r.Read(1) != 0) {  // is_object_layer_identifier
    verid = static_cast<int>(r.Read(4));
    r.Skip(3);  // video_object_layer_priority
  }
  if (r.Read(4) == kExtendedPar) r.Skip(8 + 8);
  if (r.Read(1) != 0) {  // vol_control_parameters
    r.Skip(2 + 1);       // chroma_format, low_delay
    if (r.Read(1) != 0) r.Skip(kVbvParameterBits);
  }
  const uint32_t shape = r.Read(2);
  if (shape == kGrayscaleShape && verid != 1) r.Skip(4);  // video_object_layer_shape_extension
  r.Skip(1);                                              // marker_bit
  const uint32_t resolution = r.Read(16);
  if (!r.ok() || resolution == 0) return 0;
  int bits = 1;
  while ((uint32_t{1} << bits) < resolution) ++bits;
  return bits;
}

VopStart FirstVop(std::span<const uint8_t> packet, int time_increment_bits) {
  const std::span<const uint8_t> head = packet.first(std::min(packet.size(), kVopSearchBytes));
  const size_t at = AfterStartCode(head, 0, kVopCode);
  VopStart vop;
  if (at >= head.size()) return vop;
  BitReader r(packet.subspan(at));
  vop.coding_type = static_cast<int>(r.Read(2));
  if (time_increment_bits <= 0) return vop;
  while (r.ok() && r.Read(1) != 0) {  // modulo_time_base: whole seconds, in ones
  }
  r.Skip(1);  // marker_bit
  r.Skip(static_cast<size_t>(time_increment_bits));
  r.Skip(1);  // marker_bit
  const uint32_t coded = r.Read(1);
  if (r.ok()) vop.coded = coded != 0;
  return vop;
}

}  // namespace codecvisor::cpu
