// SshConnection against a real sshd: trust, authentication, one-shot and streamed commands,
// secrets, lost connections.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include "digest.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "listener.hpp"
#include "net.hpp"
#include "platform.hpp"
#include "ssh.hpp"
#include "ssh_keys.hpp"
#include "sshd_fixture.hpp"
#include "strings.hpp"

namespace ss {
namespace {

using testing::TestSshd;

SshOptions Named() {
  SshOptions o;
  o.name = "test";
  return o;
}

int ErrorCode(const std::function<void()>& fn, std::string* message = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return 0;
}

std::string RandomBytes(std::mt19937& rng, size_t n) {
  std::string s(n, '\0');
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& c : s) c = static_cast<char>(byte(rng));
  return s;
}

// Words that shells like to change: quotes, $, backticks, backslashes, globs, newlines, tabs,
// unicode, invalid UTF-8, empty strings and leading dashes.
std::string RandomWord(std::mt19937& rng) {
  static const std::vector<std::string> pieces = {
      "'",  "\"", " ",    "$",    "$HOME", "`id`", "\\",   "*",   "?",  "[a]", "{a,b}",
      "~",  "!",  "#",    "&",    ";",     "|",    "<",    ">",   "(",  ")",   "\n",
      "\t", "é",  "日本", "🙂", "\xff",  "\xc3", "\x80", "-",   "--", "-n",  "-e",
      "a",  "Z9", "%s",   "\\0",  "\r",    "\x01", "=",    "\x7f"};
  std::uniform_int_distribution<int> len(0, 6), pick(0, static_cast<int>(pieces.size()) - 1);
  std::string w;
  for (int i = len(rng); i > 0; --i) w += pieces[static_cast<size_t>(pick(rng))];
  return w;
}

std::string ArgvDump(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += a + std::string(1, '\0');
  return out;
}

TEST(SshTrust, PinnedKeyConnects) {
  TestSshd sshd;
  std::string before = ReadFile(sshd.endpoint().known_hosts_file);
  SshConnection conn(sshd.endpoint(), Named());
  EXPECT_EQ(conn.Exec({"true"}).status, 0);
  EXPECT_EQ(conn.Subject(), "sandbox 'test'");
  EXPECT_EQ(ReadFile(sshd.endpoint().known_hosts_file), before);
}

TEST(SshTrust, ChangedKeyIsRefusedAndNothingIsWritten) {
  TestSshd sshd;
  SshEndpoint ep = sshd.endpoint();
  PinHostKey(ep.known_hosts_file, "127.0.0.1", sshd.port(), GenerateEd25519Key("x").public_key);
  std::string before = ReadFile(ep.known_hosts_file);
  std::string message;
  EXPECT_EQ(ErrorCode([&] { SshConnection conn(ep, Named()); }, &message), kExitNoPerm);
  EXPECT_EQ(message, "the host key of sandbox 'test' has changed: not connecting");
  EXPECT_EQ(ReadFile(ep.known_hosts_file), before);
}

TEST(SshTrust, UnknownKeyIsRefusedAndNothingIsWritten) {
  TestSshd sshd;
  SshEndpoint ep = sshd.endpoint();
  // Pinned for another port only.
  UnpinHostKey(ep.known_hosts_file, "127.0.0.1", sshd.port());
  PinHostKey(ep.known_hosts_file, "127.0.0.1", sshd.port() + 1, sshd.host_public_key());
  std::string before = ReadFile(ep.known_hosts_file);
  std::string message;
  EXPECT_EQ(ErrorCode([&] { SshConnection conn(ep, Named()); }, &message), kExitNoPerm);
  EXPECT_EQ(message, "the host key of sandbox 'test' is not pinned: not connecting");
  EXPECT_EQ(ReadFile(ep.known_hosts_file), before);
  // No known_hosts file at all: refused, and none is created.
  ep.known_hosts_file = sshd.Path("missing_known_hosts");
  EXPECT_EQ(ErrorCode([&] { SshConnection conn(ep); }, &message), kExitNoPerm);
  EXPECT_FALSE(PathExists(ep.known_hosts_file));
}

TEST(SshTrust, OtherKeysAndPasswordsAreNotTried) {
  TestSshd sshd;
  SshEndpoint ep = sshd.endpoint();
  WriteKeyPair(sshd.Path("other_key"), GenerateEd25519Key("other"));
  ep.identity_file = sshd.Path("other_key");
  std::string message;
  EXPECT_EQ(ErrorCode([&] { SshConnection conn(ep, Named()); }, &message), kExitNoPerm);
  EXPECT_EQ(message, Cat("sandbox 'test' refused the key '", ep.identity_file, "' for user '",
                         sshd.user(), "'"));
}

TEST(SshTrust, NothingListeningIsUnavailable) {
  TestSshd sshd;
  SshEndpoint ep = sshd.endpoint();
  ep.port = testing::FreePort();
  std::string message;
  EXPECT_EQ(ErrorCode([&] { SshConnection conn(ep, Named()); }, &message), kExitUnavailable);
  EXPECT_EQ(message, Cat("cannot connect to sandbox 'test' at 127.0.0.1:", ep.port));
}

// A relay in front of sshd that holds the connection for `delay` before it passes anything on,
// as a guest too busy to greet at once (an emulated machine on a loaded host) does.
class SlowRelay {
 public:
  SlowRelay(int to_port, std::chrono::milliseconds delay) : listener_(8) {
    thread_ = std::thread([this, to_port, delay] { Serve(to_port, delay); });
  }
  ~SlowRelay() {
    stop_ = true;
    thread_.join();
  }
  int port() const { return listener_.port; }

