#include "python/codecvisor/host_bindings.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codecvisor/codecvisor.h"
#include "pybind11/chrono.h"
#include "pybind11/stl.h"
#include "python/codecvisor/decoder_bindings.h"
#include "python/codecvisor/dicts.h"
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

class PyHost {
 public:
  explicit PyHost(std::unique_ptr<Host> host) : host_(std::move(host)) {}

  static std::unique_ptr<PyHost> Create(std::optional<std::vector<std::string>> backend_path,
                                        std::optional<bool> autoload, std::string default_device) {
    HostOptions options;
    options.backend_path = std::move(backend_path);
    options.autoload = autoload;
    options.default_device = std::move(default_device);
    // What this process saw of its backends' failures is kept for
    // `codecvisor backends` to show, as the CLI's commands keep theirs.
    options.history_file = Host::DefaultHistoryFile();
    Result<std::unique_ptr<Host>> host = WithoutGil([&] { return Host::Create(options); });
    return std::make_unique<PyHost>(Take(std::move(host)));
  }

  std::unique_ptr<PyDecoder> OpenPath(const std::string& path, const DecoderOptions& options) {
    Host& host = host_.get("this Host");
    Result<std::unique_ptr<VideoDecoder>> decoder = WithoutGil([&] { return host.OpenDecoder(path, options); });
    return std::make_unique<PyDecoder>(Take(std::move(decoder)), options.output_format);
  }

  std::unique_ptr<PyDecoder> OpenBytes(const py::buffer& bytes, const std::string& label,
                                       const DecoderOptions& options) {
    Host& host = host_.get("this Host");
    py::buffer_info info = bytes.request();
    if (info.ndim != 1 || info.itemsize != 1 || info.strides[0] != 1) {
      throw StatusError{Status(StatusCode::kInvalidArgument, label + ": expected contiguous bytes")};
    }
    const std::string_view view(static_cast<const char*>(info.ptr), static_cast<size_t>(info.size));
    // `bytes` stays alive meanwhile: the caller holds it.
    Result<std::unique_ptr<VideoDecoder>> decoder =
        WithoutGil([&] { return host.OpenDecoderFromBytes(view, label, options); });
    return std::make_unique<PyDecoder>(Take(std::move(decoder)), options.output_format);
  }

  py::list Backends() {
    py::list out;
    for (const BackendInfo& b : host_.get("this Host").Backends()) out.append(BackendDict(b));
    return out;
  }
  py::list Warnings() {
    py::list out;
    for (const std::string& w : host_.get("this Host").warnings()) out.append(Text(w));
    return out;
  }
  py::str DefaultDevice() { return Text(host_.get("this Host").default_device()); }
  void LoadBackend(const std::string& manifest) {
    Host& host = host_.get("this Host");
    Check(WithoutGil([&] { return host.LoadBackend(manifest); }));  // it reads a file
  }
  void ResetBackend(const std::string& name) { Check(host_.get("this Host").ResetBackend(name)); }
  void StartBackend(const std::string& name, double timeout_seconds) {
    Host& host = host_.get("this Host");
    const std::chrono::milliseconds timeout(static_cast<int64_t>(timeout_seconds * 1000));
    Check(WithoutGil([&] { return host.StartBackend(name, timeout); }));
  }
  void close() { host_.Reset(); }

 private:
  Owned<Host> host_;
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
