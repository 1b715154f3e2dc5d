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

// Writes bits most significant first.
class Bits {
 public:
  Bits& Put(uint32_t value, int n) {
    for (int i = n - 1; i >= 0; --i) bits_.push_back((value >> i) & 1);
    return *this;
  }
  std::vector<uint8_t> Bytes() const {
    std::vector<uint8_t> out((bits_.size() + 7) / 8, 0);
    for (size_t i = 0; i < bits_.size(); ++i) out[i / 8] |= bits_[i] << (7 - i % 8);
    return out;
  }

 private:
  std::vector<uint8_t> bits_;
};

// The extradata libxvid writes at 25 fps (its video object layer header
// says vop_time_increment_resolution 25: 5 bits), and the starts of VOPs
// from its packed AVI: a coded I-VOP, and the placeholders after it, one of
// them of type I.
const std::vector<uint8_t> kXvidExtradata = {0x00, 0x00, 0x01, 0xb0, 0xf5, 0x00, 0x00, 0x01, 0xb5, 0x09, 0x00, 0x00,
                                             0x01, 0x00, 0x00, 0x00, 0x01, 0x20, 0x08, 0xbc, 0x04, 0x06, 0x84, 0x00,
                                             0x67, 0x0c, 0x08, 0x10, 0x18, 0x51, 0x8f, 0x00, 0x00, 0x01, 0xb2, 'D',
                                             'i',  'v',  'X',  '5',  '0',  '3',  'b',  '1',  '3',  '9',  '3',  'p'};

TEST(VopTimeIncrementBitsTest, ReadsTheResolutionFromTheVideoObjectLayer) {
  EXPECT_EQ(VopTimeIncrementBits(kXvidExtradata), 5);
  EXPECT_TRUE(HasPackedBitstreamMarker(kXvidExtradata));
  // Every optional field present: a layer identifier, an extended pixel
  // aspect ratio, control parameters with VBV parameters; 30000 needs 15.
  Bits vol;
  vol.Put(0, 1).Put(1, 8).Put(1, 1).Put(2, 4).Put(1, 3).Put(15, 4).Put(12, 8).Put(11, 8);
  vol.Put(1, 1).Put(1, 2).Put(0, 1).Put(1, 1).Put(0x7FFF, 15).Put(1, 1).Put(0x7FFF, 15).Put(1, 1);
  vol.Put(0x7FFF, 15).Put(1, 1).Put(7, 3).Put(0x7FF, 11).Put(1, 1).Put(0x7FFF, 15).Put(1, 1);
  vol.Put(0, 2).Put(1, 1).Put(30000, 16).Put(1, 1);
  EXPECT_EQ(VopTimeIncrementBits(Unit(0x20, vol.Bytes())), 15);
  // A resolution of 1 still takes one bit; 32 takes 5, 33 takes 6.
  for (const auto& [resolution, bits] : std::vector<std::pair<uint32_t, int>>{{1, 1}, {32, 5}, {33, 6}}) {
    Bits plain;
    plain.Put(0, 1).Put(1, 8).Put(0, 1).Put(1, 4).Put(0, 1).Put(0, 2).Put(1, 1).Put(resolution, 16).Put(1, 1);
    EXPECT_EQ(VopTimeIncrementBits(Unit(0x2F, plain.Bytes())), bits) << resolution;
  }
}

TEST(VopTimeIncrementBitsTest, NoLayerHeaderOrACutOneIsZero) {
  EXPECT_EQ(VopTimeIncrementBits({}), 0);
  EXPECT_EQ(VopTimeIncrementBits(Unit(0xB6, {0x10, 0x60})), 0);
  const std::vector<uint8_t> cut(kXvidExtradata.begin(), kXvidExtradata.begin() + 22);
  EXPECT_EQ(VopTimeIncrementBits(cut), 0);
  Bits zero;  // a resolution of 0 is malformed
  zero.Put(0, 1).Put(1, 8).Put(0, 1).Put(1, 4).Put(0, 1).Put(0, 2).Put(1, 1).Put(0, 16).Put(1, 1);
  EXPECT_EQ(VopTimeIncrementBits(Unit(0x20, zero.Bytes())), 0);
}

TEST(FirstVopTest, ReadsTheCodingTypeAndWhetherTheVopIsCoded) {
  const VopStart coded_i = FirstVop(Concat({kXvidExtradata, Unit(0xB6, {0x10, 0x60, 0xAA})}), 5);
  EXPECT_EQ(coded_i.coding_type, kIVop);
  EXPECT_TRUE(coded_i.coded);
  const VopStart placeholder_i = FirstVop(Unit(0xB6, {0x16, 0x4f}), 5);
  EXPECT_EQ(placeholder_i.coding_type, kIVop);
  EXPECT_FALSE(placeholder_i.coded);
  const VopStart placeholder_p = FirstVop(Unit(0xB6, {0x51, 0xcf}), 5);
  EXPECT_EQ(placeholder_p.coding_type, 1);
  EXPECT_FALSE(placeholder_p.coded);
  // Whole seconds before the increment (modulo_time_base 1, 1, 0).
  Bits late;
  late.Put(2, 2).Put(0b110, 3).Put(1, 1).Put(7, 5).Put(1, 1).Put(1, 1);
  const VopStart b = FirstVop(Unit(0xB6, late.Bytes()), 5);
  EXPECT_EQ(b.coding_type, kBVop);
  EXPECT_TRUE(b.coded);
  // A packed packet: its first VOP is the P-VOP, the B-VOP follows.
  EXPECT_EQ(FirstVop(Concat({Unit(0xB6, {0x51, 0xef}), Unit(0xB6, {0x92})}), 5).coding_type, 1);
  EXPECT_EQ(FirstVop(Unit(0xB6, {0xC0}), 0).coding_type, 3);  // S
}

TEST(FirstVopTest, WithoutTheWidthOrTheBitsAVopCountsAsCoded) {
  EXPECT_TRUE(FirstVop(Unit(0xB6, {0x16, 0x4f}), 0).coded);  // the width unknown
  const VopStart cut = FirstVop(Unit(0xB6, {0x16}), 5);      // ends in the increment
  EXPECT_EQ(cut.coding_type, kIVop);
  EXPECT_TRUE(cut.coded);
}

TEST(FirstVopTest, NoVopIsMinusOne) {
  EXPECT_EQ(FirstVop({}, 5).coding_type, -1);
  EXPECT_EQ(FirstVop(Unit(0xB2, Bytes("DivX503b1393p")), 5).coding_type, -1);
  EXPECT_EQ(FirstVop(std::vector<uint8_t>{0, 0, 1, 0xB6}, 5).coding_type, -1);  // cut after the code
  // Beyond the bytes searched.
  std::vector<uint8_t> late(kVopSearchBytes, 0xFF);
  const auto vop = Unit(0xB6, {0x10});
  late.insert(late.end(), vop.begin(), vop.end());
  EXPECT_EQ(FirstVop(late, 5).coding_type, -1);
}

}  // namespace
}  // namespace codecvisor::cpu
