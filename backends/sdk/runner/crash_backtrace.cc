#include "backends/sdk/runner/crash_backtrace.h"

#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace codecvisor::runner {
namespace {

constexpr int kMaxFrames = 64;
constexpr size_t kPathBytes = 512;

// Set once by PrepareCrashBacktrace, before any other thread exists; only
// read afterwards (from signal handlers).
struct Config {
  bool enabled = false;
  char name[64] = {};
  int library_fd = -1;
  char library_open_path[64] = {};
  char library_display[kPathBytes] = {};
  int self_fd = -1;  // the runner's own executable
};
Config config;
std::atomic<bool> written{false};

void Copy(absl::string_view from, char* to, size_t size) {
  const size_t n = from.size() < size - 1 ? from.size() : size - 1;
  memcpy(to, from.data(), n);
  to[n] = '\0';
}

// A line assembled on the stack and written with one write(2), so that
// concurrent crashes on two threads do not interleave mid-line.
class Line {
 public:
  Line& Str(const char* s) {
    while (s != nullptr && *s != '\0' && len_ < sizeof(buf_)) buf_[len_++] = *s++;
    return *this;
  }
  Line& Dec(uint64_t v) {
    char digits[24];
    int n = 0;
    do digits[n++] = static_cast<char>('0' + v % 10); while ((v /= 10) != 0);
    while (n > 0 && len_ < sizeof(buf_)) buf_[len_++] = digits[--n];
    return *this;
  }
  Line& Hex(uint64_t v, int min_digits = 1) {
    char digits[16];
    int n = 0;
    do digits[n++] = "0123456789abcdef"[v & 15]; while ((v >>= 4) != 0);
    while (n < min_digits) digits[n++] = '0';
    Str("0x");
    while (n > 0 && len_ < sizeof(buf_)) buf_[len_++] = digits[--n];
    return *this;
  }
  void Write() {
    if (len_ == sizeof(buf_)) buf_[len_ - 1] = '\n';
    else buf_[len_++] = '\n';
    (void)!write(STDERR_FILENO, buf_, len_);
  }

 private:
  char buf_[1024];
  size_t len_ = 0;
};

bool ReadAt(int fd, void* out, size_t size, uint64_t offset) {
  return pread(fd, out, size, static_cast<off_t>(offset)) == static_cast<ssize_t>(size);
}

// The function symbol of the ELF file `fd` that covers link-time address
// `vaddr`, from .symtab, else .dynsym. Writes its name into `name` and the
// address's offset into it into `*delta`. Reads in fixed-size chunks on the
// stack: no allocation.
bool ElfSymbol(int fd, uint64_t vaddr, char* name, size_t name_size, uint64_t* delta) {
  Elf64_Ehdr eh;
  if (!ReadAt(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr)) {
    return false;
  }
  for (uint32_t wanted : {SHT_SYMTAB, SHT_DYNSYM}) {
    for (uint16_t i = 0; i < eh.e_shnum; ++i) {
      Elf64_Shdr sh, strtab;
      if (!ReadAt(fd, &sh, sizeof(sh), eh.e_shoff + uint64_t{i} * sizeof(sh)) || sh.sh_type != wanted) continue;
      if (sh.sh_link >= eh.e_shnum || !ReadAt(fd, &strtab, sizeof(strtab), eh.e_shoff + sh.sh_link * sizeof(sh))) {
        continue;
      }
      Elf64_Sym best{};
      bool found = false;
      Elf64_Sym chunk[64];
      const uint64_t count = sh.sh_size / sizeof(Elf64_Sym);
      for (uint64_t at = 0; at < count; at += 64) {
        const uint64_t n = count - at < 64 ? count - at : 64;
        if (!ReadAt(fd, chunk, n * sizeof(Elf64_Sym), sh.sh_offset + at * sizeof(Elf64_Sym))) break;
        for (uint64_t k = 0; k < n; ++k) {
          const Elf64_Sym& s = chunk[k];
          if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF) continue;
          const uint64_t size = s.st_size == 0 ? 1 : s.st_size;
          if (vaddr >= s.st_value && vaddr - s.st_value < size) {
            best = s;
            found = true;
          }
        }
      }
      if (!found) continue;
      const ssize_t got = pread(fd, name, name_size - 1, static_cast<off_t>(strtab.sh_offset + best.st_name));
      if (got <= 0) continue;
      name[got] = '\0';  // the name ends at its NUL, or is cut at name_size - 1
      *delta = vaddr - best.st_value;
      return name[0] != '\0';
    }
  }
  return false;
}

