#include "ipc/messages.h"

#include "ipc/protocol.capnp.h"

namespace codecvisor::ipc {

static_assert(wire::PROTOCOL_VERSION == kProtocolVersion);

const char* KindName(const Request& request) {
  static constexpr const char* kNames[] = {"hello", "open",  "metadata", "frames",
                                           "ping",  "close", "attach",   "cancel"};
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
