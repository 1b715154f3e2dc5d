#include "ipc/messages.h"

#include "absl/strings/string_view.h"
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "capnp/message.h"
#include "capnp/serialize.h"
#include "ipc/protocol.capnp.h"
#include "kj/exception.h"

namespace codecvisor::ipc {
namespace {

static_assert(wire::PROTOCOL_VERSION == kProtocolVersion);

// Thrown inside the decode try block to report a broken limit; caught with
// kj::Exception there, so it never leaves this file.
struct Malformed {
  std::string reason;
};

capnp::Text::Reader AsText(const std::string& s) { return capnp::Text::Reader(s.data(), s.size()); }

std::string FromText(capnp::Text::Reader t, absl::string_view field) {
  if (t.size() > kMaxTextBytes) {
    throw Malformed{absl::StrCat(field, " is ", t.size(), " bytes; at most ", kMaxTextBytes)};
  }
  return std::string(t.begin(), t.size());
}

template <typename Ours, typename Wire>
Ours FromEnum(Wire v, Ours last, absl::string_view field) {
  auto raw = static_cast<uint16_t>(v);
  if (raw > static_cast<uint16_t>(last)) throw Malformed{absl::StrCat(field, ": unknown value ", raw)};
  return static_cast<Ours>(raw);
}

template <typename Wire, typename Ours>
Wire ToEnum(Ours v) {
  return static_cast<Wire>(static_cast<uint16_t>(v));
}

void CheckCount(size_t n, size_t limit, absl::string_view field) {
  if (n > limit) throw Malformed{absl::StrCat(field, " has ", n, " entries; at most ", limit)};
}

// ---- encode ------------------------------------------------------------------

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

// ---- decode ------------------------------------------------------------------

StreamMetadata Read(wire::StreamMetadata::Reader r) {
  StreamMetadata m;
  m.stream_index = r.getStreamIndex();
  m.codec = FromText(r.getCodec(), "codec");
  m.width = r.getWidth();
  m.height = r.getHeight();
  m.pixel_format = FromText(r.getPixelFormat(), "pixelFormat");
  m.num_frames_from_header = r.getNumFramesFromHeader();
  m.num_frames_from_scan = r.getNumFramesFromScan();
  m.average_fps = r.getAverageFps();
  m.duration_seconds = r.getDurationSeconds();
  m.begin_stream_seconds = r.getBeginStreamSeconds();
  m.end_stream_seconds = r.getEndStreamSeconds();
  m.bit_rate = r.getBitRate();
  m.rotation_degrees = r.getRotationDegrees();
  m.color_space = FromText(r.getColorSpace(), "colorSpace");
  m.color_range = FromText(r.getColorRange(), "colorRange");
  m.color_primaries = FromText(r.getColorPrimaries(), "colorPrimaries");
  m.color_transfer = FromText(r.getColorTransfer(), "colorTransfer");
  m.time_base = {r.getTimeBase().getNum(), r.getTimeBase().getDen()};
  m.num_video_streams = r.getNumVideoStreams();
  CheckCount(r.getStreams().size(), kMaxStreams, "streams");
  m.streams.reserve(r.getStreams().size());
  for (auto s : r.getStreams()) {
    m.streams.push_back({s.getIndex(), FromEnum(s.getType(), StreamType::kAttachment, "stream type"),
                         FromText(s.getCodec(), "stream codec"), s.getWidth(), s.getHeight(), s.getSampleRate(),
                         s.getChannels()});
  }
  return m;
}

std::vector<Plane> Read(capnp::List<wire::Plane>::Reader planes) {
  CheckCount(planes.size(), kMaxPlanes, "planes");
  std::vector<Plane> out;
  for (auto p : planes) out.push_back({p.getOffset(), p.getStride(), p.getRows()});
  return out;
}

FrameLayout Read(wire::FrameLayout::Reader r) {
  FrameLayout l;
  l.width = r.getWidth();
  l.height = r.getHeight();
  l.format = FromEnum(r.getFormat(), OutputFormat::kNative, "layout format");
  l.pixel_format = FromText(r.getPixelFormat(), "pixelFormat");
  l.planes = Read(r.getPlanes());
  l.size = r.getSize();
  return l;
}

FrameRef Read(wire::FrameRef::Reader r) {
  FrameRef f;
  f.slot = r.getSlot();
  f.offset = r.getOffset();
  f.size = r.getSize();
  f.width = r.getWidth();
  f.height = r.getHeight();
  f.format = FromEnum(r.getFormat(), OutputFormat::kNative, "frame format");
  f.pixel_format = FromText(r.getPixelFormat(), "pixelFormat");
  f.planes = Read(r.getPlanes());
  f.pts_seconds = r.getPtsSeconds();
  f.duration_seconds = r.getDurationSeconds();
  f.pts = r.getPts();
  f.key_frame = r.getKeyFrame();
  f.index = r.getIndex();
  f.request_position = r.getRequestPosition();
  return f;
}

Request Read(wire::Request::Reader r) {
  Request out;
  out.id = r.getId();
  switch (r.which()) {
    case wire::Request::HELLO: {
      auto h = r.getHello();
      out.body = Hello{h.getProtocolVersion(), FromText(h.getHostVersion(), "hostVersion")};
      break;
    }
    case wire::Request::OPEN: {
      auto o = r.getOpen();
      OpenSession s;
      s.file_token = o.getFileToken();
      s.file_label = FromText(o.getFileLabel(), "fileLabel");
      s.stream_index = o.getStreamIndex();
      s.seek_mode = FromEnum(o.getSeekMode(), SeekMode::kApproximate, "seekMode");
      s.output_format = FromEnum(o.getOutputFormat(), OutputFormat::kNative, "outputFormat");
      s.decoder_threads = o.getDecoderThreads();
      s.device = FromText(o.getDevice(), "device");
      s.output_width = o.getOutputWidth();
      s.output_height = o.getOutputHeight();
      CheckCount(o.getNativeFormats().size(), kMaxNativeFormats, "nativeFormats");
      for (auto f : o.getNativeFormats()) s.native_formats.push_back(FromText(f, "nativeFormat"));
      out.body = std::move(s);
      break;
    }
    case wire::Request::METADATA:
      out.body = MetadataRequest{};
      break;
    case wire::Request::FRAMES: {
      auto f = r.getFrames();
      FrameRequest req;
      switch (f.which()) {
        case wire::FrameRequest::INDICES: {
          auto l = f.getIndices();
          CheckCount(l.size(), kMaxRequestEntries, "indices");
          IndexList list;
          list.indices.reserve(l.size());
          for (int64_t v : l) list.indices.push_back(v);
          req.selection = std::move(list);
          break;
        }
        case wire::FrameRequest::RANGE: {
          auto g = f.getRange();
          req.selection = IndexRange{g.getStart(), g.getStop(), g.getStep()};
          break;
        }
        case wire::FrameRequest::PTS_LIST: {
          auto l = f.getPtsList();
          CheckCount(l.size(), kMaxRequestEntries, "ptsList");
          PtsList list;
          list.seconds.reserve(l.size());
          for (double v : l) list.seconds.push_back(v);
          req.selection = std::move(list);
          break;
        }
        case wire::FrameRequest::PTS_RANGE: {
          auto g = f.getPtsRange();
          req.selection = PtsRange{g.getStartSeconds(), g.getStopSeconds()};
          break;
        }
        default:
          throw Malformed{"frame request selects nothing known"};
      }
      out.body = std::move(req);
      break;
    }
    case wire::Request::PING:
      out.body = Ping{r.getPing().getNonce()};
      break;
    case wire::Request::CLOSE:
      out.body = Close{r.getClose().getSessionId()};
      break;
    case wire::Request::ATTACH:
      out.body = AttachSession{r.getAttach().getSessionId(), r.getAttach().getToken()};
      break;
    default:
      throw Malformed{absl::StrCat("unknown request kind ", static_cast<int>(r.which()))};
  }
  return out;
}

Response Read(wire::Response::Reader r) {
  Response out;
  out.id = r.getId();
  switch (r.which()) {
    case wire::Response::HELLO: {
      auto h = r.getHello();
      HelloReply reply;
      reply.protocol_version = h.getProtocolVersion();
      reply.backend_name = FromText(h.getBackendName(), "backendName");
      reply.backend_version = FromText(h.getBackendVersion(), "backendVersion");
      auto devices = h.getDevices();
      CheckCount(devices.size(), kMaxDevices, "devices");
      for (auto d : devices) reply.devices.push_back(FromText(d, "device"));
      auto c = h.getCapabilities();
      reply.capabilities.exact_cpu_output = c.getExactCpuOutput();
      reply.capabilities.psnr_threshold_db = c.getPsnrThresholdDb();
      CheckCount(c.getSeekModes().size(), 8, "seekModes");
      for (auto m : c.getSeekModes()) {
        reply.capabilities.seek_modes.push_back(FromEnum(m, SeekMode::kApproximate, "seekMode"));
      }
      CheckCount(c.getOutputFormats().size(), 8, "outputFormats");
      for (auto f : c.getOutputFormats()) {
        reply.capabilities.output_formats.push_back(FromEnum(f, OutputFormat::kNative, "outputFormat"));
      }
      reply.capabilities.max_sessions = c.getMaxSessions();
      reply.sandbox_landlock_abi = h.getSandbox().getLandlockAbi();
      reply.sandbox_seccomp = h.getSandbox().getSeccomp();
      out.body = std::move(reply);
      break;
    }
    case wire::Response::OPENED: {
      auto o = r.getOpened();
      out.body = SessionOpened{o.getSessionId(), Read(o.getMetadata()), Read(o.getLayout())};
      break;
    }
    case wire::Response::METADATA:
      out.body = Read(r.getMetadata());
      break;
    case wire::Response::FRAMES: {
      auto f = r.getFrames();
      FrameBatch batch;
      CheckCount(f.getFrames().size(), kMaxFramesPerBatch, "frames");
      for (auto ref : f.getFrames()) batch.frames.push_back(Read(ref));
      batch.final = f.getFinal();
      out.body = std::move(batch);
      break;
    }
    case wire::Response::ERROR: {
      auto e = r.getError();
      out.body = Error{FromEnum(e.getCode(), ErrorCode::kNativeChanged, "error code"),
                       FromText(e.getMessage(), "error message")};
      break;
    }
    case wire::Response::PONG:
      out.body = Pong{r.getPong().getNonce()};
      break;
    case wire::Response::CLOSED:
      out.body = Closed{};
      break;
    case wire::Response::ATTACHED:
      out.body = Attached{};
      break;
    default:
      throw Malformed{absl::StrCat("unknown response kind ", static_cast<int>(r.which()))};
  }
  return out;
}

template <typename Root, typename Message>
absl::StatusOr<Message> Decode(kj::ArrayPtr<const capnp::word> words, const char* what) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = kTraversalLimitWords;
  options.nestingLimit = kNestingLimit;
  try {
    capnp::FlatArrayMessageReader reader(words, options);
    if (reader.getEnd() != words.end()) {
      return absl::DataLossError(absl::StrCat("malformed ", what, ": trailing bytes after the message"));
    }
    return Read(reader.getRoot<Root>());
  } catch (const Malformed& m) {
    return absl::DataLossError(absl::StrCat("malformed ", what, ": ", m.reason));
  } catch (const kj::Exception& e) {
    return absl::DataLossError(absl::StrCat("malformed ", what, ": ", e.getDescription().cStr()));
  }
}

}  // namespace

