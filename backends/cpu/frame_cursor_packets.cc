// File: backends/cpu/frame_cursor_packets.cc
//
// FrameCursor's packets: reading them, naming each after the frame table
// (FrameIndex), and where a seek for a frame goes and whether it landed
// before it.

#include <algorithm>
#include <vector>

#include "backends/cpu/frame_cursor.h"

namespace codecvisor::cpu {
namespace {

// Exact mode: key frames to try before the stream's start.
constexpr int kStartPointsTried = 2;

}  // namespace

bool FrameCursor::ReadPacket() {
  if (!lookahead_.empty()) {
    av_packet_unref(packet_.get());
    av_packet_move_ref(packet_.get(), lookahead_.front().packet.get());
    packet_index_ = lookahead_.front().index;
    lookahead_.pop_front();
    return true;
  }
  return ReadAndName(packet_.get(), &packet_index_);
}

bool FrameCursor::ReadAndName(AVPacket* packet, int64_t* index) {
  *index = -1;
  if (!demuxer_->ReadPacket(packet)) {
    next_order_ = -1;
    return false;
  }
  if (index_ == nullptr) return true;
  if (index_->names_by_dts()) {
    // Its pts is a decode time: named by its dts, and it carries the
    // table's pts to its frame (a packet that makes none, none).
    *index = index_->FindByDts(packet->dts);
    packet->pts = *index >= 0 ? (*index_)[*index].pts : AV_NOPTS_VALUE;
    next_order_ = *index >= 0 ? (*index_)[*index].decode_order + 1 : -1;
    return true;
  }
  if (index_->names_untimed()) {
    // By its own pts where that names one packet, else by its place: the
    // packet after the last one named; either way only a packet of the
    // size the scan saw (after a seek, the first packet can be the tail of
    // a picture, with the time of the next one). Its frame carries the
    // table's pts, and a packet not named none.
    // A packet that makes no frame (FramesMadeFromStart) is known by its
    // place too, and keeps the packets after it named.
    const auto same_size = [&](int64_t i) { return (*index_)[i].size == packet->size; };
    int64_t order = -1;
    if (packet->pts != AV_NOPTS_VALUE && index_->NamesByPts(packet->pts)) {
      const int64_t i = index_->FindPacket(packet->pts, AV_NOPTS_VALUE);
      if (i >= 0 && same_size(i)) *index = i;
    }
    if (*index < 0 && next_order_ >= 0 && next_order_ < index_->packets()) {
      const int64_t i = index_->IndexOfOrder(next_order_);
      if (i >= 0 ? same_size(i) : index_->SizeOfFrameless(next_order_) == packet->size) {
        *index = i;
        order = next_order_;
      }
    }
    if (*index >= 0) order = (*index_)[*index].decode_order;
    packet->pts = *index >= 0 ? (*index_)[*index].pts : AV_NOPTS_VALUE;
    next_order_ = order >= 0 ? order + 1 : -1;
    return true;
  }
  *index = index_->FindPacket(packet->pts, packet->dts);
  next_order_ = *index >= 0 ? (*index_)[*index].decode_order + 1 : -1;
  return true;
}

const AVPacket* FrameCursor::PeekPacket() {
  if (!pending_packet_) {
    if (!ReadPacket()) return nullptr;
    pending_packet_ = true;
  }
  return packet_.get();
}

bool FrameCursor::LandedAtOrBefore(int64_t limit) {
  if (!index_->names_untimed()) {
    if (!ReadPacket()) return false;
    pending_packet_ = true;
    // A packet that makes no frame is known by its time too.
    const int64_t order = packet_index_ >= 0 ? (*index_)[packet_index_].decode_order
                                             : index_->FramelessOrderOf(packet_->pts);
    return order < 0 || order <= limit;
  }
  // Where packets are named by their place, the first ones after a seek
  // may be named by nothing: where the seek landed is told by the first
  // one named, and the packets before it are kept for decoding. None
  // named within kLandingLookahead packets is a landing refused.
  for (size_t k = 0; k < kLandingLookahead; ++k) {
    Lookahead read{MakePacket(), -1};
    if (!ReadAndName(read.packet.get(), &read.index)) return false;
    lookahead_.push_back(std::move(read));
    const int64_t i = lookahead_.back().index;
    if (i >= 0) return (*index_)[i].decode_order <= limit;
  }
  return false;
}

std::vector<int64_t> FrameCursor::SeekTimestamps(int64_t index, bool before_tie) const {
  std::vector<int64_t> out;
  for (int64_t start : index_->StartPoints(index, kStartPointsTried)) {
    const FrameEntry& key = (*index_)[start];
    if (before_tie && key.pts >= (*index_)[index].pts) continue;
    // The stream's first packet: its earliest timestamp reaches it in any
    // container (MPEG program streams seek by dts, so the key frame's pts
    // lands on the packet after it).
    if (key.decode_order == 0) break;
    // A key frame without a time of its own (named by picture order): the
    // time of a packet before it, which a seek by time reaches.
    if (key.untimed) {
      const int64_t before = index_->TimedBefore(key.decode_order);
      if (before != AV_NOPTS_VALUE) {
        out.push_back(before);
        continue;
      }
    }
    out.push_back(key.pts);
    if (key.dts != AV_NOPTS_VALUE && key.dts < key.pts) out.push_back(key.dts);
  }
  out.push_back(index_->earliest_timestamp());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace codecvisor::cpu
