#include "session_share.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <asio/local/stream_protocol.hpp>
#include <asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <memory>

#include "digest.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "process.hpp"
#include "sandbox.hpp"
#include "ssh.hpp"
#include "strings.hpp"
#include "terminal.hpp"

namespace ss {
namespace {

constexpr char kMagic[4] = {'s', 's', 'S', '1'};
constexpr char kQuitMagic[4] = {'s', 's', 'Q', '1'};  // header only: the master ends
constexpr auto kIdle = std::chrono::minutes(10);

std::string SocketBase(const std::string& sandbox) {
  return Cat(RuntimeDir(), "/share-", sandbox, "-", Sha256Hex(SsHome()).substr(0, 8));
}

// Request: magic, u32 length, then u32-length-prefixed strings: argc, argv..., cwd, n, name,
// value, ... (exact bytes: argv may hold anything but NUL).
void PutU32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void PutString(std::string& out, const std::string& s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  uint32_t U32() {
    if (data_.size() < 4) throw Error(kExitDataErr, "shared session: short request");
    uint32_t v;
    std::memcpy(&v, data_.data(), 4);
    data_.remove_prefix(4);
    return v;
  }
  std::string String() {
    uint32_t n = U32();
    if (data_.size() < n) throw Error(kExitDataErr, "shared session: short request");
    std::string s(data_.substr(0, n));
    data_.remove_prefix(n);
    return s;
  }

 private:
  std::string_view data_;
};

std::string Encode(const SharedCommand& c) {
  std::string body;
  PutU32(body, static_cast<uint32_t>(c.argv.size()));
  for (const auto& a : c.argv) PutString(body, a);
  PutString(body, c.cwd);
  PutU32(body, static_cast<uint32_t>(c.secret_env.size()));
  for (const auto& [k, v] : c.secret_env) {
    PutString(body, k);
    PutString(body, v);
  }
  return body;
}

SharedCommand Decode(std::string_view body) {
  Reader r(body);
  SharedCommand c;
  uint32_t argc = r.U32();
  for (uint32_t i = 0; i < argc; ++i) c.argv.push_back(r.String());
  c.cwd = r.String();
  uint32_t n = r.U32();
  for (uint32_t i = 0; i < n; ++i) {
    std::string k = r.String();
    c.secret_env.emplace_back(k, r.String());
  }
  return c;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), platform::kSendFlags);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool ReadAll(int fd, char* buf, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, buf, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    buf += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Signals the client forwards while it waits, through a self-pipe.
int g_signal_pipe = -1;
void OnSignal(int sig) {
  unsigned char b = static_cast<unsigned char>(sig);
  (void)!::write(g_signal_pipe, &b, 1);
}

// One command being served: the client's socket and descriptors, the channel, the restored
// descriptor flags.
struct Served {
  asio::local::stream_protocol::socket socket;
  Fd fds[3];  // the client's stdin, stdout and stderr (declared before `flags`: closed after)
  std::vector<std::unique_ptr<FdFlagsGuard>> flags;
  SshChannel channel;
  bool done = false;
  char byte = 0;
  explicit Served(asio::io_context& io) : socket(io) {}
};

class Master {
 public:
  Master(SshConnection& conn, std::string path)
      : conn_(conn),
        path_(std::move(path)),
        acceptor_(conn.io_context()),
        idle_(conn.io_context()) {}

  void Start() {
    ::unlink(path_.c_str());
    asio::local::stream_protocol::endpoint ep(path_);
    acceptor_.open(ep.protocol());
    mode_t old = ::umask(0177);
    acceptor_.bind(ep);
    ::umask(old);
    acceptor_.listen();
    Accept();
    ArmIdle();
  }

  ~Master() { ::unlink(path_.c_str()); }

 private:
  void Accept() {
    auto served = std::make_shared<Served>(conn_.io_context());
    acceptor_.async_accept(served->socket, [this, served](const asio::error_code& ec) {
      if (!ec) Serve(served);
      Accept();
    });
  }

  void ArmIdle() {
    idle_.expires_after(kIdle);
    idle_.async_wait([this](const asio::error_code& ec) {
      if (!ec && active_ == 0) conn_.Stop();
    });
  }

  void Serve(std::shared_ptr<Served> s) {
    int fd = s->socket.native_handle();
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    // Header with the three descriptors, then the body.
    char header[8];
    iovec iov{header, sizeof header};
    alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(fd, &msg, MSG_WAITALL | MSG_CMSG_CLOEXEC);
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
        cm->cmsg_len == CMSG_LEN(3 * sizeof(int))) {
      int got[3];
      std::memcpy(got, CMSG_DATA(cm), sizeof got);
      for (int i = 0; i < 3; ++i) s->fds[i].Reset(got[i]);
    }
    if (n == sizeof header && std::memcmp(header, kQuitMagic, 4) == 0) {
      conn_.Stop();
      return;
    }
    uint32_t length = 0;
    std::memcpy(&length, header + 4, 4);
    if (n != sizeof header || std::memcmp(header, kMagic, 4) != 0 || !s->fds[0].ok() ||
        length > (64u << 20)) {
      return;  // not one of ours: dropped
    }
    std::string body(length, '\0');
    if (!ReadAll(fd, body.data(), length)) return;
    SharedCommand cmd;
    try {
      cmd = Decode(body);
    } catch (const Error&) {
      return;
    }
    StreamOptions so;
    so.cwd = cmd.cwd;
    so.secret_env = cmd.secret_env;
    so.in_fd = s->fds[0].get();
    so.out_fd = s->fds[1].get();
    so.err_fd = s->fds[2].get();
    for (const Fd& f : s->fds) s->flags.push_back(std::make_unique<FdFlagsGuard>(f.get()));
    ++active_;
    idle_.cancel();
    s->channel = conn_.ExecStreamAsync(cmd.argv, so, [this, s](int status, std::string error) {
      if (s->done) return;
      s->done = true;
      if (!error.empty()) status = 255;
      int32_t st = status;
      s->flags.clear();  // restore the caller's descriptors before it goes on
      SendAll(s->socket.native_handle(), std::string_view(reinterpret_cast<char*>(&st), 4));
      asio::error_code ignored;
      s->socket.close(ignored);
      if (--active_ == 0) ArmIdle();
    });
    ReadSignals(s);
  }

  // Signal numbers from the client; its end closing before the command did closes the channel.
  void ReadSignals(std::shared_ptr<Served> s) {
    s->socket.async_read_some(asio::buffer(&s->byte, 1),
                              [this, s](const asio::error_code& ec, size_t n) {
                                if (s->done) return;
                                if (ec || n == 0) {
                                  s->channel.Close();
                                  return;
                                }
                                s->channel.SendSignal(static_cast<unsigned char>(s->byte));
                                ReadSignals(s);
                              });
  }

  SshConnection& conn_;
  std::string path_;
  asio::local::stream_protocol::acceptor acceptor_;
  asio::steady_timer idle_;
  int active_ = 0;
};

// A connection to the sandbox's master; none when none listens.
Fd ConnectMaster(const std::string& sandbox) {
  std::string path = SocketBase(sandbox) + ".sock";
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return Fd();
  Fd fd(platform::Socket(AF_UNIX, SOCK_STREAM));
  if (!fd.ok()) return fd;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return Fd();
  return fd;
}

}  // namespace

