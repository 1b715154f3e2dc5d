#include "tools/bench/targets.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "tools/cli/json.h"

namespace codecvisor::bench {
namespace {

TEST(TargetsTest, JsonAndText) {
  std::vector<TargetCheck> checks = {{"ratio", ">= 0.97", true}, {"cost", "< 0.1", false}};
  cli::JsonWriter w;
  w.BeginObject();
  WriteTargets(w, checks);
  w.EndObject();
  EXPECT_EQ(w.str(),
            "{\"targets\":[{\"figure\":\"ratio\",\"target\":\">= 0.97\",\"met\":true},"
            "{\"figure\":\"cost\",\"target\":\"< 0.1\",\"met\":false}],\"targets_met\":false}");
  EXPECT_EQ(TargetNote(checks, "ratio"), "(target >= 0.97: met)");
  EXPECT_EQ(TargetNote(checks, "cost"), "(target < 0.1: NOT MET)");
  EXPECT_EQ(TargetNote(checks, "other"), "");
}

}  // namespace
}  // namespace codecvisor::bench
