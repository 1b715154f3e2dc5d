// File: backends/cpu/picture_order.h
//
// The display order of H.264 and HEVC pictures read from their slice
// headers, for streams whose container leaves packets without timestamps.
//
// An MPEG program stream (and some transport streams) puts a time on a PES
// packet, not on each picture: where pictures are smaller than a PES
// packet, only the first picture starting in it gets a time, and the
// others have none. With B-frames their display order is not their decode
// order, and the decoder shows them in picture order count (POC) order,
// which FFmpeg's parser reads from each slice header. PlaceUntimedByPictureOrder
// uses it to give each untimed packet the time the frames around it in
// display order say it has.
//
// Not thread-safe; used by one scan.

#ifndef CODECVISOR_BACKENDS_CPU_PICTURE_ORDER_H_
#define CODECVISOR_BACKENDS_CPU_PICTURE_ORDER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "backends/cpu/frame_timeline.h"

extern "C" {
#include <libavcodec/avcodec.h>
}

namespace codecvisor::cpu {

// Reads the picture order count of each packet of one stream, in decode
// order from the stream's start (a count depends on the pictures before
// it).
class PictureOrderReader {
 public:
  // Null where the stream's codec has no picture headers FFmpeg's parser
  // reads here (H.264 and HEVC: counts and types; MPEG-1 and MPEG-2 video:
  // types) or the parser cannot start.
  static std::unique_ptr<PictureOrderReader> ForStream(const AVCodecParameters& par);
  ~PictureOrderReader();
  PictureOrderReader(const PictureOrderReader&) = delete;
  PictureOrderReader& operator=(const PictureOrderReader&) = delete;

  // The picture order count of the picture in `packet` (one whole access
  // unit, as a demuxer returns it); nullopt where none was read (no slice
  // header, or one the parser refused) or the picture is a field.
  std::optional<int64_t> Read(const AVPacket& packet);
  // The coding type of the picture Read last read (AV_PICTURE_TYPE_I, P,
  // B; NONE where it read none).
  int last_type() const { return last_type_; }
  // Whether the picture Read last read is one a decoder can start at (an
  // HEVC IRAP picture, an H.264 IDR or recovery point): 1 yes, 0 no, -1
  // where the parser did not say.
  int last_key() const { return last_key_; }

 private:
  PictureOrderReader(AVCodecParserContext* parser, AVCodecContext* context)
      : parser_(parser), context_(context) {}
  AVCodecParserContext* parser_;
  AVCodecContext* context_;
  int last_type_ = 0;
  int last_key_ = -1;
};

// Gives the packets of `frames` (in decode order) whose pts is unknown
// (`known_pts[i]` false) the time of their place in display order, from
// `poc` (each frame's picture order count, as read above, where one was).
//
// Display order: a picture order count starts again at an IDR picture, so
// a key frame whose count is not above every count since the last such
// start begins a new run; runs follow one another in decode order, and
// within a run frames are shown by count. Packets without a count before
// the first that has one (a capture that starts before its parameter
// sets) come first, and those after the last (a file cut short inside a
// picture's headers) last, in decode order.
//
// The known times kept are the longest run of them that increases in
// display order; the others are misplaced (libavformat can give a PES
// packet's time to two pictures) and are placed like unknown ones, their
// `known_pts` entry set false and their own times added to `moved_pts`
// (when not null). An unknown pts between two kept ones in
// display order is spaced evenly between them; before the first or after
// the last kept one, a frame duration (the packet's, else
// `fallback_duration`) apart.
//
// False, changing nothing, if every pts is known, none is, a packet
// between two with a count has none, a count repeats within a run, more than one known time in 8 is out of place (the
// counts are not display order), or two kept times leave too little room
// for the frames between them.
bool PlaceUntimedByPictureOrder(std::vector<FrameEntry>& frames, std::vector<bool>& known_pts,
                                const std::vector<std::optional<int64_t>>& poc, int64_t fallback_duration,
                                std::vector<int64_t>* moved_pts = nullptr);

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_PICTURE_ORDER_H_