 private:
  void Serve(int to_port, std::chrono::milliseconds delay) {
    Fd in, out;
    while (!stop_) {
      if (!in.ok()) {
        pollfd p{listener_.fd.get(), POLLIN, 0};
        if (::poll(&p, 1, 20) != 1) continue;
        in.Reset(::accept(listener_.fd.get(), nullptr, nullptr));
        std::this_thread::sleep_for(delay);
        out = TcpConnect("127.0.0.1", to_port, std::chrono::seconds(5));
        if (!out.ok()) return;
        ::fcntl(out.get(), F_SETFL, ::fcntl(out.get(), F_GETFL) & ~O_NONBLOCK);
        continue;
      }
      pollfd p[2] = {{in.get(), POLLIN, 0}, {out.get(), POLLIN, 0}};
      if (::poll(p, 2, 20) <= 0) continue;
      for (int k = 0; k < 2; ++k) {
        if (p[k].revents == 0) continue;
        char buf[16384];
        ssize_t n = ::read(p[k].fd, buf, sizeof buf);
        if (n <= 0 || ::send(p[1 - k].fd, buf, static_cast<size_t>(n), platform::kSendFlags) != n) {
          in.Close();
          out.Close();
          break;
        }
      }
    }
  }
  testing::Listener listener_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(SshTrust, SlowGreetingWaitsPastTheTcpTimeout) {
  TestSshd sshd;
  SlowRelay relay(sshd.endpoint().port, std::chrono::milliseconds(1500));
  SshEndpoint ep = sshd.endpoint();
  ep.port = relay.port();
  PinHostKey(ep.known_hosts_file, ep.host, ep.port, sshd.host_public_key());
  // One timeout for the TCP connection and every step: a slow greeting reads as "not there".
  SshOptions whole = Named();
  whole.connect_timeout = std::chrono::milliseconds(1000);
  EXPECT_EQ(ErrorCode([&] { SshConnection conn(ep, whole); }), kExitUnavailable);
  // The TCP connection within a second, the steps within the usual ten: it waits and connects.
  SshOptions split = Named();
  split.tcp_timeout = std::chrono::milliseconds(1000);
  SshConnection conn(ep, split);
  EXPECT_EQ(conn.Exec({"echo", "slow"}).out, "slow\n");
}

TEST(SshTrust, AnUnansweredConnectionEndsAtTheTcpTimeout) {
  TestSshd sshd;
  // A listener whose queue is full and never accepts: the kernel drops further SYNs, as a
  // machine that is gone from the network does, and connect() would wait for minutes.
  testing::Listener full(0);
  sockaddr_in a = full.Address();
  std::vector<Fd> queued;
  for (int k = 0; k < 4; ++k) {
    queued.emplace_back(platform::Socket(AF_INET, SOCK_STREAM, /*nonblock=*/true));
    ::connect(queued.back().get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  SshEndpoint ep = sshd.endpoint();
  ep.port = full.port;
  SshOptions o = Named();
  o.tcp_timeout = std::chrono::milliseconds(500);
  std::string message;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ErrorCode([&] { SshConnection conn(ep, o); }, &message), kExitUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(message, Cat("cannot connect to sandbox 'test' at 127.0.0.1:", ep.port));
}

TEST(SshExec, ArgvArrivesByteForByte) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> count(1, 8);
  for (int i = 0; i < 1000; ++i) {
    std::vector<std::string> args;
    for (int n = count(rng); n > 0; --n) args.push_back(RandomWord(rng));
    std::vector<std::string> argv = {"/usr/bin/printf", "%s\\0"};
    argv.insert(argv.end(), args.begin(), args.end());
    ExecResult r = conn.Exec(argv);
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_EQ(r.out, ArgvDump(args)) << "list " << i;
  }
}

TEST(SshExec, ExitStatusesRoundTrip) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  for (int status = 0; status <= 255; ++status) {
    ExecResult r = conn.Exec({"sh", "-c", "exit \"$1\"", "sh", std::to_string(status)});
    ASSERT_EQ(r.status, status);
    ASSERT_EQ(r.exit_signal, "");
  }
  ExecResult killed = conn.Exec({"sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(killed.status, 128 + SIGTERM);
  EXPECT_EQ(killed.exit_signal, "TERM");
}

TEST(SshExec, StdoutStderrAndStdinStaySeparateWithLargeData) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  ExecResult small = conn.Exec({"sh", "-c", "printf out; printf err >&2; exit 3"});
  EXPECT_EQ(small.out, "out");
  EXPECT_EQ(small.err, "err");
  EXPECT_EQ(small.status, 3);

  std::mt19937 rng(1);
  ExecOptions o;
  o.input = RandomBytes(rng, 16 << 20);
  ExecResult up = conn.Exec({"sh", "-c", "cat; printf done >&2"}, o);
  EXPECT_EQ(up.status, 0);
  EXPECT_TRUE(up.out == *o.input) << up.out.size();
  EXPECT_EQ(up.err, "done");
  // stderr is for messages: its first MiB is kept, in order, the rest read and dropped.
  ExecResult to_err = conn.Exec({"sh", "-c", "cat >&2"}, o);
  EXPECT_TRUE(to_err.err == o.input->substr(0, 1 << 20)) << to_err.err.size();
  EXPECT_EQ(to_err.out, "");
  ExecResult none = conn.Exec({"cat"});
  EXPECT_EQ(none.out, "");  // stdin is empty without input
}

TEST(SshExec, WorkingDirectoryAndAcceptedEnvironment) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  ExecOptions o;
  o.cwd = "/tmp";
  EXPECT_EQ(conn.Exec({"pwd"}, o).out, "/tmp\n");
  o.cwd = "~";
  EXPECT_EQ(conn.Exec({"sh", "-c", "[ \"$PWD\" = \"$HOME\" ] && echo home"}, o).out, "home\n");
  o.cwd.clear();
  o.env = {{"SS_TEST_ACCEPTED", "a b 'c'"}};
  EXPECT_EQ(conn.Exec({"printenv", "SS_TEST_ACCEPTED"}, o).out, "a b 'c'\n");
  o.env = {{"SS_TEST_REFUSED", "x"}};
  std::string message;
  EXPECT_EQ(ErrorCode([&] { conn.Exec({"true"}, o); }, &message), kExitRemote);
  EXPECT_EQ(message, "cannot run 'true' in sandbox 'test'");
  // The connection is still good.
  EXPECT_EQ(conn.Exec({"echo", "ok"}).out, "ok\n");
}

TEST(SshSecrets, ValuesArriveExactly) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  std::mt19937 rng(99);
  for (int i = 0; i < 50; ++i) {
    std::string value;
    for (char c : RandomBytes(rng, 1 + i * 7)) value += c == '\0' ? '\n' : c;
    ExecOptions o;
    o.secret_env = {{"SS_SECRET", value}, {"SS_OTHER", "two"}};
    o.input = "and the input\n";
    ExecResult r = conn.Exec({"sh", "-c", "printf '%s|%s|' \"$SS_SECRET\" \"$SS_OTHER\"; cat"}, o);
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_EQ(r.out, value + "|two|and the input\n");
  }
}

bool SomeEnvironHas(const std::string& entry) {
  bool found = false;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    if (std::atoi(e->d_name) <= 0) continue;
    auto env = testing::ReadProc(Cat("/proc/", e->d_name, "/environ"));
    if (env && env->find(entry + '\0') != std::string::npos) found = true;
  }
  if (d) ::closedir(d);
  return found;
}

