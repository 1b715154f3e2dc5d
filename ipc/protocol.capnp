# codecvisor host <-> backend protocol, version 1.
#
# Every message travels as one flat Cap'n Proto array in a ring of a channel's
# shared region (see ipc/README.md). Requests go host -> backend, responses
# backend -> host; a response carries the id of the request it answers. Pixel
# data never travels in a message: a FrameRef points into the frame arena.
#
# A backend process has one control channel (created at spawn, no arena) and
# one session channel per open video. On the control channel: hello, open,
# attach, ping, close (of a session not yet attached). On a session channel:
# metadata, frames, cancel, ping, close.
#
# Compatibility: fields are only ever added, with new ordinals; a change that
# cannot be expressed that way bumps `protocolVersion`, and the handshake
# refuses a peer that speaks another version.

@0xd9ccd3c416853f4c;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("codecvisor::ipc::wire");

# 2: a session's `cancel` request, which a runner speaking 1 cannot read.
const protocolVersion :UInt32 = 2;

# ---- handshake -------------------------------------------------------------

struct Hello {
  protocolVersion @0 :UInt32;
  hostVersion @1 :Text;        # informational, e.g. "codecvisor 0.1.0"
}

struct Capabilities {
  exactCpuOutput @0 :Bool;     # RGB output is bit-exact with FFmpeg's swscale path
  psnrThresholdDb @1 :Float64; # if not exact: the minimum PSNR the backend promises
  seekModes @2 :List(SeekMode);
  outputFormats @3 :List(OutputFormat);
  maxSessions @4 :UInt32;      # 0: no limit of its own
}

struct HelloReply {
  protocolVersion @0 :UInt32;
  backendName @1 :Text;
  backendVersion @2 :Text;
  devices @3 :List(Text);      # device names served, e.g. ["cpu"] or ["acme", "acme:1"]
  capabilities @4 :Capabilities;
  sandbox @5 :SandboxReport;   # what the runner applied to itself
}

struct SandboxReport {
  landlockAbi @0 :UInt32;      # 0: not applied
  seccomp @1 :Bool;
}

# ---- sessions ----------------------------------------------------------------

enum SeekMode {
  exact @0;        # scan the stream once; frame indices are exact
  approximate @1;  # trust the container header; no scan
}

enum OutputFormat {
  rgb24 @0;        # interleaved RGB, one plane (HWC)
  rgb24Planar @1;  # three planes R, G, B (CHW)
  native @2;       # the decoder's own pixel format (e.g. yuv420p), one plane per component
}

struct OpenSession {
  fileToken @0 :UInt64;      # matches the SCM_RIGHTS message that carried the file descriptor
  fileLabel @1 :Text;        # the caller's name for the file, used in error messages only
  streamIndex @2 :Int32;     # -1: the best video stream
  seekMode @3 :SeekMode;
  outputFormat @4 :OutputFormat;
  decoderThreads @5 :UInt32; # 0: let the decoder choose
  device @6 :Text;           # the device string the caller asked for, e.g. "acme:1"
  outputWidth @7 :UInt32;    # 0: the stream's own size
  outputHeight @8 :UInt32;
  # Native pixel formats the host converts itself: when the stream is not
  # rotated and its decoded format is one of these, frames come in that
  # format (FrameRef.format = native) instead of outputFormat.
  nativeFormats @9 :List(Text);
}

struct SessionOpened {
  sessionId @0 :UInt64;       # names the session in `attach` and `close`
  metadata @1 :StreamMetadata;
  layout @2 :FrameLayout;     # every output frame of the session, fixed
}

# Sent with the session channel's memfd and socket end (SCM_RIGHTS, tagged
# with `token`): the backend serves the session on that channel from now on.
struct AttachSession {
  sessionId @0 :UInt64;
  token @1 :UInt64;
}

struct CloseSession {
  sessionId @0 :UInt64;       # on a session channel: ignored
}

struct Rational {
  num @0 :Int64;
  den @1 :Int64;
}

struct StreamMetadata {
  streamIndex @0 :Int32;
  codec @1 :Text;
  width @2 :UInt32;
  height @3 :UInt32;
  pixelFormat @4 :Text;
  numFramesFromHeader @5 :Int64;   # -1 if unknown
  numFramesFromScan @6 :Int64;     # -1 if not scanned (approximate mode)
  averageFps @7 :Float64;
  durationSeconds @8 :Float64;
  beginStreamSeconds @9 :Float64;
  endStreamSeconds @10 :Float64;
  bitRate @11 :Int64;
  rotationDegrees @12 :Float64;
  colorSpace @13 :Text;
  colorRange @14 :Text;
  colorPrimaries @15 :Text;
  colorTransfer @16 :Text;
  timeBase @17 :Rational;
  numVideoStreams @18 :UInt32;
  # Every stream of the file, by ascending index (at most 1024). Empty from
  # a backend that does not list them (one built before this field): the
  # host then says the streams are unknown. The host checks what it gets
  # (core/stream_list_check.h); the stream above is one of the videos.
  streams @19 :List(StreamInfo);
  # What the container's header says of the stream's times. In approximate
  # mode they are the times above; in exact mode the ones above are the
  # scanned frames'. Absent when the backend does not say (a backend
  # without get_header_times, in exact mode).
  headerTimes @20 :HeaderTimes;
  # A pixel's width over its height, both positive; absent where the file
  # does not say (or the backend does not report it).
  pixelAspectRatio @21 :Rational;
}

