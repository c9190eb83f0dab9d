#include "net.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "fd.hpp"
#include "listener.hpp"
#include "platform.hpp"

namespace ss {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

using testing::Listener;

// A server that closes its first `refusals` connections at once (a guest whose sshd is not
// listening yet) and then greets each connection only after `slowness` (a guest too busy to
// greet sooner), one at a time, as a starved sshd does.
class SlowGreeter {
 public:
  SlowGreeter(int refusals, milliseconds slowness)
      : thread_([this, refusals, slowness] { Serve(refusals, slowness); }) {}
  ~SlowGreeter() {
    stop_ = true;
    thread_.join();
  }
  int port() const { return listener_.port; }
  int accepted() const { return accepted_; }

 private:
  void Serve(int refusals, milliseconds slowness) {
    while (!stop_) {
      pollfd p{listener_.fd.get(), POLLIN, 0};
      if (::poll(&p, 1, 20) != 1) continue;
      Fd conn(::accept(listener_.fd.get(), nullptr, nullptr));
      if (!conn.ok()) continue;
      if (++accepted_ <= refusals) continue;  // closed at once
      auto until = Clock::now() + slowness;
      while (!stop_ && Clock::now() < until) std::this_thread::sleep_for(milliseconds(5));
      ::send(conn.get(), "SSH-2.0-slow\r\n", 14, platform::kSendFlags);
    }
  }

  Listener listener_;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

TEST(GreetingWatch, WaitsForASlowServerOnOneConnectionOnceItHasAnswered) {
  // Slower to greet than the patience of the first connections: a new connection every 50 ms
  // would each cost the server a greeting it then sends to nobody, and none would ever hear one.
  SlowGreeter server(3, milliseconds(800));
  GreetingWatch watch("SSH-", milliseconds(50), milliseconds(200), milliseconds(5000));
  auto start = Clock::now();
  EXPECT_TRUE(watch.Heard("127.0.0.1", server.port(), milliseconds(4000)));
  EXPECT_LT(Clock::now() - start, milliseconds(3000));
  // The three refused, then the one that was greeted (and perhaps one opened before the first
  // refusal was seen).
  EXPECT_LE(watch.opened(), 5);
}

TEST(GreetingWatch, KeepsOpeningFreshConnectionsWhileNothingAnswers) {
  // A forwarded port whose far side is not up yet: connected, silent, never closed.
  Listener silent;
  GreetingWatch watch("SSH-", milliseconds(100), milliseconds(300), milliseconds(5000));
  EXPECT_FALSE(watch.Heard("127.0.0.1", silent.port, milliseconds(1000)));
  EXPECT_GE(watch.opened(), 6);  // one at a time, each kept 300 ms, would be 4
  EXPECT_LE(watch.opened(), 11);
}

TEST(GreetingWatch, TriesAClosedPortOnlyEveryInterval) {
  int port;
  {
    Listener gone;
    port = gone.port;
  }
  GreetingWatch watch("SSH-", milliseconds(100), milliseconds(300), milliseconds(5000));
  EXPECT_FALSE(watch.Heard("127.0.0.1", port, milliseconds(1000)));
  EXPECT_GE(watch.opened(), 6);
  EXPECT_LE(watch.opened(), 11);  // not as fast as the refusals come
}

TEST(GreetingWatch, HearsOnlyTheRightWords) {
  Listener http;
  std::thread server([&] {
    Fd conn(::accept(http.fd.get(), nullptr, nullptr));
    ::send(conn.get(), "HTTP/1.1 400\r\n", 14, platform::kSendFlags);
  });
  GreetingWatch watch("SSH-", milliseconds(100), milliseconds(300), milliseconds(300));
  EXPECT_FALSE(watch.Heard("127.0.0.1", http.port, milliseconds(600)));
  server.join();
}

}  // namespace
}  // namespace ss
