#include "core/environment_warnings.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace codecvisor {
namespace {

std::vector<std::string> WarningsFor(const std::map<std::string, std::string>& env) {
  return EnvironmentWarnings(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      [](const std::string& path) { return path == "/plugins" || path == "/more"; });
}

TEST(EnvironmentWarningsTest, WellFormedValuesAndUnsetOnesSayNothing) {
  EXPECT_TRUE(WarningsFor({}).empty());
  EXPECT_TRUE(WarningsFor({{"CODECVISOR_BACKEND_LOG_LEVEL", "error"},
                           {"CODECVISOR_DEVICE_BACKEND_AUTOLOAD", "0"},
                           {"CODECVISOR_ALLOW_DEGRADED_SANDBOX", "1"},
                           {"CODECVISOR_SECCOMP", "log"},
                           {"CODECVISOR_BACKEND_BACKTRACE", "1"},
                           {"CODECVISOR_FRAME_POOL_SLOTS", "0"},
                           {"CODECVISOR_BATCH_CACHE_MIB", "512"},
                           {"CODECVISOR_BACKEND_PATH", "/plugins::/more:"}})
                  .empty());
  EXPECT_TRUE(WarningsFor({{"CODECVISOR_BACKEND_LOG_LEVEL", ""}}).empty()) << "empty is unset";
  EXPECT_TRUE(WarningsFor({{"CODECVISOR_FRAME_POOL_SLOTS", "64"}}).empty());
}

TEST(EnvironmentWarningsTest, EachMalformedValueIsNamedWithWhatItTakesAndWhatHappens) {
  const std::vector<std::string> w = WarningsFor({{"CODECVISOR_BACKEND_LOG_LEVEL", "warn"},
                                                  {"CODECVISOR_ALLOW_DEGRADED_SANDBOX", "true"},
                                                  {"CODECVISOR_SECCOMP", "LOG"},
                                                  {"CODECVISOR_FRAME_POOL_SLOTS", "lots"},
                                                  {"CODECVISOR_BATCH_CACHE_MIB", "-1"},
                                                  {"CODECVISOR_BACKEND_PATH", "/plugins:/nonexistent"}});
  ASSERT_EQ(w.size(), 6u);
  EXPECT_EQ(w[0],
            "CODECVISOR_BACKEND_LOG_LEVEL='warn' is not one of quiet, panic, fatal, error, warning, info, verbose, "
            "debug, trace: backends log nothing (quiet)");
  EXPECT_EQ(w[1], "CODECVISOR_ALLOW_DEGRADED_SANDBOX='true' is not one of 0, 1: no degraded sandbox is allowed (as 0)");
  EXPECT_EQ(w[2], "CODECVISOR_SECCOMP='LOG' is not one of log: the seccomp filter is enforced");
  EXPECT_EQ(w[3], "CODECVISOR_FRAME_POOL_SLOTS='lots' is not a whole number: the default of 16 slots is used");
  EXPECT_EQ(w[4], "CODECVISOR_BATCH_CACHE_MIB='-1' is not a whole number: the default cache size is used");
  EXPECT_EQ(w[5],
            "CODECVISOR_BACKEND_PATH names /nonexistent, which is not a folder this process can read: no backend is "
            "found there");
}

// Each read as the code that uses it reads it: a switch whose empty value
// is not its default, a pool size strtoul takes whole or clamps.
TEST(EnvironmentWarningsTest, ValuesAreJudgedAsTheirReadersReadThem) {
  EXPECT_EQ(WarningsFor({{"CODECVISOR_DEVICE_BACKEND_AUTOLOAD", ""}}),
            std::vector<std::string>{"CODECVISOR_DEVICE_BACKEND_AUTOLOAD='' is not one of 0, 1: plugins are not "
                                     "autoloaded (as 0)"});
  EXPECT_EQ(WarningsFor({{"CODECVISOR_FRAME_POOL_SLOTS", "8 "}}),
            std::vector<std::string>{"CODECVISOR_FRAME_POOL_SLOTS='8 ' is not a whole number: the default of 16 "
                                     "slots is used"});
  EXPECT_EQ(WarningsFor({{"CODECVISOR_FRAME_POOL_SLOTS", "99999999999999999999"}}),
            std::vector<std::string>{"CODECVISOR_FRAME_POOL_SLOTS='99999999999999999999' is more than 64: 64 slots "
                                     "are used"});
  EXPECT_EQ(WarningsFor({{"CODECVISOR_FRAME_POOL_SLOTS", "65"}}),
            std::vector<std::string>{"CODECVISOR_FRAME_POOL_SLOTS='65' is more than 64: 64 slots are used"});
}

TEST(ReadFramePoolSlotsTest, TheCountTheHostUses) {
  EXPECT_EQ(ReadFramePoolSlots(nullptr).slots, kDefaultFramePoolSlots);
  EXPECT_EQ(ReadFramePoolSlots("").slots, kDefaultFramePoolSlots);
  EXPECT_EQ(ReadFramePoolSlots("0").slots, 0u);
  EXPECT_EQ(ReadFramePoolSlots("8").slots, 8u);
  EXPECT_FALSE(ReadFramePoolSlots("8 ").well_formed);
  EXPECT_EQ(ReadFramePoolSlots("-1").slots, kDefaultFramePoolSlots);
  EXPECT_EQ(ReadFramePoolSlots("99999999999999999999").slots, kMaxFramePoolSlots);
  EXPECT_TRUE(ReadFramePoolSlots("65").clamped);
}

}  // namespace
}  // namespace codecvisor
