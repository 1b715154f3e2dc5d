#include "python/codecvisor/host_bindings.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "codecvisor/codecvisor.h"
#include "pybind11/chrono.h"
#include "pybind11/stl.h"
#include "python/codecvisor/decoder_bindings.h"
#include "python/codecvisor/dicts.h"
#include "python/codecvisor/interrupt_watch.h"
#include "python/codecvisor/owned.h"
#include "python/codecvisor/status_bridge.h"

namespace codecvisor::python {
namespace {

namespace py = pybind11;

DecoderOptions MakeOptions(const std::string& device, int32_t stream_index, bool planar, uint32_t threads,
                           const std::string& seek_mode, double timeout_seconds, double open_timeout_seconds) {
  DecoderOptions o;
  o.device = device;
  o.stream_index = stream_index;
  o.output_format = planar ? OutputFormat::kRgb24Planar : OutputFormat::kRgb24;
  // Batches are copies anyway: the backend may send native frames, which
  // the batch converts straight into its memory (batch.h).
  o.native_formats = RgbConverter::Formats();
  o.decoder_threads = threads;
  o.seek_mode = seek_mode == "approximate" ? SeekMode::kApproximate : SeekMode::kExact;
  if (timeout_seconds > 0) {
    o.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  }
  if (open_timeout_seconds > 0) {
    o.open_timeout = std::chrono::milliseconds(static_cast<int64_t>(open_timeout_seconds * 1000));
  }
  return o;
}

using OpenResult = Result<std::unique_ptr<VideoDecoder>>;

// An open that Ctrl-C may leave behind: the thread that runs it and the
// caller waiting for it share this. Once the caller has gone (`abandoned`),
// the thread closes what the open made.
struct PendingOpen {
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;       // `result` is set
  bool abandoned = false;  // the caller no longer waits
  std::optional<OpenResult> result;
};

// The Host, shared with the opens that Ctrl-C left running, so that it
// outlives them whenever Python lets go of it.
struct SharedHost {
  std::shared_ptr<Host> host;
};

class PyHost {
 public:
  explicit PyHost(std::unique_ptr<Host> host)
      : host_(std::make_unique<SharedHost>(SharedHost{std::shared_ptr<Host>(std::move(host))})) {}

  static std::unique_ptr<PyHost> Create(std::optional<std::vector<std::string>> backend_path,
                                        std::optional<bool> autoload, std::string default_device) {
    HostOptions options;
    options.backend_path = std::move(backend_path);
    options.autoload = autoload;
    options.default_device = std::move(default_device);
    Result<std::unique_ptr<Host>> host = WithoutGil([&] { return Host::Create(options); });
    return std::make_unique<PyHost>(Take(std::move(host)));
  }

  std::unique_ptr<PyDecoder> OpenPath(const std::string& path, const DecoderOptions& options) {
    std::shared_ptr<Host> host = SharedGet();
    InterruptWatch interrupt;
    return Decoder(Open(interrupt, host, [path, options](Host& h) { return h.OpenDecoder(path, options); }),
                   options);
  }

  std::unique_ptr<PyDecoder> OpenBytes(const py::buffer& bytes, const std::string& label,
                                       const DecoderOptions& options) {
    std::shared_ptr<Host> host = SharedGet();
    py::buffer_info info = bytes.request();
    if (info.ndim != 1 || info.itemsize != 1 || info.strides[0] != 1) {
      throw StatusError{Status(StatusCode::kInvalidArgument, label + ": expected contiguous bytes")};
    }
    const std::string_view view(static_cast<const char*>(info.ptr), static_cast<size_t>(info.size));
    InterruptWatch interrupt;
    if (!interrupt.active()) {
      // `bytes` stays alive meanwhile: the caller holds it.
      return Decoder(WithoutGil([&] { return host->OpenDecoderFromBytes(view, label, options); }), options);
    }
    // An open that Ctrl-C may leave running reads its own copy: the
    // caller's buffer may be gone before it is done.
    auto copy = std::make_shared<const std::string>(view);
    return Decoder(Open(interrupt, host,
                        [copy, label, options](Host& h) { return h.OpenDecoderFromBytes(*copy, label, options); }),
                   options);
  }

  py::list Backends() {
    py::list out;
    for (const BackendInfo& b : Get().Backends()) out.append(BackendDict(b));
    return out;
  }
  py::list Warnings() {
    py::list out;
    for (const std::string& w : Get().warnings()) out.append(Text(w));
    return out;
  }
  py::str DefaultDevice() { return Text(Get().default_device()); }
  void LoadBackend(const std::string& manifest) {
    Host& host = Get();
    Check(WithoutGil([&] { return host.LoadBackend(manifest); }));  // it reads a file
  }
  void ResetBackend(const std::string& name) { Check(Get().ResetBackend(name)); }
  void StartBackend(const std::string& name, double timeout_seconds) {
    Host& host = Get();
    const std::chrono::milliseconds timeout(static_cast<int64_t>(timeout_seconds * 1000));
    Check(WithoutGil([&] { return host.StartBackend(name, timeout); }));
  }
  void close() { host_.Reset(); }

