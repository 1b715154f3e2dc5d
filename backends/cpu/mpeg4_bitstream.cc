// File: backends/cpu/mpeg4_bitstream.cc

#include "backends/cpu/mpeg4_bitstream.h"

#include <algorithm>
#include <cstdio>

namespace codecvisor::cpu {

namespace {

constexpr uint8_t kUserDataCode = 0xB2;
constexpr uint8_t kVopCode = 0xB6;

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

int FirstVopCodingType(std::span<const uint8_t> packet) {
  const std::span<const uint8_t> head = packet.first(std::min(packet.size(), kVopSearchBytes));
  const size_t at = AfterStartCode(head, 0, kVopCode);
  if (at >= head.size()) return -1;
  return head[at] >> 6;
}

}  // namespace codecvisor::cpu
