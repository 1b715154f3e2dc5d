// codecvisor._codecvisor: the Python package's binding of the public C++ API
// (include/codecvisor/), nothing behind it. The pure-Python modules beside
// it (decoders.py, backends.py, ...) give it torchcodec's surface.
//
// Boundary rules (python/README.md has the whole design):
// - Every wait on a backend runs with the GIL released.
// - Frames never leave this file as views of the backend's shared memory:
//   each request's frames are copied once, as they arrive, into one
//   contiguous buffer that numpy (and torch, without a copy) then owns. The
//   decoder's arena slots are therefore always free between calls, however
//   many frames the caller keeps.
// - fork(): a Host or decoder made in another process (the parent of a
//   DataLoader worker) is never used or destroyed here: its methods raise
//   ForkedError, and its destructor leaks it rather than stop the parent's
//   backends. The Python layer reopens in the child.
// - Errors: a non-OK Status raises StatusError(code, message); the Python
//   layer maps the code to the exception type torchcodec raises.

#include <unistd.h>

#include <algorithm>
#include <new>
#include <utility>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codecvisor/codecvisor.h"
#include "python/codecvisor/batch_memory.h"
#include "pybind11/chrono.h"
#include "pybind11/numpy.h"
#include "pybind11/pybind11.h"
#include "pybind11/stl.h"

namespace codecvisor::python {
namespace {

namespace py = pybind11;

// Raised (as _codecvisor.StatusError) for every non-OK Status.
struct StatusError {
  Status status;
};

// Raised (as _codecvisor.ForkedError) for an object of another process.
struct ForkedError {
  std::string what;
};

void Check(const Status& status) {
  if (!status.ok()) throw StatusError{status};
}

template <typename T>
T Take(Result<T> result) {
  if (!result.ok()) throw StatusError{result.status()};
  return *std::move(result);
}

// Ownership that a forked child must not exercise: used only by the process
// that made it, leaked (not destroyed) by any other.
template <typename T>
class Owned {
 public:
  explicit Owned(std::unique_ptr<T> object) : object_(std::move(object)), owner_(getpid()) {}
  // Runs when Python collects the object, with the GIL held: destroying it
  // may wait for the backend (a close message, up to 100 ms when its
  // channel is full), so other Python threads run meanwhile, except while
  // the interpreter shuts down, when handing the GIL over is unsafe.
  ~Owned() { Reset(); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  T& get(const char* what) {
    if (getpid() != owner_) throw ForkedError{std::string(what) + " was made in process " + std::to_string(owner_)};
    if (object_ == nullptr) throw ForkedError{std::string(what) + " is closed"};
    return *object_;
  }
  // Destroys it now (in its own process), e.g. on close(), with the GIL
  // released: closing may wait for the backend.
  void Reset() {
    if (getpid() != owner_) {
      (void)object_.release();  // the parent's; it is not ours to stop
    } else if (object_ != nullptr && PyGILState_Check() && !_Py_IsFinalizing()) {
      py::gil_scoped_release release;
      object_.reset();
    } else {
      object_.reset();
    }
  }

 private:
  std::unique_ptr<T> object_;
  const pid_t owner_;
};

py::dict MetadataDict(const StreamMetadata& m) {
  py::dict d;
  d["stream_index"] = m.stream_index;
  d["codec"] = m.codec;
  d["width"] = m.width;
  d["height"] = m.height;
  d["pixel_format"] = m.pixel_format;
  d["num_frames_from_header"] = m.num_frames_from_header;
  d["num_frames_from_scan"] = m.num_frames_from_scan;
  d["average_fps"] = m.average_fps;
  d["duration_seconds"] = m.duration_seconds;
  d["begin_stream_seconds"] = m.begin_stream_seconds;
  d["end_stream_seconds"] = m.end_stream_seconds;
  d["bit_rate"] = m.bit_rate;
  d["rotation_degrees"] = m.rotation_degrees;
  d["color_space"] = m.color_space;
  d["color_range"] = m.color_range;
  d["color_primaries"] = m.color_primaries;
  d["color_transfer"] = m.color_transfer;
  d["time_base"] = py::make_tuple(m.time_base.num, m.time_base.den);
  d["num_video_streams"] = m.num_video_streams;
  return d;
}

py::dict BackendDict(const BackendInfo& b) {
  py::dict d;
  d["name"] = b.name;
  d["devices"] = b.devices;
  d["manifest_path"] = b.manifest_path;
  d["state"] = b.state;
  d["diagnostic"] = b.diagnostic;
  d["pid"] = b.pid;
  d["uptime_seconds"] = b.uptime_seconds;
  d["sessions"] = b.sessions;
  d["restarts"] = b.restarts;
  d["last_exit"] = b.last_exit;
  d["last_exit_time"] = b.last_exit_time;
  d["warm_spare"] = b.warm_spare;
  d["sandbox"] = b.sandbox;
  d["version"] = b.version;
  return d;
}

// The frames of one request, copied as they arrive into one buffer laid
// out as the batch tensor: N x H x W x 3 (interleaved) or N x 3 x H x W.
// Scattered (the samplers' hook): arriving frame k goes to every output
// position in targets[k], so a request for distinct frames fills a batch
// that repeats some; the repeats cost a copy, not a decode.
class Batch {
 public:
  explicit Batch(size_t expected) : expected_(expected) {}
  explicit Batch(std::vector<std::vector<uint32_t>> targets, size_t outputs)
      : expected_(outputs), targets_(std::move(targets)), pts_(outputs), durations_(outputs) {}