 private:
  Host& Get() { return *host_.get("this Host").host; }
  std::shared_ptr<Host> SharedGet() { return host_.get("this Host").host; }

  static std::unique_ptr<PyDecoder> Decoder(OpenResult decoder, const DecoderOptions& options) {
    return std::make_unique<PyDecoder>(Take(std::move(decoder)), options.output_format);
  }

  // open(*host) with the GIL released. Where Ctrl-C would raise
  // KeyboardInterrupt (`interrupt` active), the open runs on a thread of its
  // own and the caller waits for it or for Ctrl-C, whichever comes first:
  // an exact-mode open scans the whole file, and a plugin's may take up to
  // its open timeout (twice, with a replay). An open left behind finishes
  // on that thread, which then closes the decoder it made; it holds the
  // Host meanwhile.
  template <typename Fn>
  static OpenResult Open(const InterruptWatch& interrupt, std::shared_ptr<Host> host, Fn open) {
    if (!interrupt.active()) return WithoutGil([&] { return open(*host); });
    auto pending = std::make_shared<PendingOpen>();
    try {
      std::thread([host, pending, open = std::move(open)]() mutable {
        OpenResult result = open(*host);
        std::unique_lock<std::mutex> lock(pending->mu);
        if (pending->abandoned) return;  // `result` is closed as it goes, with the lock released
        pending->result.emplace(std::move(result));
        pending->done = true;
        pending->done_cv.notify_all();
      }).detach();
    } catch (const std::system_error&) {
      // No thread to be had: the open, uninterruptible.
      return WithoutGil([&] { return open(*host); });
    }
    const bool done = WithoutGil([&] {
      std::unique_lock<std::mutex> lock(pending->mu);
      while (!pending->done) {
        if (interrupt.Raised()) {
          pending->abandoned = true;
          return false;
        }
        pending->done_cv.wait_for(lock, kInterruptPoll);
      }
      return true;
    });
    if (!done) {
      interrupt.Rethrow();
      return Status(StatusCode::kCancelled, "the open was interrupted");
    }
    return *std::move(pending->result);
  }

  // How often an open's caller looks for Ctrl-C.
  static constexpr std::chrono::milliseconds kInterruptPoll{20};

  Owned<SharedHost> host_;
};

}  // namespace

void DefineHost(py::module_& m) {
  py::class_<PyHost>(m, "Host")
      .def(py::init(&PyHost::Create), py::arg("backend_path"), py::arg("autoload"), py::arg("default_device"))
      .def(
          "open_path",
          [](PyHost& h, const std::string& path, const std::string& device, int32_t stream_index, bool planar,
             uint32_t threads, const std::string& seek_mode, double timeout, double open_timeout) {
            return h.OpenPath(path,
                              MakeOptions(device, stream_index, planar, threads, seek_mode, timeout, open_timeout));
          },
          py::arg("path"), py::arg("device"), py::arg("stream_index"), py::arg("planar"), py::arg("threads"),
          py::arg("seek_mode"), py::arg("timeout"), py::arg("open_timeout") = 0.0)
      .def(
          "open_bytes",
          [](PyHost& h, const py::buffer& bytes, const std::string& label, const std::string& device,
             int32_t stream_index, bool planar, uint32_t threads, const std::string& seek_mode, double timeout,
             double open_timeout) {
            return h.OpenBytes(
                bytes, label, MakeOptions(device, stream_index, planar, threads, seek_mode, timeout, open_timeout));
          },
          py::arg("data"), py::arg("label"), py::arg("device"), py::arg("stream_index"), py::arg("planar"),
          py::arg("threads"), py::arg("seek_mode"), py::arg("timeout"), py::arg("open_timeout") = 0.0)
      .def("backends", &PyHost::Backends)
      .def("warnings", &PyHost::Warnings)
      .def("default_device", &PyHost::DefaultDevice)
      .def("load_backend", &PyHost::LoadBackend, py::arg("manifest"))
      .def("reset_backend", &PyHost::ResetBackend, py::arg("name"))
      .def("start_backend", &PyHost::StartBackend, py::arg("name"), py::arg("timeout_seconds"))
      .def("close", &PyHost::close);
}

}  // namespace codecvisor::python
