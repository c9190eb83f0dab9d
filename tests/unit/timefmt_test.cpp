#include "timefmt.hpp"

#include <gtest/gtest.h>

namespace ss {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

SystemTime At(std::string_view text) {
  auto t = ParseRfc3339(text);
  EXPECT_TRUE(t.has_value()) << text;
  return t.value_or(SystemTime{});
}

TEST(TimeFmt, FormatsUtcWholeSeconds) {
  EXPECT_EQ(FormatRfc3339(SystemTime{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(SystemTime{seconds(1736937000)}), "2025-01-15T10:30:00Z");
  EXPECT_EQ(FormatRfc3339(SystemTime{seconds(1736937000)} + std::chrono::milliseconds(999)),
            "2025-01-15T10:30:00Z");
  EXPECT_EQ(FormatRfc3339(At("2024-02-29T23:59:59Z")), "2024-02-29T23:59:59Z");
}

TEST(TimeFmt, ParsesRfc3339Forms) {
  EXPECT_EQ(At("2025-01-15T10:30:00Z"), SystemTime{seconds(1736937000)});
  EXPECT_EQ(At("2025-01-15t10:30:00z"), SystemTime{seconds(1736937000)});
  EXPECT_EQ(At("2025-01-15 10:30:00Z"), SystemTime{seconds(1736937000)});
  EXPECT_EQ(At("2025-01-15T12:30:00+02:00"), SystemTime{seconds(1736937000)});
  EXPECT_EQ(At("2025-01-15T05:30:00-05:00"), SystemTime{seconds(1736937000)});
  EXPECT_EQ(At("2025-01-15T10:30:00.123456Z"), SystemTime{seconds(1736937000)});
  EXPECT_EQ(At("2025-01-15T10:30:00.5+00:00"), SystemTime{seconds(1736937000)});
}

TEST(TimeFmt, RejectsTheRest) {
  for (const char* bad :
       {"", "2025-01-15", "2025-01-15T10:30:00", "2025-01-15T10:30Z", "2025-13-01T00:00:00Z",
        "2025-02-30T00:00:00Z", "2025-01-15T24:00:00Z", "2025-01-15T10:60:00Z",
        "2025-01-15T10:30:00+0200", "2025-01-15T10:30:00Z ", " 2025-01-15T10:30:00Z",
        "2025-01-15T10:30:00.Z", "25-01-15T10:30:00Z", "2025-1-15T10:30:00Z", "yesterday",
        "2025-01-15X10:30:00Z", "2025-01-15T10:30:00+25:00"}) {
    EXPECT_FALSE(ParseRfc3339(bad).has_value()) << bad;
  }
}

TEST(TimeFmt, RoundTrips) {
  for (int64_t s : {0LL, 1LL, 951782400LL, 1736937000LL, 4102444799LL}) {
    SystemTime t{seconds(s)};
    EXPECT_EQ(ParseRfc3339(FormatRfc3339(t)), t) << s;
  }
}

TEST(TimeFmt, SaysHowLongAgo) {
  SystemTime now = At("2025-06-01T12:00:00Z");
  struct Case {
    std::chrono::seconds age;
    const char* text;
    const char* brief;
  } cases[] = {
      {seconds(0), "just now", "now"},        {seconds(59), "just now", "now"},
      {minutes(1), "1 minute ago", "1m ago"}, {minutes(59), "59 minutes ago", "59m ago"},
      {hours(1), "1 hour ago", "1h ago"},     {hours(2) + minutes(59), "2 hours ago", "2h ago"},
      {hours(23), "23 hours ago", "23h ago"}, {days(1), "1 day ago", "1d ago"},
      {days(3), "3 days ago", "3d ago"},      {days(13), "13 days ago", "13d ago"},
      {days(14), "2 weeks ago", "2w ago"},    {days(59), "8 weeks ago", "8w ago"},
      {days(60), "2 months ago", "2mo ago"},  {days(364), "12 months ago", "12mo ago"},
      {days(365), "1 year ago", "1y ago"},    {days(365 * 3 + 10), "3 years ago", "3y ago"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(FormatAgo(now - c.age, now), c.text) << c.age.count();
    EXPECT_EQ(FormatAgoShort(now - c.age, now), c.brief) << c.age.count();
  }
  // A clock that went back: not "-3 minutes ago".
  EXPECT_EQ(FormatAgo(now + minutes(3), now), "just now");
}

TEST(TimeFmt, NowHasWholeSeconds) {
  SystemTime now = NowSeconds();
  EXPECT_EQ(std::chrono::time_point_cast<seconds>(now), now);
}

TEST(TimeFmt, TimespecsRoundTripToTheNanosecond) {
  const struct timespec t { 1733616000, 123 };
  EXPECT_EQ(FormatTimespec(t), "1733616000.000000123");
  auto back = ParseTimespec(FormatTimespec(t));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->tv_sec, t.tv_sec);
  EXPECT_EQ(back->tv_nsec, t.tv_nsec);
  EXPECT_EQ(ParseTimespec("5.123")->tv_nsec, 123);  // (unpadded, as a guard once wrote it)
  EXPECT_FALSE(ParseTimespec("5"));
  EXPECT_FALSE(ParseTimespec("5.1000000000"));
  EXPECT_FALSE(ParseTimespec("x.1"));
}

}  // namespace
}  // namespace ss
