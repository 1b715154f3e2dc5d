// File: ipc/message_encode.cc
//
// Request and Response to Cap'n Proto words (messages.h).

#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "capnp/message.h"
#include "capnp/serialize.h"
#include "ipc/messages.h"
#include "ipc/protocol.capnp.h"

namespace codecvisor::ipc {
namespace {

capnp::Text::Reader AsText(const std::string& s) { return capnp::Text::Reader(s.data(), s.size()); }

template <typename Wire, typename Ours>
Wire ToEnum(Ours v) {
  return static_cast<Wire>(static_cast<uint16_t>(v));
}

void Fill(wire::StreamMetadata::Builder b, const StreamMetadata& m) {
  b.setStreamIndex(m.stream_index);
  b.setCodec(AsText(m.codec));
  b.setWidth(m.width);
  b.setHeight(m.height);
  b.setPixelFormat(AsText(m.pixel_format));
  b.setNumFramesFromHeader(m.num_frames_from_header);
  b.setNumFramesFromScan(m.num_frames_from_scan);
  b.setAverageFps(m.average_fps);
  b.setDurationSeconds(m.duration_seconds);
  b.setBeginStreamSeconds(m.begin_stream_seconds);
  b.setEndStreamSeconds(m.end_stream_seconds);
  b.setBitRate(m.bit_rate);
  b.setRotationDegrees(m.rotation_degrees);
  b.setColorSpace(AsText(m.color_space));
  b.setColorRange(AsText(m.color_range));
  b.setColorPrimaries(AsText(m.color_primaries));
  b.setColorTransfer(AsText(m.color_transfer));
  b.initTimeBase().setNum(m.time_base.num);
  b.getTimeBase().setDen(m.time_base.den);
  b.setNumVideoStreams(m.num_video_streams);
  auto streams = b.initStreams(static_cast<unsigned>(m.streams.size()));
  for (size_t i = 0; i < m.streams.size(); ++i) {
    const StreamInfo& from = m.streams[i];
    auto to = streams[i];
    to.setIndex(from.index);
    to.setType(ToEnum<wire::StreamType>(from.type));
    to.setCodec(AsText(from.codec));
    to.setWidth(from.width);
    to.setHeight(from.height);
    to.setSampleRate(from.sample_rate);
    to.setChannels(from.channels);
  }
  if (m.header_times) {
    auto times = b.initHeaderTimes();
    times.setDurationSeconds(m.header_times->duration_seconds);
    times.setBeginStreamSeconds(m.header_times->begin_stream_seconds);
  }
  if (m.pixel_aspect_ratio) {
    auto ratio = b.initPixelAspectRatio();
    ratio.setNum(m.pixel_aspect_ratio->num);
    ratio.setDen(m.pixel_aspect_ratio->den);
  }
}

void Fill(capnp::List<wire::Plane>::Builder out, const std::vector<Plane>& planes) {
  for (size_t i = 0; i < planes.size(); ++i) {
    out[i].setOffset(planes[i].offset);
    out[i].setStride(planes[i].stride);
    out[i].setRows(planes[i].rows);
  }
}

void Fill(wire::FrameLayout::Builder b, const FrameLayout& l) {
  b.setWidth(l.width);
  b.setHeight(l.height);
  b.setFormat(ToEnum<wire::OutputFormat>(l.format));
  b.setPixelFormat(AsText(l.pixel_format));
  Fill(b.initPlanes(static_cast<unsigned>(l.planes.size())), l.planes);
  b.setSize(l.size);
}

void Fill(wire::FrameRef::Builder b, const FrameRef& f) {
  b.setSlot(f.slot);
  b.setOffset(f.offset);
  b.setSize(f.size);
  b.setWidth(f.width);
  b.setHeight(f.height);
  b.setFormat(ToEnum<wire::OutputFormat>(f.format));
  b.setPixelFormat(AsText(f.pixel_format));
  Fill(b.initPlanes(static_cast<unsigned>(f.planes.size())), f.planes);
  b.setPtsSeconds(f.pts_seconds);
  b.setDurationSeconds(f.duration_seconds);
  b.setPts(f.pts);
  b.setKeyFrame(f.key_frame);
  b.setIndex(f.index);
  b.setRequestPosition(f.request_position);
}

struct RequestEncoder {
  wire::Request::Builder b;
  void operator()(const Hello& h) {
    auto o = b.initHello();
    o.setProtocolVersion(h.protocol_version);
    o.setHostVersion(AsText(h.host_version));
  }
  void operator()(const OpenSession& s) {
    auto o = b.initOpen();
    o.setFileToken(s.file_token);
    o.setFileLabel(AsText(s.file_label));
    o.setStreamIndex(s.stream_index);
    o.setSeekMode(ToEnum<wire::SeekMode>(s.seek_mode));
    o.setOutputFormat(ToEnum<wire::OutputFormat>(s.output_format));
    o.setDecoderThreads(s.decoder_threads);
    o.setDevice(AsText(s.device));
    o.setOutputWidth(s.output_width);
    o.setOutputHeight(s.output_height);
    auto formats = o.initNativeFormats(static_cast<unsigned>(s.native_formats.size()));
    for (size_t i = 0; i < s.native_formats.size(); ++i) formats.set(i, AsText(s.native_formats[i]));
  }
  void operator()(const MetadataRequest&) { b.setMetadata(); }
  void operator()(const FrameRequest& r) {
    auto o = b.initFrames();
    if (auto* v = std::get_if<IndexList>(&r.selection)) {
      auto l = o.initIndices(static_cast<unsigned>(v->indices.size()));
      for (size_t i = 0; i < v->indices.size(); ++i) l.set(i, v->indices[i]);
    } else if (auto* v = std::get_if<IndexRange>(&r.selection)) {
      auto g = o.initRange();
      g.setStart(v->start);
      g.setStop(v->stop);
      g.setStep(v->step);
    } else if (auto* v = std::get_if<PtsList>(&r.selection)) {
      auto l = o.initPtsList(static_cast<unsigned>(v->seconds.size()));
      for (size_t i = 0; i < v->seconds.size(); ++i) l.set(i, v->seconds[i]);
    } else if (auto* v = std::get_if<PtsRange>(&r.selection)) {
      auto g = o.initPtsRange();
      g.setStartSeconds(v->start_seconds);
      g.setStopSeconds(v->stop_seconds);
    }
  }
  void operator()(const Ping& p) { b.initPing().setNonce(p.nonce); }
  void operator()(const Close& c) { b.initClose().setSessionId(c.session_id); }
  void operator()(const Cancel&) { b.setCancel(); }
  void operator()(const AttachSession& a) {
    auto o = b.initAttach();
    o.setSessionId(a.session_id);
    o.setToken(a.token);
  }
};

struct ResponseEncoder {
  wire::Response::Builder b;
  void operator()(const HelloReply& h) {
    auto o = b.initHello();
    o.setProtocolVersion(h.protocol_version);
    o.setBackendName(AsText(h.backend_name));
    o.setBackendVersion(AsText(h.backend_version));
    auto d = o.initDevices(static_cast<unsigned>(h.devices.size()));
    for (size_t i = 0; i < h.devices.size(); ++i) d.set(i, AsText(h.devices[i]));
    auto c = o.initCapabilities();
    c.setExactCpuOutput(h.capabilities.exact_cpu_output);
    c.setPsnrThresholdDb(h.capabilities.psnr_threshold_db);
    auto sm = c.initSeekModes(static_cast<unsigned>(h.capabilities.seek_modes.size()));
    for (size_t i = 0; i < sm.size(); ++i) sm.set(i, ToEnum<wire::SeekMode>(h.capabilities.seek_modes[i]));
    auto of = c.initOutputFormats(static_cast<unsigned>(h.capabilities.output_formats.size()));
    for (size_t i = 0; i < of.size(); ++i) {
      of.set(i, ToEnum<wire::OutputFormat>(h.capabilities.output_formats[i]));
    }
    c.setMaxSessions(h.capabilities.max_sessions);
    auto sandbox = o.initSandbox();
    sandbox.setLandlockAbi(h.sandbox_landlock_abi);
    sandbox.setSeccomp(h.sandbox_seccomp);
  }
  void operator()(const SessionOpened& s) {
    auto o = b.initOpened();
    o.setSessionId(s.session_id);
    Fill(o.initMetadata(), s.metadata);
    Fill(o.initLayout(), s.layout);
  }
  void operator()(const StreamMetadata& m) { Fill(b.initMetadata(), m); }
  void operator()(const FrameBatch& f) {
    auto o = b.initFrames();
    auto l = o.initFrames(static_cast<unsigned>(f.frames.size()));
    for (size_t i = 0; i < f.frames.size(); ++i) Fill(l[i], f.frames[i]);
    o.setFinal(f.final);
  }
  void operator()(const Error& e) {
    auto o = b.initError();
    o.setCode(ToEnum<wire::ErrorCode>(e.code));
    o.setMessage(AsText(e.message));
  }
  void operator()(const Pong& p) { b.initPong().setNonce(p.nonce); }
  void operator()(const Closed&) { b.setClosed(); }
  void operator()(const Attached&) { b.setAttached(); }
};

template <typename Root, typename Message, typename Encoder>
absl::StatusOr<kj::Array<capnp::word>> Encode(const Message& message) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<Root>();
  root.setId(message.id);
  std::visit(Encoder{root}, message.body);
  auto words = capnp::messageToFlatArray(builder);
  if (words.size() * sizeof(capnp::word) > (1u << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(KindName(message), " message of ",
                                                   words.size() * sizeof(capnp::word),
                                                   " bytes is too large for the channel"));
  }
  return words;
}

}  // namespace

absl::StatusOr<kj::Array<capnp::word>> EncodeRequest(const Request& request) {
  return Encode<wire::Request, Request, RequestEncoder>(request);
}

absl::StatusOr<kj::Array<capnp::word>> EncodeResponse(const Response& response) {
  return Encode<wire::Response, Response, ResponseEncoder>(response);
}

}  // namespace codecvisor::ipc
