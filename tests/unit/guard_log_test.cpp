#include "guard_log.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "strings.hpp"

namespace ss {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = GuardLog::Clock;

const Clock::time_point t0 = Clock::time_point{} + seconds(1000);
const std::string kHolding =
    "cannot write every line: the sandbox makes this guard say more than its log takes; it counts "
    "the lines until it may write again";

std::vector<std::string> Lines(const std::ostringstream& out) { return SplitLines(out.str()); }

TEST(GuardLog, WritesEveryLineWhileTheBucketHolds) {
  std::ostringstream out;
  GuardLog log(out, 1000, 10, t0);
  for (int i = 0; i < 50; ++i) log.Say("set aside one more", t0);  // 19 bytes each: 950
  EXPECT_EQ(Lines(out).size(), 50u);
}

TEST(GuardLog, AFloodIsCountedAndTheCountSaidOnceItMayWriteAgain) {
  std::ostringstream out;
  {
    GuardLog log(out, 200, 100, t0);
    // 10,000 lines at once: ten written (19 bytes each), then a line that says it counts, then
    // nothing.
    for (int i = 0; i < 10000; ++i) log.Say("set aside one more", t0);
    std::vector<std::string> lines = Lines(out);
    ASSERT_EQ(lines.size(), 11u) << out.str();
    EXPECT_EQ(lines[9], "set aside one more");
    EXPECT_EQ(lines[10], kHolding);
    // Quiet for a while: the count, and the next line as it comes.
    log.Tick(t0 + seconds(5));
    log.Say("set aside the last", t0 + seconds(6));
    lines = Lines(out);
    ASSERT_EQ(lines.size(), 13u) << out.str();
    EXPECT_EQ(lines[11], "... and 9990 lines not written");
    EXPECT_EQ(lines[12], "set aside the last");
  }
}

TEST(GuardLog, AFloodWithoutEndGrowsTheLogOnlyAsFastAsTheBucketRefills) {
  std::ostringstream out;
  GuardLog log(out, 1 << 20, 256, t0);
  // A day of a line every millisecond, 600 bytes each (a deep path), with the guard woken
  // every 10 s.
  std::string line(599, 'x');
  for (int s = 0; s < 86400; ++s) {
    for (int k = 0; k < 1000; k += 50) log.Say(line, t0 + seconds(s) + milliseconds(k));
    if (s % 10 == 0) log.Tick(t0 + seconds(s));
  }
  EXPECT_LE(out.str().size(), (1u << 20) + 86400u * 256u + 4096u);
  EXPECT_GE(out.str().size(), 86400u * 256u / 2);
}

TEST(GuardLog, LinesHeldBackAreCountedWhenTheGuardEnds) {
  std::ostringstream out;
  {
    GuardLog log(out, 20, 1, t0);
    log.Say("set aside one", t0);
    log.Say("set aside two", t0);
    log.Say("set aside three", t0);
  }
  EXPECT_EQ(Lines(out),
            (std::vector<std::string>{"set aside one", kHolding, "... and 2 lines not written"}));
}

}  // namespace
}  // namespace ss
