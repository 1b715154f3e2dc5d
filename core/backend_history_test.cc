#include "core/backend_history.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
  setenv("XDG_STATE_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(DefaultBackendHistoryPath(), "/xdg/codecvisor/backends.toml");
  unsetenv("XDG_STATE_HOME");
  EXPECT_EQ(DefaultBackendHistoryPath(), "/home/u/.local/state/codecvisor/backends.toml");
  setenv("HOME", "relative", 1);
  EXPECT_EQ(DefaultBackendHistoryPath(), "");
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

TEST(BackendHistoryTest, ACorruptFileIsReplacedByTheNextWrite) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/corrupt.toml";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("backend = [ not toml", f);
  fclose(f);
  EXPECT_FALSE(ReadBackendHistory(path).ok());
  ASSERT_TRUE(UpdateBackendHistory(path, [](BackendHistory* h) {
                AddSightings({Saw("x", "quarantined", 6, "killed by signal 11 (SIGSEGV)", "q")}, h);
              }).ok());
  absl::StatusOr<BackendHistory> h = ReadBackendHistory(path);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ((*h)["x"].quarantine, "q");
}

}  // namespace
}  // namespace codecvisor