struct HeaderTimes {
  durationSeconds @0 :Float64;     # 0 if the header does not say
  beginStreamSeconds @1 :Float64;  # 0 if the header does not say
}

enum StreamType {
  unknown @0;
  video @1;
  audio @2;
  subtitle @3;
  data @4;
  attachment @5;
}

# One stream of the file, of any type, as the container describes it.
struct StreamInfo {
  index @0 :Int32;             # the container's stream index, from 0
  type @1 :StreamType;
  codec @2 :Text;              # e.g. "h264", "aac", "subrip"; empty if unknown
  width @3 :UInt32;            # video: as stored, before any display rotation; else 0
  height @4 :UInt32;
  sampleRate @5 :UInt32;       # audio: in Hz, 0 if unknown; else 0
  channels @6 :UInt32;         # audio: 0 if unknown; else 0
}

# ---- frames ------------------------------------------------------------------

struct FrameRequest {
  union {
    indices @0 :List(Int64);        # any order, duplicates allowed
    range @1 :IndexRange;           # [start, stop) with step > 0
    ptsList @2 :List(Float64);      # the frame played at each time, in seconds
    ptsRange @3 :PtsRange;          # every frame played in [start, stop) seconds
  }
}

struct IndexRange {
  start @0 :Int64;
  stop @1 :Int64;
  step @2 :Int64;
}

struct PtsRange {
  startSeconds @0 :Float64;
  stopSeconds @1 :Float64;
}

struct Plane {
  offset @0 :UInt64;   # from the start of the slot
  stride @1 :UInt32;   # bytes per row
  rows @2 :UInt32;
}

struct FrameLayout {
  width @0 :UInt32;
  height @1 :UInt32;
  format @2 :OutputFormat;
  pixelFormat @3 :Text;
  planes @4 :List(Plane);      # offsets from the start of a slot
  size @5 :UInt64;             # bytes one frame takes in a slot
}

struct FrameRef {
  slot @0 :UInt32;       # arena slot written by the backend and now lent to the host
  offset @1 :UInt64;     # first byte used, from the start of the slot
  size @2 :UInt64;       # bytes used from offset
  width @3 :UInt32;
  height @4 :UInt32;
  format @5 :OutputFormat;
  pixelFormat @6 :Text;  # e.g. "rgb24", "yuv420p"
  planes @7 :List(Plane);
  ptsSeconds @8 :Float64;
  durationSeconds @9 :Float64;
  pts @10 :Int64;        # in the stream's time base
  keyFrame @11 :Bool;
  index @12 :Int64;      # frame index in the stream
  requestPosition @13 :UInt32;  # position in the request this frame answers
}

struct FrameBatch {
  frames @0 :List(FrameRef);
  final @1 :Bool;        # no more batches for this request
}

# ---- errors and liveness -----------------------------------------------------

enum ErrorCode {
  unknown @0;
  invalidArgument @1;    # e.g. a malformed request
  outOfRange @2;         # an index or time outside the stream
  notFound @3;           # e.g. no video stream
  corruptData @4;        # the file could not be demuxed or decoded
  unsupported @5;        # codec, format or option not supported by this backend
  resourceExhausted @6;  # e.g. no free arena slot before the deadline
  internal @7;
  protocolMismatch @8;
  # A session sending native frames in place of RGB (OpenSession's
  # nativeFormats) met a frame its layout cannot hold exactly (another pixel
  # format, size or colour space or range than the stream's): the host
  # reopens the session for RGB and asks again for the frames it lacks.
  nativeChanged @9;
  # The backend had no descriptor free for the ones an open or attach sent
  # (its RLIMIT_NOFILE reached): that open fails, the sessions already open
  # go on, and the backend is not replaced for it.
  noDescriptorFree @10;
  # The backend could not start a thread though it runs fewer than its own
  # limit allows: a limit above its own refused it, as the limit of the
  # user who started the host (RLIMIT_NPROC, `ulimit -u`) does. Where that
  # user has such a limit, the open fails as the host process's shortage
  # (the backend is not replaced, the file not blamed); else the host takes
  # it as the backend's own shortage.
  noThreadFree @11;
}

struct Error {
  code @0 :ErrorCode;
  message @1 :Text;
}

struct Ping {
  nonce @0 :UInt64;
}

# ---- envelopes ---------------------------------------------------------------

struct Request {
  id @0 :UInt64;
  union {
    hello @1 :Hello;
    open @2 :OpenSession;
    metadata @3 :Void;
    frames @4 :FrameRequest;
    ping @5 :Ping;
    close @6 :CloseSession;
    attach @7 :AttachSession;
    # On a session channel, while the frames request `id` is in flight: the
    # host wants no more of its frames. The backend ends that request's
    # answer after the frame it is decoding (a final FrameBatch, which may
    # be empty), and answers nothing to the cancel itself; a cancel naming
    # a request that is not in flight is ignored.
    cancel @8 :Void;
  }
}

struct Response {
  id @0 :UInt64;
  union {
    hello @1 :HelloReply;
    opened @2 :SessionOpened;
    metadata @3 :StreamMetadata;
    frames @4 :FrameBatch;
    error @5 :Error;
    pong @6 :Ping;
    closed @7 :Void;
    attached @8 :Void;
  }
}
