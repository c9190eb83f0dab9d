// The guard's log (its standard output, kept in the sandbox's guard.log): one line for each
// thing it set aside or could not do. A sandbox that plants and removes repositories in a loop
// would make it write a line each time, about a megabyte a second, out of the user's sight. So
// the guard writes as a bucket allows: `burst` bytes at once, `per_second` more each second.
// Past that it counts its lines, says once that it does, and says how many it held back when
// it may write again.
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace ss {

class GuardLog {
 public:
  using Clock = std::chrono::steady_clock;
  GuardLog(std::ostream& out, size_t burst, size_t per_second,
           Clock::time_point now = Clock::now());
  ~GuardLog();
  GuardLog(const GuardLog&) = delete;
  GuardLog& operator=(const GuardLog&) = delete;

  // A line, written or counted (`now` for tests).
  void Say(const std::string& line, Clock::time_point now = Clock::now());
  // The count of lines held back, once the bucket allows.
  void Tick(Clock::time_point now = Clock::now());

 private:
  void Refill(Clock::time_point now);
  void Write(const std::string& line);
  void Flush();

  std::ostream& out_;
  double burst_, per_second_, left_;
  Clock::time_point refilled_;
  size_t held_ = 0;
};

}  // namespace ss
