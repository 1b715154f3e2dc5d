// File: backends/cpu/mpeg4_bitstream_test.cc

#include "backends/cpu/mpeg4_bitstream.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

std::vector<uint8_t> Bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// A start code 00 00 01 `code` followed by `payload`.
std::vector<uint8_t> Unit(uint8_t code, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out = {0, 0, 1, code};
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::vector<uint8_t> Concat(const std::vector<std::vector<uint8_t>>& parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(PackedBitstreamMarkerTest, DivXAndXvidUserDataEndingInPIsPacked) {
  // As libxvid writes it: the DivX marker, then its own.
  const auto header = Concat({Unit(0xB0, {0xF5}), Unit(0xB2, Bytes("DivX503b1393p")),
                              Unit(0xB2, Bytes("XviD0069")), Unit(0xB6, {0x10})});
  EXPECT_TRUE(HasPackedBitstreamMarker(header));
  EXPECT_TRUE(HasPackedBitstreamMarker(Unit(0xB2, Bytes("DivX501Build413p"))));
}

TEST(PackedBitstreamMarkerTest, OtherUserDataIsNot) {
  EXPECT_FALSE(HasPackedBitstreamMarker(Unit(0xB2, Bytes("DivX503b1393"))));   // no letter
  EXPECT_FALSE(HasPackedBitstreamMarker(Unit(0xB2, Bytes("DivX503b1393n"))));  // unpacked
  EXPECT_FALSE(HasPackedBitstreamMarker(Unit(0xB2, Bytes("XviD0069"))));
  EXPECT_FALSE(HasPackedBitstreamMarker(Unit(0xB2, Bytes("Lavc59.37.100"))));
  // The text outside user data does not count.
  EXPECT_FALSE(HasPackedBitstreamMarker(Unit(0xB6, Bytes("DivX503b1393p"))));
  EXPECT_FALSE(HasPackedBitstreamMarker({}));
}

TEST(PackedBitstreamMarkerTest, UserDataEndsAtTheNextStartCode) {
  // The 'p' belongs to the next unit: this marker has no letter.
  const auto bytes = Concat({Unit(0xB2, Bytes("DivX503b1393")), Unit(0xB6, Bytes("p"))});
  EXPECT_FALSE(HasPackedBitstreamMarker(bytes));
  // Cut off mid-text: read to the end, no overrun.
  EXPECT_FALSE(HasPackedBitstreamMarker(Unit(0xB2, Bytes("DivX5"))));
  EXPECT_FALSE(HasPackedBitstreamMarker(std::vector<uint8_t>{0, 0, 1, 0xB2}));
}

TEST(FirstVopCodingTypeTest, ReadsTheTopTwoBitsAfterTheVopStartCode) {
  EXPECT_EQ(FirstVopCodingType(Concat({Unit(0xB0, {0xF5}), Unit(0xB2, Bytes("DivX503b1393p")), Unit(0xB6, {0x10})})),
            kIVop);
  EXPECT_EQ(FirstVopCodingType(Unit(0xB6, {0x50})), 1);  // P
  // A packed packet: its first VOP is the P-VOP, the B-VOP follows.
  EXPECT_EQ(FirstVopCodingType(Concat({Unit(0xB6, {0x51}), Unit(0xB6, {0x92})})), 1);
  EXPECT_EQ(FirstVopCodingType(Unit(0xB6, {0x80})), 2);  // B
  EXPECT_EQ(FirstVopCodingType(Unit(0xB6, {0xC0})), 3);  // S
}

TEST(FirstVopCodingTypeTest, NoVopIsMinusOne) {
  EXPECT_EQ(FirstVopCodingType({}), -1);
  EXPECT_EQ(FirstVopCodingType(Unit(0xB2, Bytes("DivX503b1393p"))), -1);
  EXPECT_EQ(FirstVopCodingType(std::vector<uint8_t>{0, 0, 1, 0xB6}), -1);  // cut after the code
  // Beyond the bytes searched.
  std::vector<uint8_t> late(kVopSearchBytes, 0xFF);
  const auto vop = Unit(0xB6, {0x10});
  late.insert(late.end(), vop.begin(), vop.end());
  EXPECT_EQ(FirstVopCodingType(late), -1);
}

}  // namespace
}  // namespace codecvisor::cpu