absl::StatusOr<kj::Array<capnp::word>> EncodeRequest(const Request& request) {
  return Encode<wire::Request, Request, RequestEncoder>(request);
}

absl::StatusOr<kj::Array<capnp::word>> EncodeResponse(const Response& response) {
  return Encode<wire::Response, Response, ResponseEncoder>(response);
}

absl::StatusOr<Request> DecodeRequest(kj::ArrayPtr<const capnp::word> words) {
  return Decode<wire::Request, Request>(words, "request");
}

absl::StatusOr<Response> DecodeResponse(kj::ArrayPtr<const capnp::word> words) {
  return Decode<wire::Response, Response>(words, "response");
}

const char* KindName(const Request& request) {
  static constexpr const char* kNames[] = {"hello", "open",  "metadata", "frames",
                                           "ping",  "close", "attach"};
  return kNames[request.body.index()];
}

const char* KindName(const Response& response) {
  static constexpr const char* kNames[] = {"hello", "opened", "metadata", "frames",
                                           "error", "pong",   "closed",   "attached"};
  return kNames[response.body.index()];
}

const char* OutputFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kRgb24:
      return "rgb24";
    case OutputFormat::kRgb24Planar:
      return "rgb24-planar";
    case OutputFormat::kNative:
      return "native";
  }
  return "unknown";
}

}  // namespace codecvisor::ipc
