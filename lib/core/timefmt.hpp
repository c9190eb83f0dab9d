// Times as ss writes and shows them: RFC 3339 in UTC for files and --json ("2025-01-15T10:30:00Z"),
// and the relative form people read in tables ("2 hours ago", or "2h ago" where space is short).
#pragma once

#include <time.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ss {

using SystemTime = std::chrono::system_clock::time_point;

// The current time, whole seconds (what metadata files store).
SystemTime NowSeconds();

// "2025-01-15T10:30:00Z" (whole seconds, UTC).
std::string FormatRfc3339(SystemTime t);

// Accepts RFC 3339 date-times: "2025-01-15T10:30:00Z", "2025-01-15t10:30:00.5+02:00",
// "2025-01-15 10:30:00-05:00". Fractions of a second are dropped. Anything else: nullopt.
std::optional<SystemTime> ParseRfc3339(std::string_view text);

// How long before `now` `then` was: "just now", "1 minute ago", "5 minutes ago", "2 hours ago",
// "1 day ago", "3 days ago", "2 weeks ago", "4 months ago", "1 year ago". A time in the future
// (a clock that moved back) is "just now".
std::string FormatAgo(SystemTime then, SystemTime now);
// The same, short: "now", "5m ago", "2h ago", "1d ago", "2w ago", "4mo ago", "1y ago".
std::string FormatAgoShort(SystemTime then, SystemTime now);

// A file's time to the nanosecond as ss keeps it in its own files: "1733616000.000000123".
std::string FormatTimespec(const struct timespec& t);
// Its reverse (the nanoseconds as written, zero-padded or not); anything else: nullopt.
std::optional<struct timespec> ParseTimespec(std::string_view text);

}  // namespace ss