TEST(SshSecrets, NeverInAnyCommandLine) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  std::string secret = Cat("sk-", RandomNonce(), "-'$`x`\"");
  ExecOptions o;
  o.secret_env = {{"SS_SECRET", secret}};
  std::optional<ExecResult> result;
  std::thread session([&] { result = conn.Exec({"sleep", "1.5"}, o); });
  bool seen_in_environ = false;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1200);
  int scans = 0;
  std::vector<std::string> leaks;
  while (std::chrono::steady_clock::now() < until) {
    for (const auto& cmdline : testing::AllCommandLines()) {
      if (cmdline.find(secret.substr(3, 16)) != std::string::npos) leaks.push_back(cmdline);
    }
    seen_in_environ = seen_in_environ || SomeEnvironHas("SS_SECRET=" + secret);
    ++scans;
  }
  session.join();
  EXPECT_EQ(leaks, std::vector<std::string>{});
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->status, 0);
  EXPECT_TRUE(seen_in_environ) << "the remote command did not get the secret";
  EXPECT_GT(scans, 3);
  EXPECT_EQ(sshd.Log().find(secret.substr(3, 16)), std::string::npos);
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(SshStream, FilesInAndOut) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  std::mt19937 rng(5);
  std::string data = RandomBytes(rng, 16 << 20);
  TempDir dir;
  AtomicWrite(dir.path() + "/in", data);
  int in = ::open((dir.path() + "/in").c_str(), O_RDONLY | O_CLOEXEC);
  int out = ::open((dir.path() + "/out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  int err = ::open((dir.path() + "/err").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  StreamOptions o;
  o.in_fd = in;
  o.out_fd = out;
  o.err_fd = err;
  EXPECT_EQ(conn.ExecStream({"sh", "-c", "cat; printf 'to stderr' >&2; exit 5"}, o), 5);
  ::close(in);
  ::close(out);
  ::close(err);
  EXPECT_TRUE(ReadFile(dir.path() + "/out") == data);
  EXPECT_EQ(ReadFile(dir.path() + "/err"), "to stderr");
}

// A command that never stops writing (a sandbox's replaced tar, `cat /dev/zero`) is cut at
// max_output: the host keeps at most that much, and is told.
TEST(SshStream, OutputPastItsLimitIsCutAndSaidSo) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  TempDir dir;
  int out = ::open((dir.path() + "/out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  StreamOptions o;
  o.in_fd = -1;
  o.out_fd = out;
  o.max_output = 1 << 20;
  o.out_over_limit = std::make_shared<bool>(false);
  conn.ExecStream({"cat", "/dev/zero"}, o);
  ::close(out);
  EXPECT_TRUE(*o.out_over_limit);
  EXPECT_LE(ReadFile(dir.path() + "/out").size(), size_t{1} << 20);
  // Under the limit nothing is said, and the connection still works.
  int small = ::open((dir.path() + "/small").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  o.out_fd = small;
  *o.out_over_limit = false;
  EXPECT_EQ(conn.ExecStream({"printf", "hello"}, o), 0);
  ::close(small);
  EXPECT_FALSE(*o.out_over_limit);
  EXPECT_EQ(ReadFile(dir.path() + "/small"), "hello");
  ExecOptions e;
  e.max_output = 1000;
  ExecResult r = conn.Exec({"head", "-c", "5000", "/dev/zero"}, e);
  EXPECT_TRUE(r.over_limit);
  EXPECT_LE(r.out.size(), 1000u);
  EXPECT_FALSE(conn.Exec({"true"}, e).over_limit);
  // stderr, read for messages only: the first MiB is kept, the rest dropped, and the command
  // runs to its end.
  ExecResult noisy = conn.Exec({"sh", "-c", "head -c 8000000 /dev/zero >&2; echo done"});
  EXPECT_EQ(noisy.status, 0);
  EXPECT_EQ(noisy.out, "done\n");
  EXPECT_EQ(noisy.err.size(), size_t{1} << 20);
  int err = ::open((dir.path() + "/err").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  StreamOptions s;
  s.in_fd = -1;
  s.out_fd = -1;
  s.err_fd = err;
  s.max_err = 4096;
  EXPECT_EQ(conn.ExecStream({"sh", "-c", "head -c 3000000 /dev/zero >&2"}, s), 0);
  ::close(err);
  EXPECT_EQ(ReadFile(dir.path() + "/err").size(), 4096u);
}

TEST(SshStream, PipesBothWaysWithBackpressure) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  std::mt19937 rng(6);
  std::string data = RandomBytes(rng, 16 << 20);
  int in[2], out[2], err[2];
  ASSERT_EQ(platform::Pipe(in), 0);
  ASSERT_EQ(platform::Pipe(out), 0);
  ASSERT_EQ(platform::Pipe(err), 0);
  std::thread writer([&] {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::write(in[1], data.data() + off, std::min<size_t>(1 << 16, data.size() - off));
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::close(in[1]);
  });
  std::string got, got_err;
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a slow reader at first
    got = ReadAll(out[0]);
  });
  std::thread err_reader([&] { got_err = ReadAll(err[0]); });
  StreamOptions o;
  o.in_fd = in[0];
  o.out_fd = out[1];
  o.err_fd = err[1];
  int status = conn.ExecStream({"sh", "-c", "cat; echo bye >&2"}, o);
  ::close(out[1]);
  ::close(err[1]);
  writer.join();
  reader.join();
  err_reader.join();
  ::close(in[0]);
  ::close(out[0]);
  ::close(err[0]);
  EXPECT_EQ(status, 0);
  EXPECT_TRUE(got == data) << got.size();
  EXPECT_EQ(got_err, "bye\n");
}

TEST(SshStream, ClosedStdoutAndSignals) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  int out[2];
  ASSERT_EQ(platform::Pipe(out), 0);
  int flags = ::fcntl(out[1], F_GETFL);
  ::close(out[0]);
  StreamOptions o;
  o.in_fd = -1;
  o.out_fd = out[1];
  EXPECT_EQ(conn.ExecStream({"yes"}, o), 128 + SIGPIPE);
  EXPECT_EQ(::fcntl(out[1], F_GETFL), flags);  // O_NONBLOCK taken back
  ::close(out[1]);

  // SIGINT goes to the remote command with a "signal" request. OpenSSH honours it only for
  // users other than root (root sessions have no privilege separation, and sshd logs that it
  // refuses); a second SIGINT ends the session from our side either way.
  int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  o.out_fd = null;
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::kill(::getpid(), SIGINT);
    if (::getuid() != 0) return;
    for (int i = 0; i < 200 && sshd.Log().find("session_signal_req") == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(::getpid(), SIGINT);
  });
  auto start = std::chrono::steady_clock::now();
  int status = 0;
  int code = ErrorCode([&] { status = conn.ExecStream({"sleep", "30"}, o); });
  interrupter.join();
  if (::getuid() == 0) {
    EXPECT_NE(sshd.Log().find("session_signal_req"), std::string::npos);
    EXPECT_EQ(code, 128 + SIGINT);
  } else {
    EXPECT_EQ(code, 0);
    EXPECT_EQ(status, 128 + SIGINT);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ::close(null);
  EXPECT_EQ(conn.Exec({"echo", "still", "usable"}).out, "still usable\n");
}