  Status Add(const Frame& f) {
    const size_t w = f.width(), h = f.height();
    if (arrived_ == 0) {
      width_ = w;
      height_ = h;
      planar_ = f.format() == OutputFormat::kRgb24Planar;
      frame_bytes_ = w * h * 3;
    } else if (w != width_ || h != height_) {
      return Status(StatusCode::kInternal, "frames of one stream changed size mid-request");
    }
    if (scattered()) return AddScattered(f);
    const size_t at = arrived_ * frame_bytes_;
    if (at + frame_bytes_ > memory_.size()) {
      // First frame: room for what the request should bring; then double.
      BatchMemory bigger(std::max(arrived_ == 0 ? frame_bytes_ * std::max<size_t>(expected_, 1) : 0,
                                  2 * memory_.size() + frame_bytes_));
      if (at > 0) std::memcpy(bigger.data(), memory_.data(), at);
      memory_ = std::move(bigger);
    }
    if (Status s = CopyPixels(f, memory_.data() + at); !s.ok()) return s;
    pts_.push_back(f.pts_seconds());
    durations_.push_back(f.duration_seconds());
    ++arrived_;
    return Status();
  }

  // Whether every frame asked for came (a scattered batch must be whole).
  Status Complete() const {
    if (scattered() && arrived_ != targets_.size()) {
      return Status(StatusCode::kInternal, "the backend sent " + std::to_string(arrived_) + " of " +
                                               std::to_string(targets_.size()) + " frames");
    }
    return Status();
  }

  // (data, pts_seconds, duration_seconds) as numpy arrays that own their memory.
  py::tuple ToNumpy() {
    auto* memory = new BatchMemory(std::move(memory_));
    py::capsule owner(memory, [](void* p) { delete static_cast<BatchMemory*>(p); });
    const py::ssize_t n = static_cast<py::ssize_t>(scattered() ? expected_ : arrived_), h = height_, w = width_;
    std::vector<py::ssize_t> shape = planar_ ? std::vector<py::ssize_t>{n, 3, h, w} : std::vector<py::ssize_t>{n, h, w, 3};
    py::array_t<uint8_t> data(shape, memory->data(), owner);
    return py::make_tuple(data, py::array_t<double>(pts_.size(), pts_.data()),
                          py::array_t<double>(durations_.size(), durations_.data()));
  }

 private:
  bool scattered() const { return !targets_.empty(); }

  Status AddScattered(const Frame& f) {
    if (arrived_ >= targets_.size()) return Status(StatusCode::kInternal, "the backend sent more frames than asked");
    if (memory_.size() == 0) memory_ = BatchMemory(frame_bytes_ * expected_);
    const std::vector<uint32_t>& to = targets_[arrived_++];
    if (to.empty()) return Status();
    uint8_t* first = memory_.data() + to[0] * frame_bytes_;
    if (Status s = CopyPixels(f, first); !s.ok()) return s;
    for (size_t i = 1; i < to.size(); ++i) std::memcpy(memory_.data() + to[i] * frame_bytes_, first, frame_bytes_);
    for (uint32_t p : to) {
      pts_[p] = f.pts_seconds();
      durations_[p] = f.duration_seconds();
    }
    return Status();
  }

  // The frame's pixels at `out`, rows one by one: a backend may pad its
  // rows (stride > row).
  Status CopyPixels(const Frame& f, uint8_t* out) const {
    const size_t planes = planar_ ? 3 : 1;
    const size_t row = planar_ ? width_ : width_ * 3;
    if (f.num_planes() != planes) return Status(StatusCode::kInternal, "unexpected plane count");
    for (size_t p = 0; p < planes; ++p) {
      const std::span<const uint8_t> plane = f.plane(p);
      const size_t stride = f.stride(p);
      if (stride < row || plane.size() < stride * (height_ - 1) + row) {
        return Status(StatusCode::kInternal, "a frame plane is smaller than its size says");
      }
      for (size_t y = 0; y < height_; ++y) std::memcpy(out + (p * height_ + y) * row, plane.data() + y * stride, row);
    }
    return Status();
  }

