// File: examples/vendor_backend/av1_stream.cc

#include "av1_stream.h"

#include "log_level.h"

#include <cerrno>
#include <cstring>

namespace dav1d_plugin {
namespace {

// Data or pictures libdav1d may reject in a row before Next gives up.
constexpr int kMaxConsecutiveErrors = 64;

}  // namespace

Status Av1Stream::Open(Container* container, uint32_t threads, std::unique_ptr<Av1Stream>* out) {
  if (threads > kMaxThreads) {
    return Status(CV_ERROR_INVALID_ARGUMENT,
                  Sprintf("decoder_threads %u is above libdav1d's limit of %u", threads, kMaxThreads));
  }
  std::unique_ptr<Av1Stream> s(new Av1Stream());
  s->container_ = container;
  s->packet_ = av_packet_alloc();
  if (s->packet_ == nullptr) return Status(CV_ERROR_RESOURCE_EXHAUSTED, "out of memory for a packet");
  Dav1dSettings settings;
  dav1d_default_settings(&settings);
  settings.n_threads = static_cast<int>(threads);
  settings.max_frame_delay = 0;  // libdav1d's choice, as libavcodec leaves it
  settings.all_layers = 0;       // libavcodec's default: the highest spatial layer only
  settings.apply_grain = 1;
  settings.logger = {nullptr, &Dav1dLog};  // quiet unless the host asks for logs
  if (int ret = dav1d_open(&s->dav1d_, &settings); ret < 0) {
    return Status(ret == DAV1D_ERR(ENOMEM) ? CV_ERROR_RESOURCE_EXHAUSTED : CV_ERROR_INTERNAL,
                  Sprintf("libdav1d %s could not start: %s", dav1d_version(), std::strerror(-ret)));
  }
  *out = std::move(s);
  return Status();
}

Av1Stream::~Av1Stream() {
  dav1d_data_unref(&pending_);
  dav1d_picture_unref(&picture_);
  if (dav1d_ != nullptr) dav1d_close(&dav1d_);
  av_packet_free(&packet_);
}

bool Av1Stream::LoadPacket() {
  while (container_->ReadPacket(packet_)) {
    if (packet_->size <= 0) continue;
    uint8_t* data = dav1d_data_create(&pending_, static_cast<size_t>(packet_->size));
    if (data == nullptr) continue;  // out of memory: counted as a lost frame
    std::memcpy(data, packet_->data, static_cast<size_t>(packet_->size));
    pending_.m.timestamp = packet_->pts != AV_NOPTS_VALUE ? packet_->pts : packet_->dts;
    pending_.m.duration = packet_->duration;
    pending_.m.offset = packet_->pos;
    pending_loaded_ = true;
    ++packets_read_;
    return true;
  }
  return false;
}

int64_t Av1Stream::PeekTimestamp() {
  if (!pending_loaded_ && !input_done_ && !LoadPacket()) input_done_ = true;
  if (!pending_loaded_) return kNoTimestamp;
  return pending_.m.timestamp == AV_NOPTS_VALUE ? kNoTimestamp : pending_.m.timestamp;
}

Status Av1Stream::Next(bool* got) {
  *got = false;
  dav1d_picture_unref(&picture_);
  if (ended_) return Status();
  int errors = 0;
  for (;;) {
    if (!pending_loaded_ && !input_done_ && !LoadPacket()) input_done_ = true;
    if (pending_loaded_) {
      int ret = dav1d_send_data(dav1d_, &pending_);
      if (ret < 0 && ret != DAV1D_ERR(EAGAIN)) {
        last_dav1d_error_ = ret;
        dav1d_data_unref(&pending_);
        ++errors;
      }
      if (pending_.sz == 0) pending_loaded_ = false;
    }
    int ret = dav1d_get_picture(dav1d_, &picture_);
    if (ret == 0) {
      if (picture_.m.timestamp == AV_NOPTS_VALUE) {
        // No timestamp from the container: the next slot after the last.
        picture_.m.timestamp = last_pts_ == kNoTimestamp ? 0 : last_pts_ + 1;
      }
      last_pts_ = picture_.m.timestamp;
      *got = true;
      return Status();
    }
    if (ret == DAV1D_ERR(EAGAIN)) {
      if (input_done_ && !pending_loaded_) {
        ended_ = true;
        return Status();
      }
    } else {
      last_dav1d_error_ = ret;
      ++errors;
    }
    if (errors > kMaxConsecutiveErrors) {
      return Status(CV_ERROR_CORRUPT_DATA, Sprintf("libdav1d rejected %d packets or pictures in a row (%s): the AV1 "
                                                   "stream is corrupt",
                                                   errors, last_error().c_str()));
    }
  }
}

Status Av1Stream::Restart(int64_t timestamp) {
  dav1d_data_unref(&pending_);
  dav1d_picture_unref(&picture_);
  pending_loaded_ = input_done_ = ended_ = false;
  last_pts_ = kNoTimestamp;
  packets_read_ = 0;
  last_dav1d_error_ = 0;
  dav1d_flush(dav1d_);
  return container_->Seek(timestamp);
}

std::string Av1Stream::last_error() const {
  if (last_dav1d_error_ != 0) {
    return Sprintf("libdav1d: %s", std::strerror(-last_dav1d_error_));
  }
  if (container_->last_error() != 0) {
    return Sprintf("reading the file: %s", AvError(container_->last_error()).c_str());
  }
  return "";
}

}  // namespace dav1d_plugin
