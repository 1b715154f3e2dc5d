// File: backends/cpu/picture_order.cc

#include "backends/cpu/picture_order.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <limits>
#include <numeric>

#include "backends/cpu/av_util.h"

namespace codecvisor::cpu {

std::unique_ptr<PictureOrderReader> PictureOrderReader::ForStream(const AVCodecParameters& par) {
  if (par.codec_id != AV_CODEC_ID_H264 && par.codec_id != AV_CODEC_ID_HEVC &&
      par.codec_id != AV_CODEC_ID_MPEG1VIDEO && par.codec_id != AV_CODEC_ID_MPEG2VIDEO) {
    return nullptr;
  }
  AVCodecParserContext* parser = av_parser_init(par.codec_id);
  if (parser == nullptr) return nullptr;
  AVCodecContext* context = avcodec_alloc_context3(nullptr);
  // The extradata carries the parameter sets of streams that do not repeat
  // them in band (H.264 in MP4's avcC form).
  if (context == nullptr || avcodec_parameters_to_context(context, &par) < 0) {
    avcodec_free_context(&context);
    av_parser_close(parser);
    return nullptr;
  }
  // Each packet is one whole access unit: no splitting, no frame of delay.
  parser->flags |= PARSER_FLAG_COMPLETE_FRAMES;
  return std::unique_ptr<PictureOrderReader>(new PictureOrderReader(parser, context));
}

PictureOrderReader::~PictureOrderReader() {
  av_parser_close(parser_);
  avcodec_free_context(&context_);
}

std::optional<int64_t> PictureOrderReader::Read(const AVPacket& packet) {
  last_type_ = AV_PICTURE_TYPE_NONE;
  last_key_ = -1;
  if (packet.data == nullptr || packet.size <= 0) return std::nullopt;
  // The parser leaves the count and type as they were when it reads no
  // picture header.
  parser_->output_picture_number = INT_MIN;
  parser_->pict_type = AV_PICTURE_TYPE_NONE;
  parser_->key_frame = -1;
  uint8_t* out = nullptr;
  int out_size = 0;
  const int used = av_parser_parse2(parser_, context_, &out, &out_size, packet.data, packet.size, AV_NOPTS_VALUE,
                                    AV_NOPTS_VALUE, 0);
  if (used < 0 || out_size <= 0) return std::nullopt;
  last_type_ = parser_->pict_type;
  last_key_ = parser_->key_frame;
  if (parser_->output_picture_number == INT_MIN) return std::nullopt;  // MPEG-1/2 have none
  // An H.264 field is half a frame the decoder shows: counts of fields are
  // not one per frame. (An HEVC picture is a frame to the decoder, which
  // shows each field as one; its parser tells the field from the SEI.)
  if (context_->codec_id == AV_CODEC_ID_H264 &&
      (parser_->picture_structure == AV_PICTURE_STRUCTURE_TOP_FIELD ||
       parser_->picture_structure == AV_PICTURE_STRUCTURE_BOTTOM_FIELD)) {
    return std::nullopt;
  }
  return parser_->output_picture_number;
}

namespace {

int64_t DurationOf(const FrameEntry& f, int64_t fallback_duration) {
  return f.duration > 0 ? f.duration : std::max<int64_t>(fallback_duration, 1);
}

}  // namespace

bool PlaceUntimedByPictureOrder(std::vector<FrameEntry>& frames, std::vector<bool>& known_pts,
                                const std::vector<std::optional<int64_t>>& poc, int64_t fallback_duration,
                                std::vector<int64_t>* moved_pts) {
  const size_t n = frames.size();
  if (n == 0 || known_pts.size() != n || poc.size() != n) return false;
  if (std::all_of(known_pts.begin(), known_pts.end(), [](bool k) { return k; })) return false;
  size_t first = 0, last = n;  // the packets with a count: [first, last)
  while (first < n && !poc[first].has_value()) ++first;
  while (last > first && !poc[last - 1].has_value()) --last;
  if (first == last) return false;
  // Runs of one picture order count: a key frame at or below the run's
  // highest count starts the next. Packets without a count before the
  // first with one, and after the last, are runs of their own, in decode
  // order.
  std::vector<int64_t> run(n), count(n);
  int64_t current = 0;
  int64_t highest = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < n; ++i) {
    if (i < first || i >= last) {
      run[i] = i < first ? -1 : std::numeric_limits<int64_t>::max();
      count[i] = static_cast<int64_t>(i);
      continue;
    }
    if (!poc[i].has_value()) return false;
    if (i > first && frames[i].key && *poc[i] <= highest) {
      ++current;
      highest = std::numeric_limits<int64_t>::min();
    }
    run[i] = current;
    count[i] = *poc[i];
    highest = std::max(highest, *poc[i]);
  }
  std::vector<size_t> shown(n);  // decode positions in display order
  std::iota(shown.begin(), shown.end(), size_t{0});
  std::sort(shown.begin(), shown.end(), [&](size_t a, size_t b) {
    return run[a] != run[b] ? run[a] < run[b] : count[a] != count[b] ? count[a] < count[b] : a < b;
  });
  for (size_t k = 1; k < n; ++k) {
    if (run[shown[k]] == run[shown[k - 1]] && count[shown[k]] == count[shown[k - 1]]) return false;
  }
  // The known times kept: the longest run of them that increases in
  // display order (patience sorting); the others are misplaced.
  std::vector<size_t> with_pts;  // places in `shown`
  for (size_t k = 0; k < n; ++k) {
    if (known_pts[shown[k]]) with_pts.push_back(k);
  }
  if (with_pts.empty()) return false;
  std::vector<size_t> tails;  // tails[len - 1]: the position in with_pts ending the best run of len
  std::vector<ptrdiff_t> before(with_pts.size(), -1);
  const auto pts_at = [&](size_t j) { return frames[shown[with_pts[j]]].pts; };
  for (size_t j = 0; j < with_pts.size(); ++j) {
    const auto it = std::lower_bound(tails.begin(), tails.end(), pts_at(j),
                                     [&](size_t t, int64_t value) { return pts_at(t) < value; });
    if (it != tails.begin()) before[j] = static_cast<ptrdiff_t>(*(it - 1));
    if (it == tails.end()) {
      tails.push_back(j);
    } else {
      *it = j;
    }
  }
  // More than one known time in 8 out of place: the counts are not display order.
  if (tails.size() * 8 < with_pts.size() * 7) return false;
  std::vector<size_t> known;  // places in `shown` of the times kept, ascending
  for (ptrdiff_t j = static_cast<ptrdiff_t>(tails.back()); j >= 0; j = before[j]) known.push_back(with_pts[j]);
  std::reverse(known.begin(), known.end());
  std::vector<int64_t> placed(n, 0);
  // Before the first known pts: one duration apart, back from it.
  for (size_t k = known.front(); k-- > 0;) {
    placed[k] = SaturatingSub(k + 1 == known.front() ? frames[shown[k + 1]].pts : placed[k + 1],
                              DurationOf(frames[shown[k]], fallback_duration));
  }
  // Between two known ones: evenly spaced, each after the one before.
  for (size_t j = 0; j + 1 < known.size(); ++j) {
    const size_t a = known[j], b = known[j + 1];
    if (b - a < 2) continue;
    const __int128 from = frames[shown[a]].pts;
    const __int128 span = static_cast<__int128>(frames[shown[b]].pts) - from;
    const __int128 steps = static_cast<__int128>(b - a);
    if (span < steps) return false;  // no room for a distinct time each
    for (size_t k = a + 1; k < b; ++k) {
      placed[k] = static_cast<int64_t>(from + span * static_cast<__int128>(k - a) / steps);
    }
  }
  // After the last known one: one duration apart, on from it.
  for (size_t k = known.back() + 1; k < n; ++k) {
    const int64_t previous = k - 1 == known.back() ? frames[shown[k - 1]].pts : placed[k - 1];
    placed[k] = SaturatingAdd(previous, DurationOf(frames[shown[k - 1]], fallback_duration));
  }
  std::vector<bool> kept(n, false);
  for (size_t k : known) kept[k] = true;
  for (size_t k = 0; k < n; ++k) {
    if (kept[k]) continue;
    if (moved_pts != nullptr && known_pts[shown[k]]) moved_pts->push_back(frames[shown[k]].pts);
    frames[shown[k]].pts = placed[k];
    known_pts[shown[k]] = false;
  }
  return true;
}

}  // namespace codecvisor::cpu
