// The QMP client against a scripted monitor on a unix socket (no QEMU).
#include "qmp.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fs.hpp"
#include "platform.hpp"

namespace ss {
namespace {

// A one-client monitor: sends the greeting, then for each request line calls `answer`, which
// returns the lines to send back (none: stay silent).
class FakeMonitor {
 public:
  using Answer = std::function<std::vector<std::string>(const std::string& request)>;
  FakeMonitor(const std::string& path, Answer answer) : answer_(std::move(answer)) {
    listen_fd_ = platform::Socket(AF_UNIX, SOCK_STREAM);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listen_fd_, 4), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeMonitor() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
  }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

 private:
  void Serve() {
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    Send(
        fd,
        R"({"QMP": {"version": {"qemu": {"micro": 22, "minor": 2, "major": 7}, "package": ""}, "capabilities": ["oob"]}})");
    std::string buffer;
    char chunk[4096];
    while (true) {
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) break;
      buffer.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = buffer.find('\n')) != std::string::npos) {
        std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        {
          std::lock_guard<std::mutex> l(mu_);
          requests_.push_back(line);
        }
        for (const auto& reply : answer_(line)) Send(fd, reply);
      }
    }
    ::close(fd);
  }
  static void Send(int fd, const std::string& line) {
    std::string text = line + "\r\n";
    ssize_t ignored = ::write(fd, text.data(), text.size());
    (void)ignored;
  }

  int listen_fd_ = -1;
  Answer answer_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> requests_;
};

std::vector<std::string> Standard(const std::string& request) {
  Json r = Json::parse(request);
  std::string cmd = r.value("execute", "");
  if (cmd == "qmp_capabilities") return {R"({"return": {}})"};
  if (cmd == "query-status") {
    return {R"({"timestamp": {"seconds": 1, "microseconds": 2}, "event": "RESUME"})",
            R"({"return": {"status": "running", "singlestep": false, "running": true}})"};
  }
  if (cmd == "system_powerdown") {
    return {R"({"return": {}})",
            R"({"timestamp": {"seconds": 1, "microseconds": 2}, "event": "POWERDOWN"})"};
  }
  if (cmd == "human-monitor-command") {
    std::string line = r["arguments"].value("command-line", "");
    if (line == "savevm s1") {
      return {R"({"return": "Error: State blocked by non-migratable device\r\n"})"};
    }
    return {
        R"({"return": "Hub -1 (net0):\r\n  TCP[HOST_FORWARD]  8  127.0.0.1 41049  10.0.2.15  22  0  0\r\n"})"};
  }
  if (cmd == "silence") return {};
  return {
      R"({"error": {"class": "CommandNotFound", "desc": "The command nosuch has not been found"}})"};
}

TEST(Qmp, GreetsNegotiatesAndExecutes) {
  TempDir tmp;
  std::string path = tmp.path() + "/qmp.sock";
  FakeMonitor monitor(path, Standard);
  QmpClient qmp(path, std::chrono::seconds(2));
  EXPECT_EQ(qmp.QemuVersion(), "7.2.22");
  Json status = qmp.Execute("query-status");
  EXPECT_EQ(status.value("status", ""), "running");
  // The event that came ahead of the answer is kept.
  ASSERT_EQ(qmp.events().size(), 1u);
  EXPECT_EQ(qmp.events()[0].value("event", ""), "RESUME");
  auto requests = monitor.requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_EQ(Json::parse(requests[0]).value("execute", ""), "qmp_capabilities");
  EXPECT_EQ(Json::parse(requests[1]).value("execute", ""), "query-status");
}

TEST(Qmp, ErrorsAndHmpErrorsThrow) {
  TempDir tmp;
  std::string path = tmp.path() + "/qmp.sock";
  FakeMonitor monitor(path, Standard);
  QmpClient qmp(path, std::chrono::seconds(2));
  try {
    qmp.Execute("nosuch");
    FAIL() << "no error";
  } catch (const QmpError& e) {
    EXPECT_EQ(e.error_class(), "CommandNotFound");
    EXPECT_NE(std::string(e.what()).find("The command nosuch has not been found"),
              std::string::npos);
  }
  // HMP puts its errors in a successful answer.
  EXPECT_THROW(qmp.HumanMonitor("savevm s1"), QmpError);
  EXPECT_NE(qmp.HumanMonitor("info usernet").find("HOST_FORWARD"), std::string::npos);
}

TEST(Qmp, WaitsForEventsArrivingAfterTheAnswer) {
  TempDir tmp;
  std::string path = tmp.path() + "/qmp.sock";
  FakeMonitor monitor(path, Standard);
  QmpClient qmp(path, std::chrono::seconds(2));
  qmp.Execute("system_powerdown");
  EXPECT_TRUE(qmp.WaitEvent("POWERDOWN", std::chrono::seconds(2)));
  EXPECT_FALSE(qmp.WaitEvent("SHUTDOWN", std::chrono::milliseconds(100)));
}

TEST(Qmp, SilenceIsATimeoutNotAHang) {
  TempDir tmp;
  std::string path = tmp.path() + "/qmp.sock";
  FakeMonitor monitor(path, Standard);
  QmpClient qmp(path, std::chrono::milliseconds(300));
  auto start = std::chrono::steady_clock::now();
  try {
    qmp.Execute("silence");
    FAIL() << "no timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), 69);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(Qmp, NoMonitorIsUnavailable) {
  TempDir tmp;
  try {
    QmpClient qmp(tmp.path() + "/none.sock", std::chrono::milliseconds(300));
    FAIL() << "connected to nothing";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), 69);
    EXPECT_NE(std::string(e.what()).find("does not answer"), std::string::npos);
  }
}

}  // namespace
}  // namespace ss