void EndShareMaster(const std::string& sandbox) {
  Fd fd = ConnectMaster(sandbox);
  if (!fd.ok()) return;
  char header[8] = {};
  std::memcpy(header, kQuitMagic, 4);
  SendAll(fd.get(), std::string_view(header, sizeof header));
}

std::optional<int> RunShared(const std::string& sandbox, const SharedCommand& command) {
  Fd master = ConnectMaster(sandbox);
  if (!master.ok()) return std::nullopt;
  int fd = master.get();
  std::string body = Encode(command);
  char header[8];
  std::memcpy(header, kMagic, 4);
  uint32_t length = static_cast<uint32_t>(body.size());
  std::memcpy(header + 4, &length, 4);
  int fds[3] = {command.fds[0], command.fds[1], command.fds[2]};
  iovec iov{header, sizeof header};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(cm), fds, sizeof fds);
  if (::sendmsg(fd, &msg, platform::kSendFlags) != static_cast<ssize_t>(sizeof header) ||
      !SendAll(fd, body)) {
    return std::nullopt;  // a master on its way out: run the command the long way
  }
  Debug(Cat("shared session: ", Join(command.argv, " ")));

  int pipefd[2];
  if (int err = platform::Pipe(pipefd, /*nonblock=*/true); err != 0) {
    throw Error(kExitRemote, Cat("cannot create a pipe: ", std::strerror(err)));
  }
  Fd signal_r(pipefd[0]), signal_w(pipefd[1]);
  g_signal_pipe = pipefd[1];
  struct sigaction sa {
  }, old[3];
  sa.sa_handler = &OnSignal;
  sigemptyset(&sa.sa_mask);
  const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
  for (int i = 0; i < 3; ++i) ::sigaction(sigs[i], &sa, &old[i]);
  std::optional<int> status;
  bool lost = false;
  while (!status && !lost) {
    pollfd p[2] = {{fd, POLLIN, 0}, {pipefd[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) break;
    if (p[1].revents & POLLIN) {
      unsigned char sig;
      while (::read(pipefd[0], &sig, 1) == 1)
        SendAll(fd, std::string_view(reinterpret_cast<char*>(&sig), 1));
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      int32_t st;
      if (ReadAll(fd, reinterpret_cast<char*>(&st), 4)) {
        status = st;
      } else {
        lost = true;
      }
    }
  }
  for (int i = 0; i < 3; ++i) ::sigaction(sigs[i], &old[i], nullptr);
  g_signal_pipe = -1;
  if (!status) {
    throw Error(kExitRemote, Cat("connection to sandbox '", sandbox, "' lost")).AsPlain();
  }
  return status;
}

void StartShareMaster(const std::string& executable, const std::string& sandbox) {
  try {
    ProcessOptions o;
    o.new_session = true;
    o.capture_stdout = o.capture_stderr = true;  // to /dev/null
    o.unlisted = true;                           // ss-attach itself
    // It may idle for ten minutes: the session's secrets come with each command over the
    // socket, and it keeps none of the user's variables but those ss itself reads.
    o.only_env = DaemonEnvNames();
    pid_t pid = Spawn({executable, "--share-master", sandbox}, "", o);
    // Not waited for: it outlives us (init reaps it).
    (void)pid;
  } catch (const Error& e) {
    Debug(Cat("no shared connection: ", e.what()));
  }
}

int ServeShared(Sandbox& sandbox) {
  std::string base = SocketBase(sandbox.name());
  auto lock = FileLock::TryLock(base + ".lock");
  if (!lock) return 0;  // another master serves this sandbox
  auto conn = sandbox.TryConnect();
  if (!conn) return kExitUnavailable;
  Master master(*conn, base + ".sock");
  master.Start();
  try {
    conn->Run();
  } catch (const Error& e) {
    Debug(Cat("shared connection ended: ", e.what()));
  }
  return 0;
}

}  // namespace ss
