// File: ipc/message_decode.cc
//
// Cap'n Proto words, copied out of shared memory, to Request and Response
// (messages.h): every limit, enum value and union member checked.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "capnp/message.h"
#include "capnp/serialize.h"
#include "ipc/messages.h"
#include "ipc/protocol.capnp.h"
#include "kj/exception.h"

namespace codecvisor::ipc {
namespace {

// Thrown inside the decode try block to report a broken limit; caught with
// kj::Exception there, so it never leaves this file.
struct Malformed {
  std::string reason;
};

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

void CheckCount(size_t n, size_t limit, absl::string_view field) {
  if (n > limit) throw Malformed{absl::StrCat(field, " has ", n, " entries; at most ", limit)};
}

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
  if (r.hasHeaderTimes()) {
    m.header_times = HeaderTimes{r.getHeaderTimes().getDurationSeconds(), r.getHeaderTimes().getBeginStreamSeconds()};
  }
  if (r.hasPixelAspectRatio()) {
    m.pixel_aspect_ratio = Rational{r.getPixelAspectRatio().getNum(), r.getPixelAspectRatio().getDen()};
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
    case wire::Request::CANCEL:
      out.body = Cancel{};
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
      out.body = Error{FromEnum(e.getCode(), ErrorCode::kNoThreadFree, "error code"),
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

absl::StatusOr<Request> DecodeRequest(kj::ArrayPtr<const capnp::word> words) {
  return Decode<wire::Request, Request>(words, "request");
}

absl::StatusOr<Response> DecodeResponse(kj::ArrayPtr<const capnp::word> words) {
  return Decode<wire::Response, Response>(words, "response");
}

}  // namespace codecvisor::ipc
