// File: examples/vendor_backend/frame_table.cc

#include "frame_table.h"

#include <algorithm>

namespace dav1d_plugin {

Status FrameTable::Build(Container& container, int64_t default_duration, FrameTable* out) {
  FrameTable table;
  AVPacket* packet = av_packet_alloc();
  if (packet == nullptr) return Status(CV_ERROR_RESOURCE_EXHAUSTED, "out of memory for a packet");
  Status status;
  while (container.ReadPacket(packet)) {
    if ((packet->flags & AV_PKT_FLAG_DISCARD) != 0) continue;
    if (table.size() >= kMaxFrames) {
      status = Status(CV_ERROR_RESOURCE_EXHAUSTED,
                      Sprintf("stream %d has more than %lld frames, more than the plugin indexes",
                              container.stream()->index, static_cast<long long>(kMaxFrames)));
      break;
    }
    FrameRow row;
    row.decode_order = table.size();
    row.key = (packet->flags & AV_PKT_FLAG_KEY) != 0;
    row.duration = packet->duration;
    row.pts = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
    if (row.pts == AV_NOPTS_VALUE) {
      const FrameRow* prev = table.rows_.empty() ? nullptr : &table.rows_.back();
      row.pts = prev == nullptr ? 0 : prev->pts + std::max<int64_t>(prev->duration, 1);
    }
    table.rows_.push_back(row);
  }
  av_packet_free(&packet);
  if (!status.ok()) return status;
  if (table.rows_.empty()) {
    return Status(CV_ERROR_CORRUPT_DATA,
                  Sprintf("stream %d holds no packets%s%s", container.stream()->index,
                          container.last_error() != 0 ? " (truncated or corrupt): " : "",
                          container.last_error() != 0 ? AvError(container.last_error()).c_str() : ""));
  }
  table.truncated_ = container.last_error();

  for (const FrameRow& row : table.rows_) {
    if (row.key) table.key_orders_.push_back(row.decode_order);
  }
  std::stable_sort(table.rows_.begin(), table.rows_.end(),
                   [](const FrameRow& a, const FrameRow& b) { return a.pts < b.pts; });
  table.by_order_.assign(table.rows_.size(), 0);
  for (size_t i = 0; i < table.rows_.size(); ++i) {
    FrameRow& row = table.rows_[i];
    table.by_order_[static_cast<size_t>(row.decode_order)] = static_cast<int64_t>(i);
    if (row.duration > 0) continue;
    if (i + 1 < table.rows_.size() && table.rows_[i + 1].pts > row.pts) {
      row.duration = table.rows_[i + 1].pts - row.pts;
    } else {
      row.duration = i > 0 ? table.rows_[i - 1].duration : std::max<int64_t>(default_duration, 1);
    }
  }
  *out = std::move(table);
  return Status();
}

int64_t FrameTable::Find(int64_t pts) const {
  int64_t i = LastAtOrBefore(pts);
  return i >= 0 && rows_[static_cast<size_t>(i)].pts == pts ? i : -1;
}

int64_t FrameTable::LastAtOrBefore(int64_t pts) const {
  auto after =
      std::upper_bound(rows_.begin(), rows_.end(), pts, [](int64_t t, const FrameRow& row) { return t < row.pts; });
  return (after - rows_.begin()) - 1;
}

int64_t FrameTable::KeyFor(int64_t index) const {
  const int64_t order = rows_[static_cast<size_t>(index)].decode_order;
  auto next = std::upper_bound(key_orders_.begin(), key_orders_.end(), order);
  if (next == key_orders_.begin()) return by_order_[0];
  return by_order_[static_cast<size_t>(*(next - 1))];
}

}  // namespace dav1d_plugin
