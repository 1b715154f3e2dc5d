#include "core/backend_history.h"

#include <stdlib.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace codecvisor {
namespace {

BackendSighting Saw(const std::string& name, const std::string& state, uint64_t restarts,
                    const std::string& last_exit = "", const std::string& diagnostic = "") {
  return BackendSighting{.name = name,
                         .manifest = "/m/" + name + ".toml",
                         .state = state,
                         .diagnostic = diagnostic,
                         .restarts = restarts,
                         .last_exit = last_exit,
                         .last_exit_time = last_exit.empty() ? "" : "2026-11-23T08:50:01Z"};
}

TEST(BackendHistoryTest, SightingsAddUpAndTheLastWordWins) {
  BackendHistory h;
  AddSightings({Saw("cpu", "ready", 0), Saw("faulty", "ready", 2, "killed by signal 11 (SIGSEGV)")}, &h);
  ASSERT_EQ(h.size(), 1u) << "a backend that never failed is not recorded";
  EXPECT_EQ(h["faulty"].restarts, 2u);
  EXPECT_EQ(h["faulty"].last_exit, "killed by signal 11 (SIGSEGV)");
  EXPECT_EQ(h["faulty"].quarantine, "");

  AddSightings({Saw("faulty", "quarantined", 6, "killed by signal 6 (SIGABRT)", "quarantined after 6 crashes")}, &h);
  EXPECT_EQ(h["faulty"].restarts, 8u);
  EXPECT_EQ(h["faulty"].last_exit, "killed by signal 6 (SIGABRT)");
  EXPECT_EQ(h["faulty"].quarantine, "quarantined after 6 crashes");

  const BackendHistory before = h;
  AddSightings({Saw("faulty", "discovered", 0), Saw("faulty", "ready", 0)}, &h);  // nothing new: nothing changes
  EXPECT_EQ(h, before);
  h.erase("faulty");  // --reset
  AddSightings({Saw("faulty", "ready", 0)}, &h);
  EXPECT_TRUE(h.empty());
}

// Two manifests of one name (two versions, two vendors' plugins): one's
// crashes and quarantine are not the other's past.
TEST(BackendHistoryTest, ARecordIsOneManifests) {
  BackendHistory h;
  BackendSighting crashed = Saw("acme", "quarantined", 6, "killed by signal 11 (SIGSEGV)", "quarantined after 6");
  AddSightings({crashed}, &h);
  ASSERT_TRUE(SameManifest(h["acme"], "/m/acme.toml"));
  EXPECT_FALSE(SameManifest(h["acme"], "/other/acme.toml"));
  EXPECT_TRUE(SameManifest(BackendRecord{}, "/any/acme.toml")) << "a record from before manifests were kept";
  // The other manifest ran without trouble: the record stays the first's.
  BackendSighting other = Saw("acme", "ready", 0);
  other.manifest = "/other/acme.toml";
  AddSightings({other}, &h);
  EXPECT_EQ(h["acme"].manifest, "/m/acme.toml");
  EXPECT_EQ(h["acme"].restarts, 6u);
  // It crashed once: the record is its own, started afresh.
  other.restarts = 1;
  other.last_exit = "killed by signal 6 (SIGABRT)";
  other.last_exit_time = "2026-11-23T08:50:01Z";
  AddSightings({other}, &h);
  const BackendRecord& fresh = h["acme"];
  EXPECT_EQ(fresh.manifest, "/other/acme.toml");
  EXPECT_EQ(fresh.restarts, 1u);
  EXPECT_EQ(fresh.last_exit, "killed by signal 6 (SIGABRT)");
  EXPECT_EQ(fresh.last_exit_time, "2026-11-23T08:50:01Z");
  EXPECT_EQ(fresh.quarantine, "") << "the first manifest's quarantine is not this one's";
}

TEST(BackendHistoryTest, FormatParsesBackToTheSame) {
  BackendHistory h;
  h["faulty"] = BackendRecord{"/m/faulty.toml", 3, "killed by signal 11 (SIGSEGV)", "2026-11-23T08:50:01Z",
                              "backend 'faulty' is \"quarantined\"\nsecond line"};
  h["y4m"] = BackendRecord{"/m/y4m.toml", 1, "", "", ""};
  const std::string text = FormatBackendHistory(h);
  absl::StatusOr<BackendHistory> back = ParseBackendHistory(text, "h.toml");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
  EXPECT_EQ(*back, h) << text;
}

TEST(BackendHistoryTest, ABrokenFileIsAnErrorNamingIt) {
  for (const char* text : {"backend = [", "backend = 3\n[x", "[backend]\nfaulty = 1\n", "[backend.f]\nrestarts = -1\n"}) {
    absl::StatusOr<BackendHistory> h = ParseBackendHistory(text, "/s/h.toml");
    EXPECT_FALSE(h.ok()) << text;
    EXPECT_NE(h.status().message().find("/s/h.toml"), std::string::npos) << h.status();
  }
  EXPECT_TRUE(ParseBackendHistory("", "/s/h.toml").ok());
}

TEST(BackendHistoryTest, DefaultPathFollowsXdgThenHome) {
  const std::string home = getenv("TEST_TMPDIR");
  setenv("XDG_STATE_HOME", "/xdg", 1);
  setenv("HOME", home.c_str(), 1);
  EXPECT_EQ(DefaultBackendHistoryPath(), "/xdg/codecvisor/backends.toml");
  unsetenv("XDG_STATE_HOME");
  EXPECT_EQ(DefaultBackendHistoryPath(), home + "/.local/state/codecvisor/backends.toml");
  setenv("HOME", "relative", 1);
  EXPECT_EQ(DefaultBackendHistoryPath(), "");
  // A service account's home (Debian's /nonexistent) is not made: no history.
  setenv("HOME", (home + "/nonexistent").c_str(), 1);
  EXPECT_EQ(DefaultBackendHistoryPath(), "");
}

TEST(BackendHistoryTest, AMissingHomeIsNeverMade) {
  const std::string home = std::string(getenv("TEST_TMPDIR")) + "/gone-home";
  setenv("HOME", home.c_str(), 1);
  const absl::Status s = UpdateBackendHistory(home + "/.local/state/codecvisor/backends.toml", [](BackendHistory*) {});
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_FALSE(std::filesystem::exists(home)) << "the home was made";
}

// Root run with a user's HOME (sudo -E) made a ~/.local of root's, mode
// 0700, that the user could then neither use nor remove. Another user's
// folders get no history at all.
TEST(BackendHistoryTest, NothingIsWrittenIntoAnotherUsersFolders) {
  // As another user would see the test's own folder.
  const std::string mine = std::string(getenv("TEST_TMPDIR")) + "/mine";
  ASSERT_EQ(mkdir(mine.c_str(), 0755), 0);
  const std::string below = mine + "/.local/state/codecvisor";
  EXPECT_TRUE(CheckOwnFolders(below, geteuid()).ok());
  const absl::Status other = CheckOwnFolders(below, geteuid() + 1);
  EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition) << other;
  EXPECT_NE(other.message().find(mine + " belongs to uid "), std::string::npos) << other;
  // The whole write, root's, where a folder of another user can be made
  // (not in a user namespace that maps only root, as Bazel's sandbox is).
  // A host that is not root keeps its history where its HOME says.
  const std::string home = std::string(getenv("TEST_TMPDIR")) + "/someone-else";
  ASSERT_EQ(mkdir(home.c_str(), 0755), 0);
  if (geteuid() != 0 || chown(home.c_str(), 65534, 65534) != 0) return;  // only the check above
  setenv("HOME", home.c_str(), 1);
  const std::string path = home + "/.local/state/codecvisor/backends.toml";
  const absl::Status s = UpdateBackendHistory(path, [](BackendHistory*) {});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find(home + " belongs to uid "), std::string::npos) << s;
  EXPECT_NE(s.message().find("another user's folders"), std::string::npos) << s;
  EXPECT_FALSE(std::filesystem::exists(home + "/.local")) << "a folder was made in another user's home";
}

