// Decodes one frame of a video through a sandboxed backend and writes it to
// stdout as a PPM image:  quickstart VIDEO [INDEX] > frame.ppm
#include <cstdio>
#include <cstdlib>

#include "codecvisor/codecvisor.h"

int Fail(const codecvisor::Status& status) {
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: %s VIDEO [INDEX] > frame.ppm\n", argv[0]), 2;
  auto host = codecvisor::Host::Create();  // finds the installed backends
  if (!host.ok()) return Fail(host.status());
  auto decoder = (*host)->OpenDecoder(argv[1]);  // the "cpu" device, RGB24 (HWC)
  if (!decoder.ok()) return Fail(decoder.status());
  auto frame = (*decoder)->GetFrameAt(argc > 2 ? std::atoll(argv[2]) : 0);
  if (!frame.ok()) return Fail(frame.status());
  std::fprintf(stderr, "%s %ux%u, frame %lld at %.3f s\n", (*decoder)->metadata().codec.c_str(), frame->width(),
               frame->height(), static_cast<long long>(frame->index()), frame->pts_seconds());
  std::printf("P6\n%u %u\n255\n", frame->width(), frame->height());
  std::fwrite(frame->data().data(), 1, frame->data().size(), stdout);
}
