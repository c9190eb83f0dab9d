// Small network helpers.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "fd.hpp"

namespace ss {

// A TCP port on 127.0.0.1 that was free a moment ago (bound to 0 and released). Whoever gets it
// must be ready to pick another if it is taken before they bind it.
int FreeLoopbackPort();

// A TCP connection to host:port made within `timeout` (non-blocking), or an empty Fd.
Fd TcpConnect(const std::string& host, int port, std::chrono::milliseconds timeout);

// Whether something accepts TCP connections on host:port within `timeout`.
bool TcpPortOpen(const std::string& host, int port, std::chrono::milliseconds timeout);

// Waits for a server that speaks first (as sshd does) to say `prefix`. A VM's forwarded port
// accepts at once, before the guest listens, and its connection stays silent until a
// retransmitted SYN reaches the guest (seconds later), while a fresh connection reaches it at
// once: until the far side shows it is there, a connection is opened every `every` and each is
// kept for `patience`. Once one was closed from the far side or heard a word, the far side is
// there and a silent connection is a server still busy greeting: from then on there is one
// connection at a time, kept for `settled`. Each connection costs a slow guest a whole sshd; a
// new one every `every` kept a guest too slow to greet within `patience` from ever greeting.
class GreetingWatch {
 public:
  GreetingWatch(std::string prefix, std::chrono::milliseconds every,
                std::chrono::milliseconds patience, std::chrono::milliseconds settled);
  ~GreetingWatch();
  // True once a connection to host:port heard the prefix (every connection is then closed);
  // false after `wait` without. At most patience / every + 1 are open at once: keep it under
  // what the server takes before it refuses (sshd's MaxStartups, 10).
  bool Heard(const std::string& host, int port, std::chrono::milliseconds wait);
  // How many connections it opened (for tests).
  int opened() const { return opened_; }

 private:
  struct Attempt {
    Fd fd;
    std::chrono::steady_clock::time_point opened;
    bool connected = false;
    std::string heard;
  };
  void Open(const std::string& host, int port);
  bool Step(Attempt& a);  // one poll event: true once the prefix is heard

  std::string prefix_;
  std::chrono::milliseconds every_, patience_, settled_;
  bool answered_ = false;  // a connection was closed from the far side, or heard a word
  int opened_ = 0;
  std::chrono::steady_clock::time_point last_opened_{};
  std::vector<Attempt> attempts_;
};

}  // namespace ss
