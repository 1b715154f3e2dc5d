// codecvisor._codecvisor: the Python package's binding of the public C++ API
// (include/codecvisor/), nothing behind it. The pure-Python modules beside
// it (decoders.py, backends.py, ...) give it torchcodec's surface.
//
// One file per responsibility: status_bridge (errors), owned (fork-safe
// ownership), batch (a request's frames), dicts (records
// as dicts), decoder_bindings and host_bindings (the two classes).
//
// Boundary rules (python/README.md has the whole design):
// - Every wait on a backend runs with the GIL released, by WithoutGil
//   (status_bridge.h): a thread that Python ends as the interpreter exits,
//   where it takes the GIL back, stops there.
// - Frames never leave this extension as views of the backend's shared memory:
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

#include <atomic>
#include <cstdint>
#include <stdexcept>

#include "base/batch_memory.h"
#include "base/cgroup_paths.h"
#include "codecvisor/codecvisor.h"
#include "pybind11/numpy.h"
#include "pybind11/pybind11.h"
#include "python/codecvisor/decoder_bindings.h"
#include "python/codecvisor/host_bindings.h"
#include "python/codecvisor/status_bridge.h"

PYBIND11_MODULE(_codecvisor, m) {
  m.doc() = "codecvisor's C++ API, bound for the codecvisor package (use codecvisor.decoders)";
  m.attr("__version__") = codecvisor::Version();
  // numpy's C API, which every batch needs, looked up now, as the module
  // loads under the import lock: pybind11 looks it up on first use inside a
  // function-local static, and its import of numpy hands the GIL to other
  // threads, which then wait on the static's guard holding it (a deadlock
  // when threads make the process's first requests at once).
  pybind11::detail::npy_api::get();
  codecvisor::python::RegisterErrors(m);
  codecvisor::python::DefineDecoder(m);
  codecvisor::python::DefineHost(m);
  m.def(
      "populate_pages",
      [](uintptr_t address, size_t bytes) {
        return codecvisor::python::WithoutGil(
            [&] { return codecvisor::PopulatePages(reinterpret_cast<void*>(address), bytes); });
      },
      pybind11::arg("address"), pybind11::arg("bytes"),
      "Makes the writable pages of [address, address + bytes) of this process present in one call; False where "
      "the kernel cannot (they then fault in when first written).");
  m.def("batch_cache_limit_bytes", &codecvisor::BatchMemory::CacheLimitBytes,
        "The most bytes of freed batch memory this process keeps for its next batches.");
  m.def(
      "set_batch_cache_limit_bytes",
      [](size_t bytes) { codecvisor::python::WithoutGil([&] { codecvisor::BatchMemory::SetCacheLimitBytes(bytes); }); },
      pybind11::arg("bytes"),
      "Sets that limit, giving back what the cache holds (0: keep nothing).");
  m.def("usable_memory_bytes", &codecvisor::UsableMemoryBytes,
        "The memory this process may use: the machine's physical memory, or the memory limit of its cgroup or "
        "one above it (a container's) where lower; 0 if the system says neither.");
  m.def(
      "compare_exchange_u32",
      [](uintptr_t address, uint32_t expected, uint32_t desired) {
        if (address == 0 || address % alignof(uint32_t) != 0) {
          throw std::invalid_argument("compare_exchange_u32: the address is null or not 4-byte aligned");
        }
        // The word may be shared with another process (a DataLoader
        // worker's batch buffer): lock-free atomics on it are.
        std::atomic_ref<uint32_t> word(*reinterpret_cast<uint32_t*>(address));
        static_assert(std::atomic_ref<uint32_t>::is_always_lock_free);
        return word.compare_exchange_strong(expected, desired, std::memory_order_acq_rel, std::memory_order_acquire);
      },
      pybind11::arg("address"), pybind11::arg("expected"), pybind11::arg("desired"),
      "Atomically sets the 32-bit word at `address` (4-byte aligned, in this process's writable memory) to "
      "`desired` if it holds `expected` (acquire-release); True if it did. With expected == desired, an atomic "
      "test of the word.");
}
