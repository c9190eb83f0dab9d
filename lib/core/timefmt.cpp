#include "timefmt.hpp"

#include <cstdio>

#include "strings.hpp"

namespace ss {
namespace {

using std::chrono::days;
using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::year_month_day;

// Reads exactly `n` digits at text[pos...]; advances pos.
std::optional<int> Digits(std::string_view text, size_t& pos, size_t n) {
  if (pos + n > text.size()) return std::nullopt;
  int value = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = text[pos + i];
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  pos += n;
  return value;
}

bool Expect(std::string_view text, size_t& pos, char c) {
  if (pos >= text.size() || text[pos] != c) return false;
  ++pos;
  return true;
}

struct Unit {
  int64_t seconds;
  const char* singular;
  const char* plural;
  const char* short_name;
};

// Largest unit first; a unit is used once the age reaches `seconds` of it.
constexpr int64_t kMinute = 60;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kDay = 24 * kHour;
constexpr int64_t kWeek = 7 * kDay;
constexpr int64_t kMonth = 30 * kDay;
constexpr int64_t kYear = 365 * kDay;

// The unit and count for an age: weeks from 14 days (so "10 days ago" stays in days), months
// from 60 days, years from 365 days.
std::pair<const Unit*, int64_t> Bucket(int64_t age) {
  static const Unit kUnits[] = {
      {kYear, "year", "years", "y"}, {kMonth, "month", "months", "mo"},
      {kWeek, "week", "weeks", "w"}, {kDay, "day", "days", "d"},
      {kHour, "hour", "hours", "h"}, {kMinute, "minute", "minutes", "m"},
  };
  for (const Unit& u : kUnits) {
    int64_t from = u.seconds == kMonth ? 2 * kMonth : u.seconds == kWeek ? 2 * kWeek : u.seconds;
    if (age >= from) return {&u, age / u.seconds};
  }
  return {nullptr, 0};
}

int64_t AgeSeconds(SystemTime then, SystemTime now) {
  return std::chrono::duration_cast<seconds>(now - then).count();
}

}  // namespace

SystemTime NowSeconds() {
  return std::chrono::time_point_cast<seconds>(std::chrono::system_clock::now());
}

std::string FormatRfc3339(SystemTime t) {
  auto secs = std::chrono::floor<seconds>(t);
  auto day = std::chrono::floor<days>(secs);
  year_month_day ymd{day};
  std::chrono::hh_mm_ss hms{secs - day};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

std::optional<SystemTime> ParseRfc3339(std::string_view text) {
  size_t pos = 0;
  auto year = Digits(text, pos, 4);
  if (!year || !Expect(text, pos, '-')) return std::nullopt;
  auto month = Digits(text, pos, 2);
  if (!month || !Expect(text, pos, '-')) return std::nullopt;
  auto day = Digits(text, pos, 2);
  if (!day || pos >= text.size()) return std::nullopt;
  char sep = text[pos++];
  if (sep != 'T' && sep != 't' && sep != ' ') return std::nullopt;
  auto hour = Digits(text, pos, 2);
  if (!hour || !Expect(text, pos, ':')) return std::nullopt;
  auto minute = Digits(text, pos, 2);
  if (!minute || !Expect(text, pos, ':')) return std::nullopt;
  auto second = Digits(text, pos, 2);
  if (!second) return std::nullopt;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    if (pos == start) return std::nullopt;
  }
  if (pos >= text.size()) return std::nullopt;
  int offset_minutes = 0;
  char zone = text[pos++];
  if (zone == 'Z' || zone == 'z') {
    // UTC
  } else if (zone == '+' || zone == '-') {
    auto oh = Digits(text, pos, 2);
    if (!oh || !Expect(text, pos, ':')) return std::nullopt;
    auto om = Digits(text, pos, 2);
    if (!om || *oh > 23 || *om > 59) return std::nullopt;
    offset_minutes = (*oh * 60 + *om) * (zone == '-' ? -1 : 1);
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  // 60 is allowed for a leap second and counted as the next second.
  if (*hour > 23 || *minute > 59 || *second > 60) return std::nullopt;
  year_month_day ymd{std::chrono::year(*year), std::chrono::month(static_cast<unsigned>(*month)),
                     std::chrono::day(static_cast<unsigned>(*day))};
  if (!ymd.ok()) return std::nullopt;
  SystemTime t = sys_days(ymd) + std::chrono::hours(*hour) + std::chrono::minutes(*minute) +
                 seconds(*second) - std::chrono::minutes(offset_minutes);
  return t;
}

std::string FormatAgo(SystemTime then, SystemTime now) {
  auto [unit, count] = Bucket(AgeSeconds(then, now));
  if (unit == nullptr) return "just now";
  return Cat(count, " ", count == 1 ? unit->singular : unit->plural, " ago");
}

std::string FormatAgoShort(SystemTime then, SystemTime now) {
  auto [unit, count] = Bucket(AgeSeconds(then, now));
  if (unit == nullptr) return "now";
  return Cat(count, unit->short_name, " ago");
}

std::string FormatTimespec(const struct timespec& t) {
  char nsec[16];
  std::snprintf(nsec, sizeof nsec, "%09ld", static_cast<long>(t.tv_nsec));
  return Cat(static_cast<long long>(t.tv_sec), ".", nsec);
}

std::optional<struct timespec> ParseTimespec(std::string_view text) {
  size_t dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto sec = ParseDecimal(text.substr(0, dot));
  auto nsec = ParseDecimal(text.substr(dot + 1));
  if (!sec || !nsec || *nsec >= 1'000'000'000) return std::nullopt;
  return timespec{static_cast<time_t>(*sec), static_cast<long>(*nsec)};
}

}  // namespace ss