TEST(BackendHistoryTest, ConcurrentWritersLoseNothing) {
  const std::string folder = std::string(getenv("TEST_TMPDIR")) + "/state/deeper";
  const std::string path = folder + "/backends.toml";
  ASSERT_TRUE(ReadBackendHistory(path).ok()) << "a missing file is an empty history";
  constexpr int kWriters = 4, kEach = 25;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < kEach; ++i) {
        absl::Status s = UpdateBackendHistory(path, [&](BackendHistory* h) {
          AddSightings({Saw("faulty", "ready", 1, "killed by signal 11 (SIGSEGV)")}, h);
        });
        if (!s.ok()) _exit(1);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  absl::StatusOr<BackendHistory> h = ReadBackendHistory(path);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ((*h)["faulty"].restarts, static_cast<uint64_t>(kWriters * kEach));
  struct stat st;
  ASSERT_EQ(stat(folder.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

std::string WriteText(const std::string& name, const std::string& text) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  FILE* f = fopen(path.c_str(), "w");
  EXPECT_NE(f, nullptr);
  if (f == nullptr) return path;
  fputs(text.c_str(), f);
  fclose(f);
  return path;
}

std::string ReadText(const std::string& path) {
  std::string text;
  FILE* f = fopen(path.c_str(), "r");
  if (f == nullptr) return text;
  for (int c; (c = fgetc(f)) != EOF;) text.push_back(static_cast<char>(c));
  fclose(f);
  return text;
}

TEST(BackendHistoryTest, ACorruptFileIsReplacedByTheNextWrite) {
  // A history (its header line) damaged after it.
  const std::string path = WriteText(
      "corrupt.toml",
      "# Backend failures seen by codecvisor hosts; `codecvisor backends --reset NAME` clears one.\nbackend = [ no");
  EXPECT_FALSE(ReadBackendHistory(path).ok());
  ASSERT_TRUE(UpdateBackendHistory(path, [](BackendHistory* h) {
                AddSightings({Saw("x", "quarantined", 6, "killed by signal 11 (SIGSEGV)", "q")}, h);
              }).ok());
  absl::StatusOr<BackendHistory> h = ReadBackendHistory(path);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ((*h)["x"].quarantine, "q");
}

// history_file named by mistake: a file this code did not write is never
// replaced, and a FIFO neither blocks the reader nor is written.
TEST(BackendHistoryTest, AFileThatIsNotAHistoryIsLeftAsItIs) {
  auto add = [](BackendHistory* h) { AddSightings({Saw("x", "quarantined", 6)}, h); };
  for (const char* text : {"\x1a\x45\xdf\xa3 the start of a Matroska video", "[settings]\ncolour = 'blue'\n"}) {
    const std::string path = WriteText("not_history", text);
    const absl::Status s = UpdateBackendHistory(path, add);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(s.message().find("not a codecvisor backend history"), std::string::npos) << s;
    EXPECT_EQ(ReadText(path), std::string(text));
    struct stat st;
    EXPECT_NE(stat((path + ".lock").c_str(), &st), 0) << "a lock file was left beside the user's file";
  }
  const std::string fifo = std::string(getenv("TEST_TMPDIR")) + "/history_fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadBackendHistory(fifo).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(UpdateBackendHistory(fifo, add).code(), absl::StatusCode::kInvalidArgument);
  struct stat st;
  ASSERT_EQ(stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
  // A link planted where the new file is written (history_file in a
  // folder others may write) is replaced, not written through.
  const std::string planted = WriteText("planted_history", "");
  const std::string victim = WriteText("victim", "keep me");
  ASSERT_EQ(symlink(victim.c_str(), (planted + "." + std::to_string(getpid()) + ".tmp").c_str()), 0);
  ASSERT_TRUE(UpdateBackendHistory(planted, add).ok());
  EXPECT_EQ(ReadText(victim), "keep me");
  EXPECT_EQ((*ReadBackendHistory(planted))["x"].restarts, 6u);
  // A history a crash zeroed starts afresh.
  const std::string zeroed = std::string(getenv("TEST_TMPDIR")) + "/zeroed_history";
  {
    FILE* f = fopen(zeroed.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fwrite(std::string(4096, '\0').data(), 1, 4096, f);
    fclose(f);
  }
  ASSERT_TRUE(UpdateBackendHistory(zeroed, add).ok());
  EXPECT_EQ((*ReadBackendHistory(zeroed))["x"].restarts, 6u);
  // An empty file is taken as an empty history and written.
  const std::string empty = WriteText("empty_history", "");
  ASSERT_TRUE(UpdateBackendHistory(empty, add).ok());
  EXPECT_EQ((*ReadBackendHistory(empty))["x"].restarts, 6u);
}

// A lock another process holds for long (stopped, or another user's in a
// shared folder) makes a writer give up, not wait for ever (a Host's
// destructor writes the history).
TEST(BackendHistoryTest, AWriterGivesUpOnALockHeldForLong) {
  const std::string path = WriteText("locked_history", "");
  const int held = open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(held, 0);
  ASSERT_EQ(flock(held, LOCK_EX), 0);  // another open file description: it conflicts
  const absl::Status s = UpdateBackendHistory(path, [](BackendHistory* h) { AddSightings({Saw("x", "ready", 1)}, h); });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("locked by another process"), std::string::npos) << s;
  EXPECT_EQ(ReadText(path), "");
  close(held);
  EXPECT_TRUE(UpdateBackendHistory(path, [](BackendHistory* h) { AddSightings({Saw("x", "ready", 1)}, h); }).ok());
}

}  // namespace
}  // namespace codecvisor