  const size_t expected_;
  const std::vector<std::vector<uint32_t>> targets_;
  BatchMemory memory_;
  std::vector<double> pts_, durations_;
  size_t arrived_ = 0, width_ = 0, height_ = 0, frame_bytes_ = 0;
  bool planar_ = false;
};

class PyDecoder {
 public:
  explicit PyDecoder(std::unique_ptr<VideoDecoder> decoder) : decoder_(std::move(decoder)) {}

  py::dict metadata() { return MetadataDict(decoder_.get("this decoder").metadata()); }
  std::string backend_name() { return decoder_.get("this decoder").backend_name(); }
  uint64_t retries() { return decoder_.get("this decoder").retries(); }
  void close() { decoder_.Reset(); }

  py::tuple Decode(const FrameSelection& selection, size_t expected) {
    Batch batch(expected);
    return Fill(selection, batch);
  }

  py::tuple Fill(const FrameSelection& selection, Batch& batch) {
    VideoDecoder& decoder = decoder_.get("this decoder");
    Status status;
    {
      py::gil_scoped_release release;
      status = decoder.ForEachFrame(selection, [&batch](Frame f) { return batch.Add(f); });
    }
    Check(status);
    Check(batch.Complete());
    return batch.ToNumpy();
  }

 private:
  Owned<VideoDecoder> decoder_;
};

py::tuple Scattered(PyDecoder& d, const FrameSelection& request, size_t distinct, const std::vector<uint32_t>& where) {
  std::vector<std::vector<uint32_t>> targets(distinct);
  for (uint32_t p = 0; p < where.size(); ++p) {
    if (where[p] >= distinct) throw StatusError{Status(StatusCode::kInvalidArgument, "where[] names a frame not asked for")};
    targets[where[p]].push_back(p);
  }
  Batch batch(std::move(targets), where.size());
  return d.Fill(request, batch);
}

DecoderOptions MakeOptions(const std::string& device, int32_t stream_index, bool planar, uint32_t threads,
                           const std::string& seek_mode, double timeout_seconds) {
  DecoderOptions o;
  o.device = device;
  o.stream_index = stream_index;
  o.output_format = planar ? OutputFormat::kRgb24Planar : OutputFormat::kRgb24;
  o.decoder_threads = threads;
  o.seek_mode = seek_mode == "approximate" ? SeekMode::kApproximate : SeekMode::kExact;
  if (timeout_seconds > 0) {
    o.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
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
    Result<std::unique_ptr<Host>> host = [&] {
      py::gil_scoped_release release;
      return Host::Create(options);
    }();
    return std::make_unique<PyHost>(Take(std::move(host)));
  }

  std::unique_ptr<PyDecoder> OpenPath(const std::string& path, const DecoderOptions& options) {
    Host& host = host_.get("this Host");
    Result<std::unique_ptr<VideoDecoder>> decoder = [&] {
      py::gil_scoped_release release;
      return host.OpenDecoder(path, options);
    }();
    return std::make_unique<PyDecoder>(Take(std::move(decoder)));
  }

  std::unique_ptr<PyDecoder> OpenBytes(const py::buffer& bytes, const std::string& label,
                                       const DecoderOptions& options) {
    Host& host = host_.get("this Host");
    py::buffer_info info = bytes.request();
    if (info.ndim != 1 || info.itemsize != 1 || info.strides[0] != 1) {
      throw StatusError{Status(StatusCode::kInvalidArgument, label + ": expected contiguous bytes")};
    }
    const std::string_view view(static_cast<const char*>(info.ptr), static_cast<size_t>(info.size));
    Result<std::unique_ptr<VideoDecoder>> decoder = [&] {
      py::gil_scoped_release release;  // `bytes` stays alive: the caller holds it
      return host.OpenDecoderFromBytes(view, label, options);
    }();
    return std::make_unique<PyDecoder>(Take(std::move(decoder)));
  }

  py::list Backends() {
    py::list out;
    for (const BackendInfo& b : host_.get("this Host").Backends()) out.append(BackendDict(b));
    return out;
  }
  std::vector<std::string> Warnings() { return host_.get("this Host").warnings(); }
  std::string DefaultDevice() { return host_.get("this Host").default_device(); }
  void LoadBackend(const std::string& manifest) { Check(host_.get("this Host").LoadBackend(manifest)); }
  void ResetBackend(const std::string& name) { Check(host_.get("this Host").ResetBackend(name)); }
  void StartBackend(const std::string& name, double timeout_seconds) {
    Host& host = host_.get("this Host");
    Status s;
    {
      py::gil_scoped_release release;
      s = host.StartBackend(name, std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)));
    }
    Check(s);
  }
  void close() { host_.Reset(); }

 private:
  Owned<Host> host_;
};

}  // namespace