// The faulting instruction's address from the signal's context.
uintptr_t FaultPc(const void* ucontext) {
  if (ucontext == nullptr) return 0;
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
#if defined(__x86_64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

void WriteFrame(int index, uintptr_t pc, bool is_return_address) {
  Line line;
  line.Str("  #").Dec(static_cast<uint64_t>(index)).Str(" ").Hex(pc, 16);
  // A return address points after the call: look up the call itself.
  const uintptr_t lookup = is_return_address && pc > 0 ? pc - 1 : pc;
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(lookup), &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 ||
      map == nullptr) {
    line.Str(" (unknown module)").Write();
    return;
  }
  const uint64_t vaddr = lookup - map->l_addr;
  const char* module = info.dli_fname != nullptr && info.dli_fname[0] != '\0' ? info.dli_fname : nullptr;
  int fd = -1;
  bool close_fd = false;
  if (module != nullptr && config.library_fd >= 0 && strcmp(module, config.library_open_path) == 0) {
    fd = config.library_fd;
    module = config.library_display;
  } else if (module == nullptr || map->l_name == nullptr || map->l_name[0] == '\0') {
    fd = config.self_fd;  // the main program
    module = "codecvisor-backend";
  } else {
    fd = open(module, O_RDONLY | O_CLOEXEC);  // system libraries stay readable under Landlock
    close_fd = fd >= 0;
  }
  char symbol[256];
  uint64_t delta = 0;
  if (fd >= 0 && ElfSymbol(fd, vaddr, symbol, sizeof(symbol), &delta)) {
    line.Str(" ").Str(symbol).Str("+").Hex(delta);
  } else if (info.dli_sname != nullptr) {
    line.Str(" ").Str(info.dli_sname).Str("+").Hex(lookup - reinterpret_cast<uintptr_t>(info.dli_saddr));
  } else {
    line.Str(" ??");
  }
  if (close_fd) close(fd);
  line.Str(" (").Str(module).Str("+").Hex(vaddr).Str(")").Write();
}

}  // namespace

void PrepareCrashBacktrace(absl::string_view name, int library_fd, absl::string_view library_open_path,
                           absl::string_view library_display) {
  Copy(name, config.name, sizeof(config.name));
  config.library_fd = library_fd;
  Copy(library_open_path, config.library_open_path, sizeof(config.library_open_path));
  Copy(library_display, config.library_display, sizeof(config.library_display));
  config.self_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  void* warm[1];
  (void)backtrace(warm, 1);  // loads libgcc_s now, while the sandbox still allows it
  config.enabled = true;
}

bool CrashBacktraceEnabled() { return config.enabled; }

void WriteCrashBacktrace(int sig, const void* ucontext) {
  if (!config.enabled || written.exchange(true)) return;
  const char* abbrev = sigabbrev_np(sig);
  Line head;
  head.Str("codecvisor-backend: backend '").Str(config.name).Str("': fatal signal ").Dec(static_cast<uint64_t>(sig));
  if (abbrev != nullptr) head.Str(" (SIG").Str(abbrev).Str(")");
  head.Str("; backtrace of the crashing thread:").Write();
  void* frames[kMaxFrames];
  const int n = backtrace(frames, kMaxFrames);
  // Skip this handler's own frames and the signal trampoline: start at the
  // faulting instruction when it is on the stack.
  const uintptr_t pc = FaultPc(ucontext);
  int first = 0;
  for (int i = 0; i < n; ++i) {
    if (reinterpret_cast<uintptr_t>(frames[i]) == pc) {
      first = i;
      break;
    }
  }
  for (int i = first; i < n; ++i) {
    // The faulting frame's address is the instruction itself; the others
    // are return addresses.
    WriteFrame(i - first, reinterpret_cast<uintptr_t>(frames[i]), !(pc != 0 && i == first));
  }
  Line tail;
  tail.Str("codecvisor-backend: end of backtrace (file and line: addr2line -Cfe MODULE OFFSET)").Write();
}

}  // namespace codecvisor::runner
