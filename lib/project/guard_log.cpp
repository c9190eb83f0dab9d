#include "guard_log.hpp"

#include <algorithm>

#include "strings.hpp"

namespace ss {
namespace {

// Room kept for the line that says how many were held back.
constexpr double kCountLine = 64;

}  // namespace

GuardLog::GuardLog(std::ostream& out, size_t burst, size_t per_second, Clock::time_point now)
    : out_(out),
      burst_(static_cast<double>(burst)),
      per_second_(static_cast<double>(per_second)),
      left_(burst_),
      refilled_(now) {}

GuardLog::~GuardLog() {
  if (held_ > 0) Flush();
}

void GuardLog::Refill(Clock::time_point now) {
  if (now <= refilled_) return;
  left_ = std::min(burst_,
                   left_ + std::chrono::duration<double>(now - refilled_).count() * per_second_);
  refilled_ = now;
}

void GuardLog::Write(const std::string& line) {
  out_ << line << std::endl;
  left_ -= static_cast<double>(line.size() + 1);
}

void GuardLog::Flush() {
  Write(Cat("... and ", held_, held_ == 1 ? " line" : " lines", " not written"));
  held_ = 0;
}

void GuardLog::Say(const std::string& line, Clock::time_point now) {
  Refill(now);
  double need = static_cast<double>(line.size() + 1) + (held_ > 0 ? kCountLine : 0);
  if (left_ >= need) {
    if (held_ > 0) Flush();
    Write(line);
    return;
  }
  // Said once each time it starts to hold lines back (at most once per line's worth of bucket).
  if (held_ == 0) {
    Write(
        "cannot write every line: the sandbox makes this guard say more than its log takes; "
        "it counts the lines until it may write again");
  }
  ++held_;
}

void GuardLog::Tick(Clock::time_point now) {
  Refill(now);
  if (held_ > 0 && left_ >= kCountLine) Flush();
}

}  // namespace ss
