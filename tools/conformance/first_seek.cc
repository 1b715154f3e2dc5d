#include "tools/conformance/first_seek.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "tools/common/subprocess.h"

namespace codecvisor::conformance {

absl::StatusOr<std::vector<PacketInfo>> ProbePackets(const std::string& path) {
  // compact: "pts=0|size=123|pos=48|flags=K__", whatever order ffprobe
  // prints the fields in.
  absl::StatusOr<std::string> out =
      tools::RunForOutput({"ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                           "packet=pts,pos,size,flags", "-of", "compact=p=0", path});
  if (!out.ok()) return out.status();
  std::vector<PacketInfo> packets;
  for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipEmpty())) {
    PacketInfo p;
    bool has_pts = false, has_position = false, has_size = false;
    for (absl::string_view field : absl::StrSplit(line, '|')) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, absl::MaxSplits('=', 1));
      if (kv.first == "pts") has_pts = absl::SimpleAtoi(kv.second, &p.pts);
      if (kv.first == "pos") has_position = absl::SimpleAtoi(kv.second, &p.position);
      if (kv.first == "size") has_size = absl::SimpleAtoi(kv.second, &p.size);
      if (kv.first == "flags") p.key = !kv.second.empty() && kv.second[0] == 'K';
    }
    if (!has_size) return absl::InternalError(absl::StrCat("ffprobe: unreadable packet line '", line, "' for ", path));
    if (has_pts && has_position) packets.push_back(p);
  }
  if (packets.empty()) return absl::InternalError(absl::StrCat("ffprobe lists no packets with a position in ", path));
  return packets;
}

absl::StatusOr<KeyFrameSpan> SpanBefore(const std::vector<PacketInfo>& packets, int64_t target_pts) {
  const PacketInfo* key = nullptr;
  for (const PacketInfo& p : packets) {
    if (p.key && p.pts <= target_pts && (key == nullptr || p.pts > key->pts)) key = &p;
  }
  if (key == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("no key frame at or before pts ", target_pts));
  }
  KeyFrameSpan span{.key_pts = key->pts, .key_position = key->position, .key_size = key->size};
  for (const PacketInfo& p : packets) {
    if (p.position < key->position) span.bytes_before += p.size;
  }
  if (span.bytes_before == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the key frame before pts ", target_pts,
        " is the stream's first packet: seeking and decoding from the start read the same packets"));
  }
  return span;
}

absl::Status JudgeFirstRequest(const KeyFrameSpan& span, int64_t open_bytes, int64_t request_bytes,
                               const std::string& what) {
  if (open_bytes + request_bytes < span.key_size) {
    return absl::InternalError(absl::StrCat(
        what, ": the backend process read ", open_bytes + request_bytes, " bytes through read calls to open the file and decode it, fewer than the ",
        span.key_size, " bytes of the key frame it starts from: its reads do not show in /proc/PID/io "
        "(a mapped file?), so whether the first request seeks cannot be checked"));
  }
  if (2 * request_bytes >= span.bytes_before) {
    return absl::InternalError(absl::StrCat(
        what, ": the first request read ", request_bytes, " bytes, at least half of the ", span.bytes_before,
        " bytes of packets before its key frame (pts ", span.key_pts, " at byte ", span.key_position,
        "): approximate mode decoded from the start instead of seeking"));
  }
  return absl::OkStatus();
}

}  // namespace codecvisor::conformance
