// Forwards on an SshConnection against a real sshd, with echo servers on both ends.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <exception>
#include <thread>

#include "echo_peer.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "platform.hpp"
#include "ssh.hpp"
#include "sshd_fixture.hpp"

namespace ss {
namespace {

using testing::ConnectTcp;
using testing::ConnectUnix;
using testing::EchoRoundTrips;
using testing::EchoServer;
using testing::TestSshd;

// Runs the connection's loop on a thread while the test drives clients.
class LoopThread {
 public:
  explicit LoopThread(SshConnection& conn) : conn_(conn) {
    thread_ = std::thread([this] {
      try {
        conn_.Run();
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  ~LoopThread() { Stop(); }
  void Stop() {
    if (!thread_.joinable()) return;
    conn_.Stop();
    thread_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  SshConnection& conn_;
  std::exception_ptr error_;
  std::thread thread_;
};

SocketAddress Tcp(int port) {
  SocketAddress a;
  a.port = port;
  return a;
}

SocketAddress Unix(const std::string& path) {
  SocketAddress a;
  a.socket_path = path;
  return a;
}

// Waits until our open descriptors are back to `count` (closing is asynchronous).
bool FdsBackTo(size_t count) {
  for (int i = 0; i < 500; ++i) {
    if (testing::OpenFdCount() <= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(SshForward, LocalTcpToRemoteTcp) {
  TestSshd sshd;
  EchoServer echo;  // "in the sandbox": sshd connects to it
  SshConnection conn(sshd.endpoint());
  ForwardInfo f = conn.ForwardLocal(Tcp(0), Tcp(echo.port()));
  ASSERT_GT(f.bound.port, 0);
  EXPECT_EQ(f.bound.host, "127.0.0.1");
  LoopThread loop(conn);
  auto connect = [&] { return ConnectTcp(f.bound.port); };
  EXPECT_EQ(EchoRoundTrips(connect, 1, 5), "");
  EXPECT_EQ(EchoRoundTrips(connect, 1, 0), "");
  EXPECT_EQ(EchoRoundTrips(connect, 200, 1 << 20), "");
}

TEST(SshForward, LocalTcpToRemoteUnixSocket) {
  TestSshd sshd;
  EchoServer echo(sshd.Path("echo.sock"));
  SshConnection conn(sshd.endpoint());
  ForwardInfo f = conn.ForwardLocal(Tcp(0), Unix(echo.path()));
  LoopThread loop(conn);
  EXPECT_EQ(EchoRoundTrips([&] { return ConnectTcp(f.bound.port); }, 200, 1 << 20), "");
}

TEST(SshForward, LocalUnixListenerReplacesOnlyStaleSockets) {
  TestSshd sshd;
  EchoServer echo;
  SshConnection conn(sshd.endpoint());
  std::string path = sshd.Path("local.sock");
  // Not a socket: left alone.
  ::close(::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  EXPECT_THROW(conn.ForwardLocal(Unix(path), Tcp(echo.port())), Error);
  EXPECT_TRUE(PathExists(path));
  ::unlink(path.c_str());
  // A socket file left behind by a server that died: replaced.
  int stale = platform::Socket(AF_UNIX, SOCK_STREAM);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  ASSERT_EQ(::bind(stale, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::close(stale);
  ASSERT_TRUE(PathExists(path));
  ForwardInfo f = conn.ForwardLocal(Unix(path), Tcp(echo.port()));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // A live socket is not taken over.
  try {
    conn.ForwardLocal(Unix(path), Tcp(echo.port()));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitUnavailable);
    EXPECT_EQ(std::string(e.what()), "cannot listen on " + path);
  }
  {
    LoopThread loop(conn);
    EXPECT_EQ(EchoRoundTrips([&] { return ConnectUnix(path); }, 20, 100000), "");
  }
  conn.CancelForward(f.id);
  EXPECT_FALSE(PathExists(path));
}

TEST(SshForward, LocalPortInUseIsAnError) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint());
  ForwardInfo f = conn.ForwardLocal(Tcp(0), Tcp(1));
  try {
    conn.ForwardLocal(Tcp(f.bound.port), Tcp(1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitUnavailable);
    EXPECT_EQ(std::string(e.what()), Cat("cannot listen on 127.0.0.1:", f.bound.port));
  }
}

TEST(SshForward, RemoteTcpToHostTcp) {
  TestSshd sshd;
  EchoServer echo;  // on the host
  SshConnection conn(sshd.endpoint());
  ForwardInfo f = conn.ForwardRemote("127.0.0.1", 0, [&] { return Tcp(echo.port()); });
  ASSERT_GE(f.bound.port, 20000);
  LoopThread loop(conn);
  auto connect = [&] { return ConnectTcp(f.bound.port); };  // "in the sandbox"
  EXPECT_EQ(EchoRoundTrips(connect, 1, 5), "");
  EXPECT_EQ(EchoRoundTrips(connect, 200, 1 << 20), "");
}

TEST(SshForward, RemoteTcpToHostUnixSocket) {
  TestSshd sshd;
  EchoServer echo(sshd.Path("host.sock"));
  SshConnection conn(sshd.endpoint());
  ForwardInfo f = conn.ForwardRemote("127.0.0.1", 0, [&] { return Unix(echo.path()); });
  LoopThread loop(conn);
  EXPECT_EQ(EchoRoundTrips([&] { return ConnectTcp(f.bound.port); }, 200, 1 << 20), "");
}

TEST(SshForward, RemoteTargetIsChosenPerConnection) {
  TestSshd sshd;
  EchoServer first(sshd.Path("first.sock"));
  auto second = std::make_unique<EchoServer>(sshd.Path("second.sock"));
  const std::string second_path = second->path();
  std::atomic<int> use{1};
  SshConnection conn(sshd.endpoint());
  ForwardInfo f = conn.ForwardRemote("127.0.0.1", 0, [&]() -> std::optional<SocketAddress> {
    if (use == 0) return std::nullopt;
    return Unix(use == 1 ? first.path() : second_path);
  });
  LoopThread loop(conn);
  auto connect = [&] { return ConnectTcp(f.bound.port); };
  EXPECT_EQ(EchoRoundTrips(connect, 3, 1000), "");
  EXPECT_EQ(first.accepted(), 3u);
  use = 2;
  EXPECT_EQ(EchoRoundTrips(connect, 2, 1000), "");
  EXPECT_EQ(second->accepted(), 2u);
  // A target that went away: the connection ends at once instead of hanging.
  second.reset();
  EXPECT_NE(EchoRoundTrips(connect, 1, 1000), "");
  use = 0;  // refused
  EXPECT_NE(EchoRoundTrips(connect, 1, 1000), "");
  use = 1;
  EXPECT_EQ(EchoRoundTrips(connect, 1, 1000), "");
}

TEST(SshForward, ExplicitRemotePortAndRefusal) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint());
  int port = testing::FreePort();
  ForwardInfo f = conn.ForwardRemote("127.0.0.1", port, [] { return Tcp(1); });
  EXPECT_EQ(f.bound.port, port);
  try {
    conn.ForwardRemote("127.0.0.1", port, [] { return Tcp(1); });
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitUnavailable);
  }
  conn.CancelForward(f.id);
  EXPECT_EQ(conn.ForwardRemote("127.0.0.1", port, [] { return Tcp(1); }).bound.port, port);
  EXPECT_EQ(conn.Exec({"echo", "ok"}).out, "ok\n");
}

TEST(SshForward, TenThousandSequentialConnectionsLeakNoDescriptors) {
  TestSshd sshd;
  EchoServer host_echo(sshd.Path("host.sock"));
  EchoServer sandbox_echo;
  SshConnection conn(sshd.endpoint());
  ForwardInfo remote = conn.ForwardRemote("127.0.0.1", 0, [&] { return Unix(host_echo.path()); });
  ForwardInfo local = conn.ForwardLocal(Tcp(0), Unix(host_echo.path()));
  LoopThread loop(conn);
  // Warm up, then count.
  ASSERT_EQ(EchoRoundTrips([&] { return ConnectTcp(remote.bound.port); }, 1, 10), "");
  ASSERT_EQ(EchoRoundTrips([&] { return ConnectTcp(local.bound.port); }, 1, 10), "");
  ASSERT_TRUE(FdsBackTo(testing::OpenFdCount()));
  size_t start = testing::OpenFdCount();
  for (int i = 0; i < 10000; ++i) {
    ASSERT_EQ(EchoRoundTrips([&] { return ConnectTcp(remote.bound.port); }, 1, 100,
                             static_cast<unsigned>(i)),
              "")
        << "connection " << i;
  }
  EXPECT_TRUE(FdsBackTo(start)) << testing::OpenFdCount() << " open, " << start << " at start";
  for (int i = 0; i < 10000; ++i) {
    ASSERT_EQ(EchoRoundTrips([&] { return ConnectTcp(local.bound.port); }, 1, 100,
                             static_cast<unsigned>(i)),
              "")
        << "connection " << i;
  }
  EXPECT_TRUE(FdsBackTo(start)) << testing::OpenFdCount() << " open, " << start << " at start";
}

TEST(SshForward, ForwardsRunWhileCommandsRun) {
  TestSshd sshd;
  EchoServer echo;
  SshConnection conn(sshd.endpoint());
  ForwardInfo f = conn.ForwardLocal(Tcp(0), Tcp(echo.port()));
  std::string result;
  std::atomic<bool> finished{false};
  std::thread client([&] {
    result = EchoRoundTrips([&] { return ConnectTcp(f.bound.port); }, 50, 1 << 20);
    finished = true;
  });
  // Exec runs the loop, which serves the forward meanwhile.
  int execs = 0;
  while (!finished || execs < 20) {
    ASSERT_EQ(conn.Exec({"echo", "x"}).out, "x\n");
    ++execs;
  }
  client.join();
  EXPECT_EQ(result, "");
}

}  // namespace
}  // namespace ss
