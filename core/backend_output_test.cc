// File: core/backend_output_test.cc

#include "core/backend_output.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace codecvisor {
namespace {

using Clock = OutputFilter::Clock;
using std::chrono::milliseconds;

// What the host makes of a plugin's text: nothing a terminal acts on, and
// nothing the CLI's escaping would escape again but a backslash.
TEST(ReplaceUnsafeForTerminalTest, ReplacesWhatATerminalActsOnAndKeepsTheRest) {
  const std::string bad = "\xef\xbf\xbd";  // U+FFFD
  EXPECT_EQ(ReplaceUnsafeForTerminal("decoded 12 frames\tin 3 ms"), "decoded 12 frames\tin 3 ms");
  EXPECT_EQ(ReplaceUnsafeForTerminal("\x1b]0;pwned\x07\nok"), bad + "]0;pwned" + bad + bad + "ok");
  EXPECT_EQ(ReplaceUnsafeForTerminal("C:\\acme caf\xc3\xa9"), "C:\\acme caf\xc3\xa9");
  EXPECT_EQ(ReplaceUnsafeForTerminal("\xc2\x9b" "2J"), bad + bad + "2J");
  for (const char* text : {"\x1b[2J\r\n", "a\\b\x7f", "\xe2\x80\xae" "cod.exe", "\xc0\x8a", "caf\xc3\xa9"}) {
    const std::string replaced = ReplaceUnsafeForTerminal(text);
    EXPECT_EQ(ReplaceUnsafeForTerminal(replaced), replaced) << text;
    std::string doubled_backslashes;
    for (char c : replaced) doubled_backslashes += c == '\\' ? std::string("\\\\") : std::string(1, c);
    EXPECT_EQ(EscapeForTerminal(replaced), doubled_backslashes) << "escaped twice: " << text;
  }
}

TEST(EscapeForTerminalTest, KeepsTextAndEscapesEverythingATerminalActsOn) {
  EXPECT_EQ(EscapeForTerminal("decoded 12 frames\tin 3 ms"), "decoded 12 frames\tin 3 ms");
  EXPECT_EQ(EscapeForTerminal("\x1b]0;pwned\x07\x1b[2J"), "\\x1b]0;pwned\\x07\\x1b[2J");
  EXPECT_EQ(EscapeForTerminal("line\nwidth 1920\r"), "line\\x0awidth 1920\\x0d");
  EXPECT_EQ(EscapeForTerminal(std::string("a\0b\x7f", 4)), "a\\x00b\\x7f");
  EXPECT_EQ(EscapeForTerminal("C:\\x1b"), "C:\\\\x1b");  // an escape cannot be forged
  EXPECT_EQ(EscapeForTerminal("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");  // é €
  EXPECT_EQ(EscapeForTerminal("\xc2\x9b" "2J"), "\\xc2\\x9b2J");  // C1 CSI in UTF-8
  EXPECT_EQ(EscapeForTerminal("\x9b" "2J"), "\\x9b2J");          // C1 CSI as a byte
  EXPECT_EQ(EscapeForTerminal("\xe2\x80\xae" "cod.exe"), "\\xe2\\x80\\xaecod.exe");  // RLO
  EXPECT_EQ(EscapeForTerminal("\xc0\x8a"), "\\xc0\\x8a");  // overlong newline
  EXPECT_EQ(EscapeForTerminal("\xe2\x82"), "\\xe2\\x82");  // cut sequence
}

class OutputFilterTest : public ::testing::Test {
 protected:
  OutputFilter Make() {
    return OutputFilter("acme", [this](std::string_view line) { lines_.emplace_back(line); }, t0_);
  }
  Clock::time_point t0_ = Clock::time_point() + std::chrono::hours(1);
  std::vector<std::string> lines_;
};

TEST_F(OutputFilterTest, LinesArePrefixedAndJoinedAcrossReads) {
  OutputFilter f = Make();
  f.Feed("hel", t0_);
  EXPECT_TRUE(lines_.empty());
  f.Feed("lo\nworld\n\x1b[31mred\n", t0_);
  f.Feed("no newline", t0_);
  f.Finish(t0_);
  EXPECT_EQ(lines_, (std::vector<std::string>{"codecvisor: backend 'acme': hello\n",
                                              "codecvisor: backend 'acme': world\n",
                                              "codecvisor: backend 'acme': \\x1b[31mred\n",
                                              "codecvisor: backend 'acme': no newline\n"}));
}

TEST_F(OutputFilterTest, ALongLineIsCutAndItsRestNeverBuffered) {
  OutputFilter f = Make();
  const std::string huge(1 << 20, 'x');
  for (int i = 0; i < 8; ++i) f.Feed(huge, t0_);  // 8 MiB without a newline
  f.Feed("\nnext\n", t0_);
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_EQ(lines_[0], "codecvisor: backend 'acme': " + std::string(OutputFilter::kMaxLineBytes, 'x') +
                           " [line cut]\n");
  EXPECT_EQ(lines_[1], "codecvisor: backend 'acme': next\n");
}

TEST_F(OutputFilterTest, AFloodIsDroppedPastTheBudgetAndCounted) {
  OutputFilter f = Make();
  const std::string line(99, 'y');  // 100 bytes with its newline
  for (int i = 0; i < 10000; ++i) f.Feed(line + "\n", t0_);  // 1 MB at one instant
  const size_t kept = lines_.size();
  const std::string prefix = "codecvisor: backend 'acme': ";
  EXPECT_EQ(kept, OutputFilter::kBurstBytes / (prefix.size() + 100));
  EXPECT_EQ(f.dropped_bytes(), (10000 - kept) * 100);
  // A second later, 16 KiB more budget: the drop is reported first.
  f.Feed(line + "\n", t0_ + milliseconds(1000));
  ASSERT_EQ(lines_.size(), kept + 2);
  EXPECT_EQ(lines_[kept], "codecvisor: backend 'acme': [" + std::to_string((10000 - kept) * 100) +
                              " bytes of output dropped: the relay passes 16 KiB/s]\n");
  EXPECT_EQ(lines_[kept + 1], "codecvisor: backend 'acme': " + line + "\n");
}

// Empty lines cost the plugin one byte each and the host thirty (the
// prefix), and every line let through after a drop brings the drop's
// notice: the budget counts what the host writes, so 30 s of them is no
// more than the burst and 30 s of refill on the host's stderr.
TEST_F(OutputFilterTest, EmptyLinesAndDropNoticesStayWithinTheBudget) {
  uint64_t written = 0;
  OutputFilter counted(
      "acme", [&](std::string_view line) { written += line.size(); }, t0_);
  const std::string empties(100, '\n');
  for (int ms = 0; ms < 30'000; ++ms) counted.Feed(empties, t0_ + milliseconds(ms));
  counted.Finish(t0_ + milliseconds(30'000));
  EXPECT_LE(written, OutputFilter::kBurstBytes + 30 * OutputFilter::kBytesPerSecond + 200);
  EXPECT_GE(written, 30 * OutputFilter::kBytesPerSecond);  // the budget is used, not starved
  EXPECT_GT(counted.dropped_bytes(), 2'000'000u);
}

// What the forwarder pauses on: lines thrown away past the budget, or the
// rest of a line past its cut; not a burst within the budget.
TEST_F(OutputFilterTest, FloodingWhileWhatIsFedIsThrownAway) {
  OutputFilter f = Make();
  const std::string line = std::string(99, 'y') + "\n";
  f.Feed(line, t0_);
  EXPECT_FALSE(f.flooding());
  for (int i = 0; i < 1000; ++i) f.Feed(line, t0_);
  EXPECT_TRUE(f.flooding());
  EXPECT_GT(f.dropped_bytes(), 0u);
  f.Feed(line, t0_ + milliseconds(1000));  // the budget back: the drop reported
  EXPECT_FALSE(f.flooding());
  f.Feed(std::string(OutputFilter::kMaxLineBytes + 1, 'x'), t0_ + milliseconds(1000));
  EXPECT_TRUE(f.flooding());
  f.Feed("\n", t0_ + milliseconds(1000));
  EXPECT_FALSE(f.flooding());
}

// Every byte fed is either written or counted as dropped, whichever way a
// line is dropped (clearly past the budget, unformatted, or by its cost).
TEST_F(OutputFilterTest, EveryLineIsWrittenOrCounted) {
  OutputFilter f = Make();
  const std::string prefix = "codecvisor: backend 'acme': ";
  uint64_t fed = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string line = std::string(static_cast<size_t>(i % 300), 'y') + "\n";
    fed += line.size();
    f.Feed(line, t0_ + milliseconds(i));
  }
  uint64_t written = 0;
  for (const std::string& l : lines_) {
    if (l.find("bytes of output dropped") == std::string::npos) written += l.size() - prefix.size();
  }
  EXPECT_GT(f.dropped_bytes(), 0u);
  EXPECT_EQ(written + f.dropped_bytes(), fed);
}

TEST_F(OutputFilterTest, ADropAtTheEndIsReported) {
  OutputFilter f = Make();
  for (int i = 0; i < 1000; ++i) f.Feed(std::string(999, 'z') + "\n", t0_);
  f.Finish(t0_);
  EXPECT_NE(lines_.back().find("bytes of output dropped"), std::string::npos) << lines_.back();
}

// The forwarder on a real pipe: a writer that floods and never reads
// anything back is never blocked, and what it wrote before closing arrives.
TEST(BackendOutputTest, ForwardsUntilTheWriterIsGoneAndNeverBlocksIt) {
  int from_backend[2], to_host[2];
  ASSERT_EQ(pipe2(from_backend, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(to_host, O_CLOEXEC), 0);
  ASSERT_EQ(fcntl(to_host[0], F_SETFL, O_NONBLOCK), 0);
  ASSERT_GE(fcntl(to_host[1], F_SETPIPE_SZ, 1 << 20), 1 << 20);  // holds all the forwarder may write
  {
    absl::StatusOr<std::unique_ptr<BackendOutput>> started =
        BackendOutput::Start("acme", ipc::UniqueFd(from_backend[0]), to_host[1]);
    ASSERT_TRUE(started.ok()) << started.status();
    BackendOutput& output = **started;
    const std::string chunk = std::string(4095, 'f') + "\n";
    for (int i = 0; i < 4096; ++i) {  // 16 MiB: far more than a pipe holds
      ASSERT_EQ(write(from_backend[1], chunk.data(), chunk.size()), static_cast<ssize_t>(chunk.size()));
    }
    ASSERT_EQ(write(from_backend[1], "last words\n", 11), 11);
    close(from_backend[1]);
    output.Finish(std::chrono::seconds(10));
  }
  std::string got;
  char buf[1 << 16];
  for (ssize_t n; (n = read(to_host[0], buf, sizeof(buf))) > 0;) got.append(buf, static_cast<size_t>(n));
  close(to_host[0]);
  close(to_host[1]);
  EXPECT_LT(got.size(), 2 * OutputFilter::kBurstBytes);  // bounded
  EXPECT_NE(got.find("codecvisor: backend 'acme': fff"), std::string::npos);
  EXPECT_NE(got.find("f [line cut]\n"), std::string::npos);
  // What was dropped is reported (before the next line that fits the
  // budget, or at the end): nothing is lost silently.
  EXPECT_NE(got.find("bytes of output dropped"), std::string::npos);
}

// Feeds `lines` lines to a forwarder writing to `host_stderr`, closes the
// backend's end, and finishes: returns once the forwarder has stopped.
void ForwardAndFinish(int host_stderr, int lines) {
  int from_backend[2];
  ASSERT_EQ(pipe2(from_backend, O_CLOEXEC), 0);
  absl::StatusOr<std::unique_ptr<BackendOutput>> started =
      BackendOutput::Start("acme", ipc::UniqueFd(from_backend[0]), host_stderr);
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string line = std::string(100, 'l') + "\n";
  for (int i = 0; i < lines; ++i) {
    ASSERT_EQ(write(from_backend[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
  }
  close(from_backend[1]);
  (*started)->Finish(std::chrono::seconds(10));
}

// The host's stderr a pipe that nobody drains (a parent that captured it
// and never reads, a terminal stopped with Ctrl-S): the forwarder loses
// lines and finishes; it blocked in write() for good, and a backend's
// death, which waits for its forwarder, was never handled.
TEST(BackendOutputTest, AHostStderrNobodyReadsLosesLinesAndNeverBlocks) {
  int to_host[2];
  ASSERT_EQ(pipe2(to_host, O_CLOEXEC), 0);
  ASSERT_EQ(fcntl(to_host[1], F_SETFL, O_NONBLOCK), 0);
  const std::string fill(4096, 'x');
  while (write(to_host[1], fill.data(), fill.size()) > 0) {
  }
  ASSERT_EQ(errno, EAGAIN);
  ASSERT_EQ(fcntl(to_host[1], F_SETFL, 0), 0);  // the host's own stderr blocks, as most do
  ForwardAndFinish(to_host[1], 200);
  EXPECT_EQ(fcntl(to_host[1], F_GETFL) & O_NONBLOCK, 0) << "the host's descriptor changed";
  close(to_host[0]);
  close(to_host[1]);
}

// Lines are cut to PIPE_BUF bytes, which a pipe takes whole: a line of
// escaped controls (four times its bytes) is never written in part.
TEST(BackendOutputTest, EveryLineFitsOnePipeWrite) {
  int to_host[2];
  ASSERT_EQ(pipe2(to_host, O_CLOEXEC), 0);
  ASSERT_EQ(fcntl(to_host[0], F_SETFL, O_NONBLOCK), 0);
  int from_backend[2];
  ASSERT_EQ(pipe2(from_backend, O_CLOEXEC), 0);
  {
    absl::StatusOr<std::unique_ptr<BackendOutput>> started =
        BackendOutput::Start("acme", ipc::UniqueFd(from_backend[0]), to_host[1]);
    ASSERT_TRUE(started.ok()) << started.status();
    const std::string controls = std::string(1024, '\x01') + "\n";
    for (int i = 0; i < 3; ++i) ASSERT_EQ(write(from_backend[1], controls.data(), controls.size()), 1025);
    close(from_backend[1]);
    (*started)->Finish(std::chrono::seconds(10));
  }
  std::string got;
  char buf[1 << 16];
  for (ssize_t n; (n = read(to_host[0], buf, sizeof(buf))) > 0;) got.append(buf, static_cast<size_t>(n));
  close(to_host[0]);
  close(to_host[1]);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back(), '\n');
  size_t lines = 0;
  for (size_t start = 0; start < got.size(); ++lines) {
    const size_t end = got.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    EXPECT_LE(end + 1 - start, static_cast<size_t>(PIPE_BUF));
    EXPECT_NE(got.substr(start, end - start).find("[line cut]"), std::string::npos);
    start = end + 1;
  }
  EXPECT_EQ(lines, 3u);
}

// A host stderr that is no pipe /proc reopens (here a socket, as a pipe of
// another user's is): written only when it takes a whole line now, so one
// nobody reads loses lines and never blocks.
TEST(BackendOutputTest, AHostStderrSocketNobodyReadsNeverBlocks) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  ASSERT_EQ(fcntl(pair[1], F_SETFL, O_NONBLOCK), 0);
  const std::string fill(4096, 'x');
  while (write(pair[1], fill.data(), fill.size()) > 0) {
  }
  ASSERT_EQ(fcntl(pair[1], F_SETFL, 0), 0);
  ForwardAndFinish(pair[1], 200);
  close(pair[0]);
  close(pair[1]);
}

// The relay writes to whatever the host's stderr descriptor names when each
// line comes: after the process points it elsewhere (dup2, as a daemon
// does), lines go there, and the old pipe is not kept open.
TEST(BackendOutputTest, LinesFollowTheHostsStderrWhereverItIsPointed) {
  int first[2], second[2], from_backend[2];
  ASSERT_EQ(pipe2(first, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(second, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(from_backend, O_CLOEXEC), 0);
  const int host_stderr = dup(first[1]);
  ASSERT_GE(host_stderr, 0);
  close(first[1]);
  absl::StatusOr<std::unique_ptr<BackendOutput>> started =
      BackendOutput::Start("acme", ipc::UniqueFd(from_backend[0]), host_stderr);
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_EQ(write(from_backend[1], "one\n", 4), 4);
  std::string got;
  char buf[256];
  while (got.find('\n') == std::string::npos) {  // the first line has gone to the first pipe
    const ssize_t n = read(first[0], buf, sizeof(buf));
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(got, "codecvisor: backend 'acme': one\n");
  ASSERT_EQ(dup2(second[1], host_stderr), host_stderr);
  ASSERT_EQ(write(from_backend[1], "two\n", 4), 4);
  close(from_backend[1]);
  (*started)->Finish(std::chrono::seconds(10));
  // The first pipe's last writer is gone: the relay keeps none of it.
  EXPECT_EQ(read(first[0], buf, sizeof(buf)), 0);
  close(host_stderr);
  close(second[1]);
  got.clear();
  for (ssize_t n; (n = read(second[0], buf, sizeof(buf))) > 0;) got.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(got, "codecvisor: backend 'acme': two\n");
  close(first[0]);
  close(second[0]);
}

// The host's stderr a pipe whose reader is gone (`app 2>&1 | head`): the
// lines are lost, and the host is not killed by SIGPIPE (this test's
// process, SIGPIPE at its default, would die of it).
TEST(BackendOutputTest, AHostStderrWhoseReaderIsGoneDoesNotKillTheHost) {
  int to_host[2];
  ASSERT_EQ(pipe2(to_host, O_CLOEXEC), 0);
  close(to_host[0]);
  ForwardAndFinish(to_host[1], 5);
  close(to_host[1]);
}

// While lines are dropped the relay pauses after each read, and reads
// nothing during the pause: a flooding backend fills its pipe and waits,
// rather than the host spending a core on what it throws away. Output
// within the budget never pauses.
TEST(BackendOutputTest, AFloodPausesTheRelayUntilTheBackendsPipeIsFull) {
  int sink = open("/dev/null", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(sink, 0);
  {
    int from_backend[2];
    ASSERT_EQ(pipe2(from_backend, O_CLOEXEC), 0);
    std::atomic<int> pauses{0};
    absl::StatusOr<std::unique_ptr<BackendOutput>> started =
        BackendOutput::Start("acme", ipc::UniqueFd(from_backend[0]), sink, [&](int) { pauses.fetch_add(1); });
    ASSERT_TRUE(started.ok()) << started.status();
    const std::string line = std::string(99, 'q') + "\n";
    for (int i = 0; i < 100; ++i) {  // 10 KB: within the budget
      ASSERT_EQ(write(from_backend[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
    }
    close(from_backend[1]);
    (*started)->Finish(std::chrono::seconds(10));
    EXPECT_EQ(pauses.load(), 0);
  }
  int from_backend[2];
  ASSERT_EQ(pipe2(from_backend, O_CLOEXEC | O_NONBLOCK), 0);
  std::atomic<bool> paused{false};
  std::promise<void> resume;
  std::shared_future<void> resumed = resume.get_future().share();
  absl::StatusOr<std::unique_ptr<BackendOutput>> started =
      BackendOutput::Start("acme", ipc::UniqueFd(from_backend[0]), sink, [&, resumed](int) {
        paused.store(true);
        resumed.wait_for(std::chrono::seconds(60));
      });
  ASSERT_TRUE(started.ok()) << started.status();
  // Write until the pipe is full while the relay is paused; at most 64 MiB
  // (a relay that never paused would take it all).
  const std::string line = std::string(1023, 'f') + "\n";
  size_t written = 0;
  bool full = false;
  while (!full && written < (64u << 20)) {
    const ssize_t n = write(from_backend[1], line.data(), line.size());
    if (n > 0) {
      written += static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      full = paused.load();
      if (!full) std::this_thread::sleep_for(milliseconds(1));  // the relay is behind, not paused
    } else {
      ADD_FAILURE() << "write: " << std::strerror(errno);
      break;
    }
  }
  resume.set_value();
  close(from_backend[1]);
  (*started)->Finish(std::chrono::seconds(10));
  close(sink);
  EXPECT_TRUE(full) << "the relay read " << written << " bytes of a flood without a pause";
  EXPECT_GT(written, OutputFilter::kBurstBytes);
}

}  // namespace
}  // namespace codecvisor
