// Writes one encoded message of every response and request kind into the
// directory given as argv[1]: the committed seed corpus of
// response_decode_fuzzer (ipc/testdata/response_corpus). Rerun after a
// protocol change:
//   bazel run //ipc:make_fuzz_seeds -- $PWD/ipc/testdata/response_corpus

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "ipc/messages.h"

namespace codecvisor::ipc {
namespace {

bool Write(const std::string& path, const absl::StatusOr<kj::Array<capnp::word>>& words) {
  if (!words.ok()) return false;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  std::fwrite(words->begin(), sizeof(capnp::word), words->size(), f);
  return std::fclose(f) == 0;
}

int Main(const std::string& dir) {
  FrameRef frame;
  frame.slot = 1;
  frame.size = 64 * 48 * 3;
  frame.width = 64;
  frame.height = 48;
  frame.pixel_format = "rgb24";
  frame.planes = {{0, 192, 48}};
  StreamMetadata meta;
  meta.codec = "h264";
  meta.width = 64;
  meta.height = 48;
  HelloReply hello;
  hello.backend_name = "cpu";
  hello.devices = {"cpu"};
  hello.capabilities.seek_modes = {SeekMode::kExact};
  const Response responses[] = {
      {1, hello},          {2, SessionOpened{1, meta, {}}}, {3, meta},   {4, FrameBatch{{frame}, true}},
      {5, Error{ErrorCode::kOutOfRange, "no"}},      {6, Pong{9}}, {7, Closed{}},
  };
  const Request requests[] = {
      {1, Hello{}}, {2, OpenSession{}}, {3, FrameRequest{IndexList{{1, 2}}}}, {4, FrameRequest{PtsRange{0, 1}}},
  };
  bool ok = true;
  for (const Response& r : responses) {
    ok &= Write(absl::StrCat(dir, "/response_", KindName(r)), EncodeResponse(r));
  }
  for (const Request& r : requests) {
    ok &= Write(absl::StrCat(dir, "/request_", KindName(r), "_", r.id), EncodeRequest(r));
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace codecvisor::ipc

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_seeds DIR\n");
    return 2;
  }
  return codecvisor::ipc::Main(argv[1]);
}