TEST(SshLost, KilledServerEndsTheCommandWith255) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  EXPECT_EQ(conn.Exec({"true"}).status, 0);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    sshd.KillConnections();
  });
  std::string message;
  EXPECT_EQ(ErrorCode([&] { conn.Exec({"sleep", "30"}); }, &message), kExitRemote);
  killer.join();
  EXPECT_EQ(message, "connection to sandbox 'test' lost");
  EXPECT_EQ(ErrorCode([&] { conn.Exec({"true"}); }, &message), kExitRemote);
  EXPECT_EQ(message, "connection to sandbox 'test' lost");
}

TEST(SshLost, FrozenServerIsNoticedByKeepalives) {
  TestSshd sshd;
  SshOptions options = Named();
  options.keepalive_interval = std::chrono::seconds(1);
  options.keepalive_count_max = 2;
  SshConnection conn(sshd.endpoint(), options);
  std::thread freezer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    sshd.FreezeConnections(true);
  });
  auto start = std::chrono::steady_clock::now();
  std::string message;
  EXPECT_EQ(ErrorCode([&] { conn.Exec({"sleep", "60"}); }, &message), kExitRemote);
  freezer.join();
  EXPECT_EQ(message, "connection to sandbox 'test' lost");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));
  sshd.FreezeConnections(false);
}

}  // namespace
}  // namespace ss

