// The runner's opt-in crash backtrace (backends/sdk/runner/crash_backtrace.h):
// with CODECVISOR_BACKEND_BACKTRACE=1 in the host's environment, a backend
// that dies of a fault signal inside the sandbox writes its crashing
// thread's stack to its stderr (the host's), naming the vendor's function
// even though the library hides its symbols; the host's crash hints still
// say how it died. The host forwards the child's stderr to its own
// descriptor 2 (core/backend_output.h), and finishes forwarding before it
// handles the death, so the test points descriptor 2 at a file while
// backends run.

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/fault_test_support.h"

namespace codecvisor::testing {

using ::codecvisor::internal::DecoderOptions;
namespace {

// Descriptor 2 goes to `path` for the object's lifetime.
class StderrToFile {
 public:
  explicit StderrToFile(const std::string& path) : path_(path), saved_(dup(STDERR_FILENO)) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  ~StderrToFile() {
    dup2(saved_, STDERR_FILENO);
    close(saved_);
  }
  std::string Text() const {
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string path_;
  int saved_;
};

class CrashBacktraceTest : public FaultTest {
 protected:
  void TearDown() override {
    unsetenv("CODECVISOR_BACKEND_BACKTRACE");
    FaultTest::TearDown();
  }

  // Opens a 10-frame faulty video that dies with `fault` at frame 3, reads
  // frames 0..3, and returns what the backends wrote to stderr. Frame 3 is
  // poison (two crashes): kAborted saying how the backend died.
  std::string CrashAndCapture(const std::string& fault, const std::string& expected_death) {
    const std::string video = WriteFile("bt_" + fault + ".syn",
                                        "synthetic frames=10 width=64 height=48 fps=25 fault=" + fault +
                                            " fault_frame=3");
    StderrToFile capture(std::string(std::getenv("TEST_TMPDIR")) + "/stderr_" + fault + ".txt");
    DecoderOptions options;
    options.request_timeout = std::chrono::milliseconds(10'000);
    auto decoder = Open(video, "faulty", options);
    EXPECT_TRUE(decoder.ok()) << decoder.status();
    if (!decoder.ok()) return "";
    for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE((*decoder)->GetFrameAt(i).ok()) << "frame " << i;
    auto poison = (*decoder)->GetFrameAt(3);
    EXPECT_EQ(poison.status().code(), absl::StatusCode::kAborted) << poison.status();
    EXPECT_NE(poison.status().message().find(expected_death), absl::string_view::npos) << poison.status();
    decoder->reset();
    host_.reset();  // every child gone, so stderr is complete
    return capture.Text();
  }
};

TEST_F(CrashBacktraceTest, SegfaultWritesTheCrashingThreadsBacktrace) {
  setenv("CODECVISOR_BACKEND_BACKTRACE", "1", 1);  // read at each spawn
  const std::string err = CrashAndCapture("segfault", "SIGSEGV");
  // Each line of the backend's stderr reaches ours with the host's prefix.
  EXPECT_NE(err.find("codecvisor: backend 'faulty': codecvisor-backend: backend 'faulty': fatal signal 11 "
                     "(SIGSEGV); backtrace of the crashing thread:\ncodecvisor: backend 'faulty':   #0 "),
            std::string::npos)
      << err;
  // The faulting frame is the vendor's hidden function, named from the
  // library's symbol table, with the offset addr2line takes.
  const size_t frame0 = err.find("  #0 ");
  ASSERT_NE(frame0, std::string::npos) << err;
  const std::string line0 = err.substr(frame0, err.find('\n', frame0) - frame0);
  EXPECT_NE(line0.find("InjectFault"), std::string::npos) << err;
  EXPECT_NE(line0.find("libcodecvisor_faulty.so+0x"), std::string::npos) << err;
  // Its callers: the vendor's decode_frame, called by the runner.
  EXPECT_NE(err.find("codecvisor-backend+0x"), std::string::npos) << err;
  EXPECT_NE(err.find("end of backtrace"), std::string::npos) << err;
  // One backtrace per crash: frame 3 killed two processes.
  size_t count = 0;
  for (size_t at = err.find("backtrace of the crashing thread"); at != std::string::npos;
       at = err.find("backtrace of the crashing thread", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 2u) << err;
}

// abort() in the runner (the init of its pid namespace) ends in a second
// fault; only the first, the cause, is reported.
TEST_F(CrashBacktraceTest, AbortIsReportedOncePerCrash) {
  setenv("CODECVISOR_BACKEND_BACKTRACE", "1", 1);  // read at each spawn
  const std::string err = CrashAndCapture("abort", "SIGABRT");
  EXPECT_NE(err.find("fatal signal 6 (SIGABRT); backtrace of the crashing thread:"), std::string::npos) << err;
  EXPECT_NE(err.find("InjectFault"), std::string::npos) << err;
  EXPECT_EQ(err.find("fatal signal 11"), std::string::npos) << err;
}

TEST_F(CrashBacktraceTest, OffByDefault) {
  const std::string err = CrashAndCapture("segfault", "SIGSEGV");
  EXPECT_EQ(err.find("backtrace"), std::string::npos) << err;
}

}  // namespace
}  // namespace codecvisor::testing