void Define(pybind11::module_& m) {
  namespace py = pybind11;
  m.doc() = "codecvisor's C++ API, bound for the codecvisor package (use codecvisor.decoders)";
  m.attr("__version__") = Version();

  static py::exception<StatusError> status_error(m, "StatusError", PyExc_RuntimeError);
  static py::exception<ForkedError> forked_error(m, "ForkedError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object error = py::reinterpret_borrow<py::object>(status_error.ptr())(py::str(e.status.message()));
      error.attr("code") = StatusCodeName(e.status.code());
      PyErr_SetObject(status_error.ptr(), error.ptr());
    } catch (const ForkedError& e) {
      PyErr_SetString(forked_error.ptr(), e.what.c_str());
    }
  });

  py::class_<PyDecoder>(m, "Decoder")
      .def("metadata", &PyDecoder::metadata)
      .def("backend_name", &PyDecoder::backend_name)
      .def("retries", &PyDecoder::retries)
      .def("close", &PyDecoder::close)
      .def(
          "frames_at",
          [](PyDecoder& d, std::vector<int64_t> indices) {
            const size_t n = indices.size();
            return d.Decode(FrameSelection::AtIndices(std::move(indices)), n);
          },
          py::arg("indices"))
      // The samplers' hook: one request for distinct frames (indices, or
      // times), output position p holding frame where[p] of them.
      .def(
          "frames_at_scattered",
          [](PyDecoder& d, std::vector<int64_t> indices, const std::vector<uint32_t>& where) {
            const size_t distinct = indices.size();
            return Scattered(d, FrameSelection::AtIndices(std::move(indices)), distinct, where);
          },
          py::arg("indices"), py::arg("where"))
      .def(
          "frames_played_at_scattered",
          [](PyDecoder& d, std::vector<double> seconds, const std::vector<uint32_t>& where) {
            const size_t distinct = seconds.size();
            return Scattered(d, FrameSelection::PlayedAtSeconds(std::move(seconds)), distinct, where);
          },
          py::arg("seconds"), py::arg("where"))
      .def(
          "frames_in_range",
          [](PyDecoder& d, int64_t start, int64_t stop, int64_t step) {
            const size_t n = stop > start && step > 0 ? static_cast<size_t>((stop - start - 1) / step + 1) : 0;
            return d.Decode(FrameSelection::InRange(start, stop, step), n);
          },
          py::arg("start"), py::arg("stop"), py::arg("step"))
      .def(
          "frames_played_at",
          [](PyDecoder& d, std::vector<double> seconds) {
            const size_t n = seconds.size();
            return d.Decode(FrameSelection::PlayedAtSeconds(std::move(seconds)), n);
          },
          py::arg("seconds"))
      .def(
          "frames_played_in_range",
          [](PyDecoder& d, double start, double stop) {
            return d.Decode(FrameSelection::PlayedInSeconds(start, stop), 0);
          },
          py::arg("start_seconds"), py::arg("stop_seconds"));

  py::class_<PyHost>(m, "Host")
      .def(py::init(&PyHost::Create), py::arg("backend_path"), py::arg("autoload"), py::arg("default_device"))
      .def(
          "open_path",
          [](PyHost& h, const std::string& path, const std::string& device, int32_t stream_index, bool planar,
             uint32_t threads, const std::string& seek_mode, double timeout) {
            return h.OpenPath(path, MakeOptions(device, stream_index, planar, threads, seek_mode, timeout));
          },
          py::arg("path"), py::arg("device"), py::arg("stream_index"), py::arg("planar"), py::arg("threads"),
          py::arg("seek_mode"), py::arg("timeout"))
      .def(
          "open_bytes",
          [](PyHost& h, const py::buffer& bytes, const std::string& label, const std::string& device,
             int32_t stream_index, bool planar, uint32_t threads, const std::string& seek_mode, double timeout) {
            return h.OpenBytes(bytes, label, MakeOptions(device, stream_index, planar, threads, seek_mode, timeout));
          },
          py::arg("data"), py::arg("label"), py::arg("device"), py::arg("stream_index"), py::arg("planar"),
          py::arg("threads"), py::arg("seek_mode"), py::arg("timeout"))
      .def("backends", &PyHost::Backends)
      .def("warnings", &PyHost::Warnings)
      .def("default_device", &PyHost::DefaultDevice)
      .def("load_backend", &PyHost::LoadBackend, py::arg("manifest"))
      .def("reset_backend", &PyHost::ResetBackend, py::arg("name"))
      .def("start_backend", &PyHost::StartBackend, py::arg("name"), py::arg("timeout_seconds"))
      .def("close", &PyHost::close);
}

}  // namespace codecvisor::python

PYBIND11_MODULE(_codecvisor, m) { codecvisor::python::Define(m); }