namespace ss {
namespace {

// A remote command spliced to a host socket, as a tunnel helper in the sandbox would be.
TEST(SshStreamAsync, CommandSplicedToASocketUntilClosed) {
  TestSshd sshd;
  SshConnection conn(sshd.endpoint(), Named());
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  for (int fd : pair) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  StreamOptions o;
  o.in_fd = pair[1];
  o.out_fd = pair[1];
  o.err_fd = -1;
  std::optional<int> status;
  std::string error;
  SshChannel cat = conn.ExecStreamAsync({"cat"}, o, [&](int s, std::string e) {
    status = s;
    error = std::move(e);
  });
  ::close(pair[1]);  // the channel has its own duplicate
  std::string reply;
  std::thread peer([&] {
    std::string msg(300000, 'm');
    ::write(pair[0], msg.data(), msg.size());
    char buf[65536];
    while (reply.size() < msg.size()) {
      ssize_t n = ::read(pair[0], buf, sizeof buf);
      if (n <= 0) break;
      reply.append(buf, static_cast<size_t>(n));
    }
    ::shutdown(pair[0], SHUT_WR);  // end of the command's input: cat ends
  });
  EXPECT_TRUE(cat.running());
  while (!status) conn.Exec({"true"});  // Exec runs the loop, which serves `cat` meanwhile
  peer.join();
  ::close(pair[0]);
  EXPECT_EQ(*status, 0);
  EXPECT_EQ(error, "");
  EXPECT_EQ(reply.size(), 300000u);
  EXPECT_FALSE(cat.running());

  // A helper that lives exactly as long as the host holds its stdin open (the watchdog of a
  // tunnel's listener in the sandbox): closing the pipe ends the helper and what it started.
  auto helper_alive = [] {
    for (const auto& cmdline : testing::AllCommandLines()) {
      if (cmdline == std::string("sleep") + '\0' + "31.5" + '\0') return true;
    }
    return false;
  };
  int pipe_fds[2];
  ASSERT_EQ(platform::Pipe(pipe_fds), 0);
  std::optional<int> watchdog_status;
  StreamOptions watch;
  watch.in_fd = pipe_fds[0];
  watch.out_fd = -1;
  watch.err_fd = -1;
  SshChannel watchdog =
      conn.ExecStreamAsync({"sh", "-c", "sleep 31.5 & p=$!; cat >/dev/null; kill $p"}, watch,
                           [&](int s, std::string) { watchdog_status = s; });
  ::close(pipe_fds[0]);
  for (int i = 0; i < 100 && !helper_alive(); ++i) conn.Exec({"true"});
  EXPECT_TRUE(helper_alive());
  EXPECT_TRUE(watchdog.running());
  ::close(pipe_fds[1]);
  auto start = std::chrono::steady_clock::now();
  while (!watchdog_status) conn.Exec({"true"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(*watchdog_status, 0);
  EXPECT_FALSE(watchdog.running());
  for (int i = 0; i < 100 && helper_alive(); ++i) conn.Exec({"true"});
  EXPECT_FALSE(helper_alive());
}

}  // namespace
}  // namespace ss
