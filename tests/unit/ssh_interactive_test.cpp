// Interactive PTY sessions against a real sshd, on a local pseudo-terminal that stands in for the
// user's terminal (the test types on its master side and reads the screen from it).
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "echo_peer.hpp"
#include "error.hpp"
#include "ssh.hpp"
#include "sshd_fixture.hpp"

namespace ss {
namespace {

using testing::TestSshd;

class Screen {
 public:
  Screen() {
    winsize ws{};
    ws.ws_row = 33;
    ws.ws_col = 111;
    EXPECT_EQ(::openpty(&master_, &slave_, nullptr, nullptr, &ws), 0);
    EXPECT_EQ(::tcgetattr(slave_, &before_), 0);
    reader_ = std::thread([this] {
      char buf[4096];
      while (!stop_) {
        pollfd p{master_, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        ssize_t n = ::read(master_, buf, sizeof buf);
        if (n <= 0) continue;
        std::lock_guard<std::mutex> lock(mu_);
        text_.append(buf, static_cast<size_t>(n));
      }
    });
  }
  ~Screen() {
    stop_ = true;
    reader_.join();
    ::close(master_);
    ::close(slave_);
  }
  InteractiveOptions Options(std::vector<std::string> argv) const {
    InteractiveOptions o;
    o.argv = std::move(argv);
    o.in_fd = slave_;
    o.out_fd = slave_;
    o.term = "xterm-test";
    return o;
  }
  std::string Text() {
    std::lock_guard<std::mutex> lock(mu_);
    return text_;
  }
  bool WaitFor(const std::string& what, int seconds = 10) {
    for (int i = 0; i < seconds * 100; ++i) {
      if (Text().find(what) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  void Type(const std::string& keys) {
    EXPECT_EQ(::write(master_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }
  void Resize(int rows, int cols) {
    winsize ws{};
    ws.ws_row = static_cast<unsigned short>(rows);
    ws.ws_col = static_cast<unsigned short>(cols);
    ::ioctl(master_, TIOCSWINSZ, &ws);
  }
  // The terminal's modes are as they were before the session.
  bool Restored() const {
    termios now{};
    ::tcgetattr(slave_, &now);
    return now.c_iflag == before_.c_iflag && now.c_oflag == before_.c_oflag &&
           now.c_lflag == before_.c_lflag && now.c_cflag == before_.c_cflag &&
           std::memcmp(now.c_cc, before_.c_cc, sizeof now.c_cc) == 0;
  }

 private:
  int master_ = -1;
  int slave_ = -1;
  termios before_{};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string text_;
  std::thread reader_;
};

SshOptions Named() {
  SshOptions o;
  o.name = "test";
  return o;
}

TEST(SshInteractive, PtySizeTermAndExitStatus) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  Screen screen;
  int status = conn.RunInteractive(
      screen.Options({"sh", "-c", "stty size; tty; echo \"term=$TERM\"; exit 7"}));
  EXPECT_EQ(status, 7);
  EXPECT_TRUE(screen.WaitFor("term=xterm-test"));
  std::string text = screen.Text();
  EXPECT_NE(text.find("33 111\r\n"), std::string::npos) << text;
  EXPECT_NE(text.find("/dev/pts/"), std::string::npos) << text;
  EXPECT_TRUE(screen.Restored());
}

TEST(SshInteractive, KeysResizeAndCtrlC) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  Screen screen;
  std::thread user([&] {
    ASSERT_TRUE(screen.WaitFor("ready"));
    screen.Type("hello\r");
    ASSERT_TRUE(screen.WaitFor("got:hello"));
    screen.Resize(50, 140);
    ::kill(::getpid(), SIGWINCH);  // the kernel sends it only to the terminal's owner
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    screen.Type("\r");
    ASSERT_TRUE(screen.WaitFor("size:50 140"));
    screen.Type("\x03");  // Ctrl-C: a byte in raw mode, SIGINT on the remote terminal
  });
  int status = conn.RunInteractive(
      screen.Options({"bash", "--norc", "-c",
                      "trap 'echo interrupted; exit 3' INT; echo ready; read l; echo \"got:$l\";"
                      " read l; echo \"size:$(stty size)\"; while :; do sleep 0.1; done"}));
  user.join();
  EXPECT_EQ(status, 3);
  EXPECT_TRUE(screen.WaitFor("interrupted"));
  EXPECT_TRUE(screen.Restored());
}

TEST(SshInteractive, LoginShellInADirectory) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  Screen screen;
  std::thread user([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    screen.Type("echo \"in:$(pwd)\"; exit 5\r");
  });
  InteractiveOptions o = screen.Options({});
  o.cwd = "/tmp";
  int status = conn.RunInteractive(o);
  user.join();
  EXPECT_EQ(status, 5);
  EXPECT_TRUE(screen.WaitFor("in:/tmp"));
  EXPECT_TRUE(screen.Restored());
}

TEST(SshInteractive, SecretsReachTheCommandAndNeverTheScreen) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  Screen screen;
  const std::string secret = "sk-ant 'quoted' \"double\" $HOME `x` \\ é日本 ~!#";
  std::vector<std::string> leaks;
  std::thread user([&] {
    ASSERT_TRUE(screen.WaitFor("ask:"));
    // The remote command runs now: no command line on this machine (both ends) has the value.
    for (const auto& cmdline : testing::AllCommandLines()) {
      if (cmdline.find("sk-ant") != std::string::npos) leaks.push_back(cmdline);
    }
    screen.Type("typed after\r");
  });
  InteractiveOptions o = screen.Options(
      {"sh", "-c",
       "printf '[%s][%s]\\n' \"$SS_SECRET\" \"$SS_TWO\"; printf 'ask:'; read l; echo \"got:$l\""});
  o.secret_env = {{"SS_SECRET", secret}, {"SS_TWO", "2"}};
  int status = conn.RunInteractive(o);
  user.join();
  EXPECT_EQ(status, 0);
  EXPECT_EQ(leaks, std::vector<std::string>{});
  EXPECT_TRUE(screen.WaitFor("got:typed after"));
  std::string text = screen.Text();
  EXPECT_NE(text.find("[" + secret + "][2]"), std::string::npos) << text;
  EXPECT_EQ(text.find("ss-secrets-"), std::string::npos) << text;
  EXPECT_EQ(text.find("SS_SECRET="), std::string::npos) << text;
  EXPECT_EQ(text.find("\\0"), std::string::npos) << text;
  EXPECT_TRUE(screen.Restored());
}

TEST(SshInteractive, LostConnectionRestoresTheTerminal) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  Screen screen;
  std::thread killer([&] {
    ASSERT_TRUE(screen.WaitFor("ready"));
    sshd.KillConnections();
  });
  try {
    conn.RunInteractive(screen.Options({"sh", "-c", "echo ready; sleep 30"}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitRemote);
    EXPECT_EQ(std::string(e.what()), "connection to sandbox 'test' lost");
  }
  killer.join();
  EXPECT_TRUE(screen.Restored());
}

TEST(SshInteractive, SigtermEndsTheSessionAndRestoresTheTerminal) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  Screen screen;
  std::thread killer([&] {
    ASSERT_TRUE(screen.WaitFor("ready"));
    ::kill(::getpid(), SIGTERM);
  });
  try {
    conn.RunInteractive(screen.Options({"sh", "-c", "echo ready; sleep 30"}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), 128 + SIGTERM);
    EXPECT_EQ(std::string(e.what()), "session with sandbox 'test' ended by SIGTERM");
  }
  killer.join();
  EXPECT_TRUE(screen.Restored());
  EXPECT_EQ(conn.Exec({"echo", "ok"}).out, "ok\n");  // the connection goes on
}

TEST(SshInteractive, ForwardsServeDuringTheSession) {
  TestSshd sshd;
  testing::EchoServer echo;
  SshConnection conn(sshd.endpoint(), Named());
  SocketAddress listen, target;
  target.port = echo.port();
  ForwardInfo f = conn.ForwardLocal(listen, target);
  Screen screen;
  std::string result = "not run";
  std::thread user([&] {
    ASSERT_TRUE(screen.WaitFor("ready"));
    result =
        testing::EchoRoundTrips([&] { return testing::ConnectTcp(f.bound.port); }, 20, 1 << 20);
    screen.Type("\r");
  });
  int status = conn.RunInteractive(screen.Options({"sh", "-c", "echo ready; read l; exit 4"}));
  user.join();
  EXPECT_EQ(status, 4);
  EXPECT_EQ(result, "");
  EXPECT_TRUE(screen.Restored());
}

}  // namespace
}  // namespace ss
