#include "tools/bench/ipc_bench.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "ipc/channel.h"
#include "ipc/doorbell.h"
#include "tools/bench/cpu_time.h"
#include "tools/bench/stats.h"
#include "tools/cli/json.h"

namespace codecvisor::bench {
namespace {

using ipc::Clock;

constexpr auto kDeadline = std::chrono::seconds(10);

// A forked peer, killed and reaped on destruction if it has not exited.
class Child {
 public:
  explicit Child(const std::function<int()>& body) {
    pid_ = fork();
    if (pid_ == 0) _exit(body());
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  absl::Status Wait() {
    int status = 0;
    if (waitpid(std::exchange(pid_, -1), &status, 0) < 0) return ipc::ErrnoStatus("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return absl::InternalError(absl::StrFormat("bench peer ended with status %d", status));
    }
    return absl::OkStatus();
  }

 private:
  pid_t pid_ = -1;
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The pixel work both frame measurements share: every byte written once,
// every byte read once. Not inlined, and the buffer escapes through an empty
// asm, so the compiler cannot fuse the two passes or drop the stores.
[[gnu::noinline]] void FillFrame(uint8_t* data, size_t size, uint64_t frame) {
  uint64_t v = frame * 0x9e3779b97f4a7c15ull;
  size_t words = size / 8;
  auto* w = reinterpret_cast<uint64_t*>(data);
  for (size_t i = 0; i < words; ++i) w[i] = v + i;
  for (size_t i = words * 8; i < size; ++i) data[i] = static_cast<uint8_t>(frame);
  asm volatile("" : : "r"(data) : "memory");
}

[[gnu::noinline]] uint64_t Checksum(const uint8_t* data, size_t size) {
  uint64_t sum = 0;
  size_t words = size / 8;
  const auto* w = reinterpret_cast<const uint64_t*>(data);
  for (size_t i = 0; i < words; ++i) sum += w[i];
  for (size_t i = words * 8; i < size; ++i) sum += data[i];
  return sum;
}

// Makes `value` count as used, so that the reads computing it are kept.
// (A branch on it that only prints an empty string is not enough: the
// compiler drops that print, then the value, then the reads.)
void KeepObservable(uint64_t value) { asm volatile("" : : "r"(value) : "memory"); }

// Raw futex ping-pong between two processes: the floor for any wake-up based
// round trip.
absl::StatusOr<double> FutexRoundTripUs(int n) {
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return ipc::ErrnoStatus("mmap");
  auto* ping = new (mem) std::atomic<uint32_t>(0);
  auto* pong = new (static_cast<char*>(mem) + 64) std::atomic<uint32_t>(0);
  auto wait_for = [](std::atomic<uint32_t>* w, uint32_t want) {
    for (uint32_t v; (v = w->load(std::memory_order_acquire)) != want;) {
      ipc::FutexWait(w, v, std::chrono::milliseconds(100));
    }
  };
  Child child([&] {
    for (uint32_t i = 1; i <= static_cast<uint32_t>(n); ++i) {
      wait_for(ping, i);
      pong->store(i, std::memory_order_release);
      ipc::FutexWake(pong, 1);
    }
    return 0;
  });
  if (!child.started()) return ipc::ErrnoStatus("fork");
  const auto start = Clock::now();
  for (uint32_t i = 1; i <= static_cast<uint32_t>(n); ++i) {
    ping->store(i, std::memory_order_release);
    ipc::FutexWake(ping, 1);
    wait_for(pong, i);
  }
  const double us = Seconds(Clock::now() - start) * 1e6 / n;
  absl::Status s = child.Wait();
  munmap(mem, 4096);
  if (!s.ok()) return s;
  return us;
}

// The peer side of both channel measurements: answers pings, and streams
// `frames` frames for a frame request.
int ServePeer(ipc::PeerEnds ends, uint32_t width, uint32_t height) {
  auto channel = ipc::BackendChannel::Attach(std::move(ends));
  if (!channel.ok()) return 2;
  ipc::BackendChannel& ch = **channel;
  for (;;) {
    auto request = ch.Receive(Clock::now() + kDeadline);
    if (!request.ok()) return 3;
    if (auto* ping = std::get_if<ipc::Ping>(&request->body)) {
      if (!ch.Send({request->id, ipc::Pong{ping->nonce}}, Clock::now() + kDeadline).ok()) return 4;
    } else if (auto* frames = std::get_if<ipc::FrameRequest>(&request->body)) {
      const auto& range = std::get<ipc::IndexRange>(frames->selection);
      const uint64_t size = uint64_t{width} * height * 3;
      for (int64_t i = range.start; i < range.stop; ++i) {
        auto slot = ch.AcquireSlot(Clock::now() + kDeadline);
        if (!slot.ok()) return 5;
        FillFrame(slot->bytes.data(), size, static_cast<uint64_t>(i));
        ipc::FrameRef ref;
        ref.slot = slot->index;
        ref.size = size;
        ref.width = width;
        ref.height = height;
        ref.pixel_format = "rgb24";
        ref.planes = {{0, width * 3, height}};
        ref.index = i;
        ch.arena().Lend(slot->index);
        ipc::FrameBatch batch{{std::move(ref)}, i + 1 == range.stop};
        if (!ch.Send({request->id, std::move(batch)}, Clock::now() + kDeadline).ok()) return 6;
      }
    } else if (std::holds_alternative<ipc::Close>(request->body)) {
      return 0;
    }
  }
}

// CPU seconds the threads of process `pid` have run so far; 0 if it
// cannot be read.
double ProcessCpuSeconds(pid_t pid) {
  absl::StatusOr<std::vector<ThreadCpu>> threads = ThreadsCpu(pid);
  double sum = 0;
  if (threads.ok()) {
    for (const ThreadCpu& t : *threads) sum += t.seconds;
  }
  return sum;
}

// Frames per second over a run, and the CPU each side spent per frame.
struct FrameRun {
  double fps = 0;
  double consumer_cpu_us = 0;  // the host, or the reading thread
  double producer_cpu_us = 0;  // the peer process, or the writing thread
};

struct ChannelResults {
  double rtt_us = 0;
  FrameRun frames;
};

absl::StatusOr<ChannelResults> MeasureChannel(const IpcBenchOptions& o) {
  const uint64_t frame_bytes = uint64_t(o.width) * o.height * 3;
  ipc::Geometry geometry;
  geometry.slot_count = static_cast<uint32_t>(o.slots);
  geometry.slot_bytes = ipc::Geometry::SlotBytesFor(frame_bytes);
  auto created = ipc::HostChannel::Create(geometry);
  if (!created.ok()) return created.status();
  std::unique_ptr<ipc::HostChannel> host = std::move(created->first);
  ipc::PeerEnds ends = std::move(created->second);
  Child child([&] { return ServePeer(std::move(ends), o.width, o.height); });
  if (!child.started()) return ipc::ErrnoStatus("fork");
  auto pidfd = ipc::OpenPidFd(child.pid());
  if (!pidfd.ok()) return pidfd.status();
  host->WatchProcess(*std::move(pidfd));
  ends.memfd.reset();
  ends.socket.reset();
  ChannelResults r;
  uint64_t id = 0;
  auto round_trip = [&]() -> absl::Status {
    if (absl::Status s = host->Send({++id, ipc::Ping{id}}, Clock::now() + kDeadline); !s.ok()) return s;
    auto in = host->Receive(Clock::now() + kDeadline);
    if (!in.ok()) return in.status();
    if (!std::holds_alternative<ipc::Pong>(in->response.body)) return absl::InternalError("expected pong");
    return absl::OkStatus();
  };
  for (int i = 0; i < 1000; ++i) {
    if (absl::Status s = round_trip(); !s.ok()) return s;
  }
  auto start = Clock::now();
  for (int i = 0; i < o.round_trips; ++i) {
    if (absl::Status s = round_trip(); !s.ok()) return s;
  }
  r.rtt_us = Seconds(Clock::now() - start) * 1e6 / o.round_trips;

  // Frames: the forked peer knows the frame size from its copy of `o`. The
  // arena's pages are in place on both sides since the channel was made
  // (ipc/region.h), as the local path's buffers are before its clock.
  uint64_t sink = 0;
  const double host_cpu_before = ThreadCpuSeconds();
  const double peer_cpu_before = ProcessCpuSeconds(child.pid());
  start = Clock::now();
  if (absl::Status s = host->Send({++id, ipc::FrameRequest{ipc::IndexRange{0, o.frames, 1}}},
                                  Clock::now() + kDeadline);
      !s.ok()) {
    return s;
  }
  for (bool final = false; !final;) {
    auto in = host->Receive(Clock::now() + kDeadline);
    if (!in.ok()) return in.status();
    auto* batch = std::get_if<ipc::FrameBatch>(&in->response.body);
    if (batch == nullptr) return absl::InternalError("expected frames");
    final = batch->final;
    for (ipc::FrameLease& lease : in->frames) {
      sink += Checksum(lease.bytes().data(), lease.bytes().size());
      lease.Reset();
    }
  }
  r.frames.fps = o.frames / Seconds(Clock::now() - start);
  r.frames.consumer_cpu_us = (ThreadCpuSeconds() - host_cpu_before) * 1e6 / o.frames;
  r.frames.producer_cpu_us = (ProcessCpuSeconds(child.pid()) - peer_cpu_before) * 1e6 / o.frames;
  if (sink == 0) return absl::InternalError("frames were all zero");
  if (absl::Status s = host->Send({++id, ipc::Close{}}, Clock::now() + kDeadline); !s.ok()) return s;
  if (absl::Status s = child.Wait(); !s.ok()) return s;
  return r;
}

double MeasureSingleThreadFps(const IpcBenchOptions& o) {
  const size_t size = size_t(o.width) * o.height * 3;
  std::vector<uint8_t> buffer(size);
  uint64_t sink = 0;
  const auto start = Clock::now();
  for (int i = 0; i < o.frames; ++i) {
    FillFrame(buffer.data(), size, static_cast<uint64_t>(i));
    sink += Checksum(buffer.data(), size);
  }
  const double fps = o.frames / Seconds(Clock::now() - start);
  KeepObservable(sink);
  return fps;
}

// local_fps: the same frames handed between two threads of one process
// through `slots` private buffers: what crossing from one core to another
// costs with no IPC at all. frame_fps close to this means the arena adds
// nothing beyond the hand-off itself.
FrameRun MeasureHandoff(const IpcBenchOptions& o) {
  const size_t size = size_t(o.width) * o.height * 3;
  // Zero-filled: every page is in place before the clock starts.
  std::vector<std::vector<uint8_t>> buffers(o.slots, std::vector<uint8_t>(size));
  std::atomic<int64_t> produced{0}, consumed{0};
  auto wait_until = [](auto done) {
    while (!done()) std::this_thread::yield();
  };
  double producer_cpu = 0;
  const double consumer_cpu_before = ThreadCpuSeconds();
  const auto start = Clock::now();
  std::thread producer([&] {
    const double before = ThreadCpuSeconds();
    for (int64_t i = 0; i < o.frames; ++i) {
      wait_until([&] { return i - consumed.load(std::memory_order_acquire) < o.slots; });
      FillFrame(buffers[i % o.slots].data(), size, static_cast<uint64_t>(i));
      produced.store(i + 1, std::memory_order_release);
    }
    producer_cpu = ThreadCpuSeconds() - before;
  });
  uint64_t sink = 0;
  for (int64_t i = 0; i < o.frames; ++i) {
    wait_until([&] { return produced.load(std::memory_order_acquire) > i; });
    sink += Checksum(buffers[i % o.slots].data(), size);
    consumed.store(i + 1, std::memory_order_release);
  }
  FrameRun r;
  r.consumer_cpu_us = (ThreadCpuSeconds() - consumer_cpu_before) * 1e6 / o.frames;
  producer.join();
  r.fps = o.frames / Seconds(Clock::now() - start);
  r.producer_cpu_us = producer_cpu * 1e6 / o.frames;
  KeepObservable(sink);
  return r;
}

}  // namespace

absl::StatusOr<IpcBenchResult> RunIpcBench(const IpcBenchOptions& o) {
  std::vector<double> futex, channel, frames, single, handoff;
  std::vector<double> host_cpu, peer_cpu, reader_cpu, writer_cpu;
  for (int round = 0; round < o.rounds; ++round) {
    auto f = FutexRoundTripUs(o.round_trips);
    if (!f.ok()) return f.status();
    auto c = MeasureChannel(o);
    if (!c.ok()) return c.status();
    futex.push_back(*f);
    channel.push_back(c->rtt_us);
    frames.push_back(c->frames.fps);
    host_cpu.push_back(c->frames.consumer_cpu_us);
    peer_cpu.push_back(c->frames.producer_cpu_us);
    single.push_back(MeasureSingleThreadFps(o));
    const FrameRun local = MeasureHandoff(o);
    handoff.push_back(local.fps);
    reader_cpu.push_back(local.consumer_cpu_us);
    writer_cpu.push_back(local.producer_cpu_us);
  }
  IpcBenchResult r;
  r.futex_rtt_us = Median(futex);
  r.channel_rtt_us = Median(channel);
  r.rtt_ratio = r.channel_rtt_us / r.futex_rtt_us;
  r.frame_fps = Median(frames);
  r.local_fps = Median(handoff);
  r.frame_ratio = r.frame_fps / r.local_fps;
  r.host_cpu_us_per_frame = Median(host_cpu);
  r.peer_cpu_us_per_frame = Median(peer_cpu);
  r.local_reader_cpu_us_per_frame = Median(reader_cpu);
  r.local_writer_cpu_us_per_frame = Median(writer_cpu);
  r.single_thread_fps = Median(single);
  r.single_thread_ratio = r.frame_fps / r.single_thread_fps;
  r.width = o.width;
  r.height = o.height;
  r.slots = o.slots;
  r.targets = {{"rtt_ratio", "<= 1.5", r.rtt_ratio <= 1.5}, {"frame_ratio", ">= 0.9", r.frame_ratio >= 0.9}};
  return r;
}

std::string IpcBenchResult::ToJson() const {
  cli::JsonWriter w;
  w.BeginObject();
  w.Key("futex_rtt_us").Double(Rounded(futex_rtt_us, 3)).Key("channel_rtt_us").Double(Rounded(channel_rtt_us, 3));
  w.Key("rtt_ratio").Double(Rounded(rtt_ratio, 3));
  w.Key("frame_fps").Double(Rounded(frame_fps, 1)).Key("local_fps").Double(Rounded(local_fps, 1));
  w.Key("frame_ratio").Double(Rounded(frame_ratio, 3));
  w.Key("host_cpu_us_per_frame").Double(Rounded(host_cpu_us_per_frame, 1));
  w.Key("peer_cpu_us_per_frame").Double(Rounded(peer_cpu_us_per_frame, 1));
  w.Key("local_reader_cpu_us_per_frame").Double(Rounded(local_reader_cpu_us_per_frame, 1));
  w.Key("local_writer_cpu_us_per_frame").Double(Rounded(local_writer_cpu_us_per_frame, 1));
  w.Key("single_thread_fps").Double(Rounded(single_thread_fps, 1));
  w.Key("single_thread_ratio").Double(Rounded(single_thread_ratio, 3));
  w.Key("frame_width").Int(width).Key("frame_height").Int(height).Key("frame_format").String("rgb24");
  w.Key("arena_slots").Int(slots);
  WriteTargets(w, targets);
  w.EndObject();
  return w.str();
}

std::string IpcBenchResult::ToText() const {
  return absl::StrFormat(
      "round trip: futex %.2f us, channel %.2f us, ratio %.2f %s\n"
      "frames %dx%d rgb24, %d arena slots: arena (two processes) %.1f fps, local (two threads, %d private "
      "buffers) %.1f fps, ratio %.3f %s\n"
      "  CPU us/frame: arena host %.1f, backend %.1f; local reader %.1f, writer %.1f\n"
      "  one thread writing then reading one buffer: %.1f fps; arena / that %.3f\n",
      futex_rtt_us, channel_rtt_us, rtt_ratio, TargetNote(targets, "rtt_ratio"), width, height, slots, frame_fps,
      slots, local_fps, frame_ratio, TargetNote(targets, "frame_ratio"), host_cpu_us_per_frame,
      peer_cpu_us_per_frame, local_reader_cpu_us_per_frame, local_writer_cpu_us_per_frame, single_thread_fps, single_thread_ratio);
}

}  // namespace codecvisor::bench
