#include "python/codecvisor/decoder_bindings.h"

#include <cstdint>
#include <vector>

#include "pybind11/stl.h"

namespace codecvisor::python {
namespace {

namespace py = pybind11;

py::tuple Scattered(PyDecoder& d, const FrameSelection& request, size_t distinct, const std::vector<uint32_t>& where) {
  std::vector<std::vector<uint32_t>> targets(distinct);
  for (uint32_t p = 0; p < where.size(); ++p) {
    if (where[p] >= distinct) throw StatusError{Status(StatusCode::kInvalidArgument, "where[] names a frame not asked for")};
    targets[where[p]].push_back(p);
  }
  Batch batch(std::move(targets), where.size(), d.format());
  return d.Fill(request, batch);
}

}  // namespace

void DefineDecoder(py::module_& m) {
  py::class_<PyDecoder>(m, "Decoder")
      .def("metadata", &PyDecoder::metadata)
      .def("backend_name", &PyDecoder::backend_name)
      .def("retries", &PyDecoder::retries)
      .def("close", &PyDecoder::close)
      // For the tests only (decoder_bindings.h): never used by the package.
      .def("_test_call_in_flight", &PyDecoder::TestCallInFlight)
      .def("_test_calls_waiting", &PyDecoder::TestCallsWaiting)
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
          [](PyDecoder& d, double start, double stop, size_t expected) {
            return d.Decode(FrameSelection::PlayedInSeconds(start, stop), expected);
          },
          py::arg("start_seconds"), py::arg("stop_seconds"), py::arg("expected") = 0);
}

}  // namespace codecvisor::python
