// Remote unix-socket forwards (the helper over an exec channel) against a real sshd on this
// machine: the "remote" socket is a path here too, so the tests connect to it directly.
#include "remote_socket.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>

#include "echo_peer.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "platform.hpp"
#include "sshd_fixture.hpp"
#include "strings.hpp"

namespace ss {
namespace {

using testing::ConnectUnix;
using testing::EchoRoundTrips;
using testing::EchoServer;
using testing::TestSshd;

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

SocketAddress Unix(const std::string& path) {
  SocketAddress a;
  a.socket_path = path;
  return a;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

bool WaitGone(const std::string& path) {
  for (int i = 0; i < 500; ++i) {
    if (!PathExists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(RemoteSocket, EchoThroughTheHelperWithTheRightModes) {
  TestSshd sshd;
  EchoServer echo(sshd.Path("host.sock"));
  std::string dir = sshd.Path("bridge-dir");
  std::string path = dir + "/bridge.sock";
  SshConnection conn(sshd.endpoint());
  RemoteSocketOptions options;
  options.make_dir = true;
  auto forward = RemoteSocketForward::Start(conn, path, options,
                                            [&] { return std::vector{Unix(echo.path())}; });
  EXPECT_FALSE(forward->shared());
  EXPECT_EQ(ModeOf(dir), 0700u);
  EXPECT_EQ(ModeOf(path) & 0777, 0600u);
  {
    LoopThread loop(conn);
    auto connect = [&] { return ConnectUnix(path); };
    EXPECT_EQ(EchoRoundTrips(connect, 1, 5), "");
    EXPECT_EQ(EchoRoundTrips(connect, 1, 0), "");
    EXPECT_EQ(EchoRoundTrips(connect, 100, 1 << 20), "");
  }
  EXPECT_EQ(forward->total_connections(), 102u);
  forward.reset();
  LoopThread loop(conn);  // the helper sees its input end and removes the socket
  EXPECT_TRUE(WaitGone(path));
}

TEST(RemoteSocket, MissingDirectoryWithoutMakeDirFailsWithSshWording) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint());
  std::string path = sshd.Path("no-such-dir/x.sock");
  try {
    RemoteSocketForward::Start(conn, path, {}, [] { return std::vector<SocketAddress>{}; });
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitRemote);
    EXPECT_EQ(std::string(e.what()), "remote port forwarding failed for listen path " + path);
    ASSERT_FALSE(e.details().empty());
    EXPECT_EQ(e.details()[0], "  cannot bind to path " + path + ": No such file or directory");
  }
}

TEST(RemoteSocket, StaleSocketIsReplacedLiveOneIsNot) {
  TestSshd sshd;
  EchoServer echo(sshd.Path("host.sock"));
  std::string path = sshd.Path("remote.sock");
  {
    // A socket nobody listens on any more.
    int fd = platform::Socket(AF_UNIX, SOCK_STREAM);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::close(fd);
  }
  SshConnection conn(sshd.endpoint());
  auto targets = [&] { return std::vector{Unix(echo.path())}; };
  auto forward = RemoteSocketForward::Start(conn, path, {}, targets);
  {
    LoopThread loop(conn);
    EXPECT_EQ(EchoRoundTrips([&] { return ConnectUnix(path); }, 2, 1000), "");
  }
  forward.reset();
  LoopThread(conn).Stop();
  EXPECT_TRUE(WaitGone(path));
  // A live socket of someone else's is never taken over.
  EchoServer other(path);
  SshConnection conn2(sshd.endpoint());
  try {
    RemoteSocketForward::Start(conn2, path, {}, targets);
    FAIL();
  } catch (const Error& e) {
    ASSERT_FALSE(e.details().empty());
    EXPECT_EQ(e.details()[0], "  cannot bind to path " + path + ": Address already in use");
  }
}

TEST(RemoteSocket, TargetsAreTriedInOrderPerConnection) {
  TestSshd sshd;
  EchoServer second(sshd.Path("second.sock"));
  std::string dead = sshd.Path("dead.sock");
  std::string path = sshd.Path("remote.sock");
  std::atomic<int> mode{1};
  SshConnection conn(sshd.endpoint());
  auto forward = RemoteSocketForward::Start(conn, path, {}, [&] {
    if (mode == 0) return std::vector<SocketAddress>{};
    return std::vector{Unix(dead), Unix(second.path())};
  });
  LoopThread loop(conn);
  auto connect = [&] { return ConnectUnix(path); };
  EXPECT_EQ(EchoRoundTrips(connect, 5, 1000), "");
  EXPECT_EQ(second.accepted(), 5u);
  mode = 0;  // refused: the client sees the connection end
  EXPECT_NE(EchoRoundTrips(connect, 1, 1000), "");
  mode = 1;
  EXPECT_EQ(EchoRoundTrips(connect, 1, 1000), "");
}

// Reaches the helper's rendezvous socket and says `head`, then no more: "closed" when the helper
// hangs up, "answered" when it sends anything or keeps the connection.
std::string KnockWith(const std::string& rendezvous, const std::string& head) {
  int fd = ConnectUnix(rendezvous);
  if (fd < 0) return "cannot connect";
  Fd guard(fd);
  if (::send(fd, head.data(), head.size(), platform::kSendFlags) !=
      static_cast<ssize_t>(head.size())) {
    return "closed";
  }
  ::shutdown(fd, SHUT_WR);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char c;
  ssize_t n = ::recv(fd, &c, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET) ? "closed" : "answered";
}

TEST(RemoteSocket, OnlyItsOwnChannelCarriesAConnection) {
  TestSshd sshd;
  EchoServer echo(sshd.Path("host.sock"));
  std::string path = sshd.Path("remote.sock");
  SshConnection conn(sshd.endpoint());
  std::unique_ptr<RemoteSocketForward> forward;
  std::vector<std::string> knocks;
  // Called when the helper has announced the client and waits for its channel: anyone else who
  // reaches the rendezvous socket first, with the id and a wrong token or none, is hung up on.
  forward = RemoteSocketForward::Start(conn, path, {}, [&] {
    std::string id("\0\0\0\1", 4);
    knocks.push_back(KnockWith(forward->rendezvous(), id + std::string(16, 'x')));
    knocks.push_back(KnockWith(forward->rendezvous(), id));
    knocks.push_back(KnockWith(forward->rendezvous(), ""));
    return std::vector{Unix(echo.path())};
  });
  std::string dir = forward->rendezvous().substr(0, forward->rendezvous().rfind('/'));
  EXPECT_EQ(ModeOf(dir), 0700u);
  {
    LoopThread loop(conn);
    EXPECT_EQ(EchoRoundTrips([&] { return ConnectUnix(path); }, 1, 1000), "");
  }
  EXPECT_EQ(knocks, (std::vector<std::string>{"closed", "closed", "closed"}));
  forward.reset();
  LoopThread loop(conn);  // the helper sees its input end and removes its rendezvous
  EXPECT_TRUE(WaitGone(dir));
}

TEST(RemoteSocket, TwoConnectionsShareOneListener) {
  TestSshd sshd;
  EchoServer echo(sshd.Path("host.sock"));
  std::string path = sshd.Path("shared.sock");
  auto targets = [&] { return std::vector{Unix(echo.path())}; };
  SshConnection first(sshd.endpoint());
  auto a = RemoteSocketForward::Start(first, path, {}, targets);
  SshConnection second(sshd.endpoint());
  auto b = RemoteSocketForward::Start(second, path, {}, targets);
  EXPECT_FALSE(a->shared());
  EXPECT_TRUE(b->shared());
  auto connect = [&] { return ConnectUnix(path); };
  {
    LoopThread l1(first);
    LoopThread l2(second);
    EXPECT_EQ(EchoRoundTrips(connect, 20, 10000), "");
    // The newest connection gets clients that belong to neither SSH connection.
    EXPECT_EQ(b->total_connections(), 20u);
    EXPECT_EQ(a->total_connections(), 0u);
  }
  // The listener's own connection ends: the other one goes on serving, without a gap.
  a.reset();
  {
    LoopThread l1(first);
    LoopThread l2(second);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(EchoRoundTrips(connect, 10, 10000), "");
    EXPECT_EQ(b->total_connections(), 30u);
  }
  b.reset();
  LoopThread l2(second);
  EXPECT_TRUE(WaitGone(path));
}

// The helpers serving `path`, oldest first.
std::vector<pid_t> HelpersOf(const std::string& path) {
  std::vector<std::pair<long long, pid_t>> found;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    auto cmdline = testing::ReadProc(Cat("/proc/", pid, "/cmdline"));
    auto stat = testing::ReadProc(Cat("/proc/", pid, "/stat"));
    if (!cmdline || !stat || cmdline->find("serve") == std::string::npos) continue;
    if (cmdline->find(path + '\0') == std::string::npos) continue;
    auto fields = Split(stat->substr(stat->rfind(')') + 2), ' ');
    found.emplace_back(std::stoll(fields[19]), pid);  // starttime
  }
  if (d) ::closedir(d);
  std::sort(found.begin(), found.end());
  std::vector<pid_t> out;
  for (auto& [start, pid] : found) out.push_back(pid);
  return out;
}

TEST(RemoteSocket, ListenerKilledFollowerTakesOverWithinTwoSeconds) {
  TestSshd sshd;
  EchoServer echo(sshd.Path("host.sock"));
  std::string path = sshd.Path("shared.sock");
  auto targets = [&] { return std::vector{Unix(echo.path())}; };
  SshConnection first(sshd.endpoint());
  auto a = RemoteSocketForward::Start(first, path, {}, targets);
  SshConnection second(sshd.endpoint());
  auto b = RemoteSocketForward::Start(second, path, {}, targets);
  LoopThread l1(first);
  LoopThread l2(second);
  std::vector<pid_t> helpers = HelpersOf(path);
  ASSERT_EQ(helpers.size(), 2u);
  ::kill(helpers[0], SIGKILL);  // the listener, without any chance to clean up
  auto connect = [&] { return ConnectUnix(path); };
  auto start = std::chrono::steady_clock::now();
  std::string result = "never tried";
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(2)) {
    result = EchoRoundTrips(connect, 1, 1000);
    if (result.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(result, "");
  EXPECT_EQ(EchoRoundTrips(connect, 10, 10000), "");
  EXPECT_GE(b->total_connections(), 11u);
  // The killed helper's forward ends when its loop reads the channel's end (later under load).
  for (int i = 0; i < 1000 && !a->ended(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(a->ended()) << "the forward of the killed helper had not ended after 10 s";
}

// Stands where a helper of another ss build leads: holds PATH.lock and listens on PATH.ctl,
// answering a joining helper with `answer` (nothing when empty). What it was told, in `heard`.
class ForeignLeader {
 public:
  ForeignLeader(const std::string& path, std::string answer)
      : answer_(std::move(answer)), ctl_path_(path + ".ctl") {
    lock_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    EXPECT_EQ(::flock(lock_, LOCK_EX | LOCK_NB), 0);
    ctl_ = platform::Socket(AF_UNIX, SOCK_SEQPACKET);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", ctl_path_.c_str());
    EXPECT_EQ(::bind(ctl_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(ctl_, 4), 0);
    thread_ = std::thread([this] {
      int s = ::accept(ctl_, nullptr, nullptr);
      if (s < 0) return;
      char buf[64];
      ssize_t n = ::recv(s, buf, sizeof buf, 0);
      if (n > 0) heard = std::string(buf, n);
      if (!answer_.empty()) ::send(s, answer_.data(), answer_.size(), 0);
      char more;
      (void)::recv(s, &more, 1, 0);  // until the helper hangs up
      ::close(s);
    });
  }
  ~ForeignLeader() {
    ::shutdown(ctl_, SHUT_RDWR);
    thread_.join();
    ::close(ctl_);
    ::unlink(ctl_path_.c_str());
    ::close(lock_);
  }
  std::string heard;

 private:
  std::string answer_;
  std::string ctl_path_;
  int lock_ = -1;
  int ctl_ = -1;
  std::thread thread_;
};

std::string StartFails(TestSshd& sshd, const std::string& path) {
  SshConnection conn(sshd.endpoint());
  try {
    RemoteSocketForward::Start(conn, path, {}, [] { return std::vector<SocketAddress>{}; });
  } catch (const Error& e) {
    return e.details().empty() ? e.what() : e.details()[0];
  }
  return "started";
}

TEST(RemoteSocket, HelpersOfAnotherProtocolNeverShareAListener) {
  TestSshd sshd;
  std::string path = sshd.Path("shared.sock");
  {
    ForeignLeader other(path, "H 1");
    EXPECT_EQ(StartFails(sshd, path),
              Cat("  cannot share the listener of ", path,
                  ": it belongs to a helper of another ss "
                  "build (protocol 1, this one: 2); end that build's sessions of this sandbox and "
                  "try again"));
    EXPECT_EQ(other.heard.substr(0, 4), "H 2 ");
  }
  {
    ForeignLeader older(path, "");  // from before helpers said their protocol
    EXPECT_EQ(StartFails(sshd, path),
              Cat("  cannot share the listener of ", path,
                  ": it belongs to a helper of an older "
                  "ss build, which does not say its protocol (this one: 2); end that build's "
                  "sessions of this sandbox and try again"));
  }
}

// The listener's side: a helper of another protocol is told the leader's and let go; one that
// says none is never handed a connection.
TEST(RemoteSocket, TheListenerHandsNothingToHelpersOfAnotherProtocol) {
  TestSshd sshd;
  EchoServer echo(sshd.Path("host.sock"));
  std::string path = sshd.Path("shared.sock");
  SshConnection conn(sshd.endpoint());
  auto leader =
      RemoteSocketForward::Start(conn, path, {}, [&] { return std::vector{Unix(echo.path())}; });
  LoopThread loop(conn);
  auto join = [&](const std::string& hello) {
    int s = platform::Socket(AF_UNIX, SOCK_SEQPACKET);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s.ctl", path.c_str());
    EXPECT_EQ(::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::send(s, hello.data(), hello.size(), 0), static_cast<ssize_t>(hello.size()));
    timeval tv{2, 0};
    ::setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return s;
  };
  int newer = join("H 3 0");
  char buf[64];
  ssize_t n = ::recv(newer, buf, sizeof buf, 0);
  EXPECT_EQ(std::string(buf, std::max<ssize_t>(n, 0)), "H 2");
  EXPECT_EQ(::recv(newer, buf, sizeof buf, 0), 0);  // and let go
  ::close(newer);
  int older = join("R 0");  // the newest helper, were it trusted
  auto connect = [&] { return ConnectUnix(path); };
  EXPECT_EQ(EchoRoundTrips(connect, 5, 1000), "");
  EXPECT_EQ(leader->total_connections(), 5u);
  timeval tv{0, 200000};
  ::setsockopt(older, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  EXPECT_EQ(::recv(older, buf, sizeof buf, 0), -1);  // nothing was handed over
  ::close(older);
}

// The error a forward with `python` as the helper's interpreter fails with.
Error StartFailure(const std::string& python) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint());
  RemoteSocketOptions options;
  options.python = python;
  try {
    RemoteSocketForward::Start(conn, sshd.Path("x.sock"), options,
                               [] { return std::vector<SocketAddress>{}; });
  } catch (const Error& e) {
    return e;
  }
  return Error(0, "no failure");
}

TEST(RemoteSocket, HelperNeedsItsInterpreter) {
  Error e = StartFailure("ss-no-such-python");
  EXPECT_EQ(e.code(), kExitRemote);
  ASSERT_FALSE(e.hints().empty());
  EXPECT_EQ(e.hints()[0],
            "forwarding a remote unix socket needs ss-no-such-python on the remote side");
}

// A helper of the sandbox's own (a fake interpreter first on its PATH) that names a rendezvous
// socket ss cannot use: refused before any connection is carried, never followed.
TEST(RemoteSocket, AHelperNamingARelativeRendezvousIsRefused) {
  TempDir dir;
  std::string fake = dir.path() + "/fake-python";
  // Its frame: R, id 0, length 17 (octal 021), "leader relative/s".
  AtomicWrite(fake, "#!/bin/sh\nprintf 'R\\0\\0\\0\\0\\0\\0\\0\\021leader relative/s'\n", 0755);
  Error e = StartFailure(fake);
  EXPECT_EQ(e.code(), kExitRemote);
  ASSERT_FALSE(e.details().empty());
  EXPECT_EQ(e.details()[0], "  the forwarding helper named no usable rendezvous socket");
}

TEST(RemoteSocket, AServerRefusingSocketChannelsIsSaidOnce) {
  TestSshd sshd("AllowStreamLocalForwarding no\n");
  EchoServer echo(sshd.Path("host.sock"));
  std::string path = sshd.Path("remote.sock");
  SshConnection conn(sshd.endpoint());
  auto forward =
      RemoteSocketForward::Start(conn, path, {}, [&] { return std::vector{Unix(echo.path())}; });
  ::testing::internal::CaptureStderr();
  {
    LoopThread loop(conn);
    auto connect = [&] { return ConnectUnix(path); };
    EXPECT_NE(EchoRoundTrips(connect, 1, 100), "");  // the client sees its connection end
    EXPECT_NE(EchoRoundTrips(connect, 1, 100), "");
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("a connection to " + path + " could not be carried: "), std::string::npos)
      << err;
  EXPECT_NE(err.find("AllowStreamLocalForwarding"), std::string::npos) << err;
  EXPECT_EQ(err.find("could not be carried", err.find("could not be carried") + 1),
            std::string::npos)
      << err;
}

// A rendezvous directory with a dead socket, `age` old, as a killed helper leaves it.
std::string DeadRendezvous(const std::string& name, std::chrono::seconds age) {
  std::string dir = "/tmp/ss-bridge-" + name;
  RemoveTree(dir);
  MakeDirs(dir, 0700);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::string path = dir + "/s";
  std::memcpy(a.sun_path, path.c_str(), path.size());
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  timespec times[2] = {{::time(nullptr) - age.count(), 0}, {::time(nullptr) - age.count(), 0}};
  ::utimensat(AT_FDCWD, dir.c_str(), times, 0);
  return dir;
}

TEST(RemoteSocket, AKilledHelpersRendezvousIsSweptByTheNextOne) {
  TestSshd sshd;
  std::string old = DeadRendezvous(Cat("old-", ::getpid()), std::chrono::seconds(120));
  std::string young = DeadRendezvous(Cat("young-", ::getpid()), std::chrono::seconds(0));
  SshConnection conn(sshd.endpoint());
  auto forward = RemoteSocketForward::Start(conn, sshd.Path("remote.sock"), {},
                                            [] { return std::vector<SocketAddress>{}; });
  EXPECT_FALSE(PathExists(old));
  EXPECT_TRUE(PathExists(young));  // perhaps a helper between its bind and its listen
  EXPECT_TRUE(PathExists(forward->rendezvous()));
  RemoveTree(young);
}

TEST(RemoteSocket, ThousandsOfSequentialConnectionsLeakNothing) {
  TestSshd sshd;
  EchoServer echo(sshd.Path("host.sock"));
  std::string path = sshd.Path("remote.sock");
  SshConnection conn(sshd.endpoint());
  auto forward =
      RemoteSocketForward::Start(conn, path, {}, [&] { return std::vector{Unix(echo.path())}; });
  LoopThread loop(conn);
  auto connect = [&] { return ConnectUnix(path); };
  EXPECT_EQ(EchoRoundTrips(connect, 1, 10), "");
  size_t start = testing::OpenFdCount();
  for (int i = 0; i < 2000; ++i) {
    ASSERT_EQ(EchoRoundTrips(connect, 1, 100, static_cast<unsigned>(i)), "") << i;
  }
  bool back = false;
  for (int i = 0; i < 500 && !back; ++i) {
    back = testing::OpenFdCount() <= start;
    if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(back) << testing::OpenFdCount() << " > " << start;
}

}  // namespace
}  // namespace ss
