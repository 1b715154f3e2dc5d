#include "tools/cli/progress.h"

#include <cstdio>

#include <gtest/gtest.h>

namespace codecvisor::cli {
namespace {

TEST(ProgressLineTest, WithATotal) {
  EXPECT_EQ(RenderProgressLine(42, 100, 2.0, 80),
            "[################........................]   42/100   42%  21.0 fps  ETA 0:03");
  EXPECT_EQ(RenderProgressLine(0, 5, 0.0, 80), "[........................................]  0/5    0%  0.0 fps  ETA --:--");
  EXPECT_EQ(RenderProgressLine(5, 5, 1.0, 80), "[########################################]  5/5  100%  5.0 fps  ETA 0:00");
}

TEST(ProgressLineTest, FitsTheTerminal) {
  for (int columns : {200, 80, 60, 40, 20, 5, 0}) {
    const std::string line = RenderProgressLine(420, 1000, 10.0, columns);
    EXPECT_LE(static_cast<int>(line.size()), std::max(columns, 0)) << columns << ": " << line;
  }
  EXPECT_EQ(RenderProgressLine(1, 2, 1.0, 30).find('['), std::string::npos) << "no room for a bar";
}

TEST(ProgressLineTest, WithoutATotal) {
  EXPECT_EQ(RenderProgressLine(42, std::nullopt, 2.0, 80), "42 frames  21.0 fps  0:02");
  EXPECT_EQ(RenderProgressLine(7, 0, 0.0, 80), "7 frames  0.0 fps  0:00") << "a zero total is no total";
}

TEST(ProgressLineTest, MoreThanTheTotalIsCapped) {
  EXPECT_EQ(RenderProgressLine(12, 10, 1.0, 80).find("10/10"), 44u);
}

TEST(FormatDurationTest, MinutesAndHours) {
  EXPECT_EQ(FormatDuration(0), "0:00");
  EXPECT_EQ(FormatDuration(7.4), "0:07");
  EXPECT_EQ(FormatDuration(62), "1:02");
  EXPECT_EQ(FormatDuration(3723), "1:02:03");
  EXPECT_EQ(FormatDuration(-1), "0:00");
}

TEST(ProgressBarTest, DisabledDrawsNothingButCounts) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    ProgressBar bar(out, /*enabled=*/false, 10);
    for (int i = 0; i < 10; ++i) bar.Advance();
    EXPECT_EQ(bar.done(), 10);
  }
  EXPECT_EQ(std::ftell(out), 0L);
  std::fclose(out);
}

TEST(ProgressBarTest, EnabledDrawsAndClears) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    ProgressBar bar(out, /*enabled=*/true, std::nullopt);
    bar.Advance(3);
    bar.Clear();
    bar.Advance();  // after Clear: nothing more is drawn
  }
  std::rewind(out);
  char buf[512] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, out);
  const std::string text(buf, n);
  EXPECT_EQ(text.rfind("\r\x1b[K"), text.size() - 4) << "ends by erasing the line";
  EXPECT_NE(text.find("0 frames"), std::string::npos) << text;
  std::fclose(out);
}

}  // namespace
}  // namespace codecvisor::cli
