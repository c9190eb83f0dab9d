// A real OpenSSH sshd for tests, started by the test itself: `sshd -D -e -f CONFIG` as a child
// on a free loopback port with a throw-away host key (pinned in a known_hosts file of its own),
// a throw-away client key in its own AuthorizedKeysFile, no passwords, and the current user. It is
// stopped (by PID) when the object goes away.
//
// As root, sshd insists on its privilege separation directory /run/sshd. When that does not exist
// it runs in a private mount namespace with a tmpfs on /run, so nothing on the system changes.
// `SetEnv SHLVL=1` keeps bash from reading the user's ~/.bashrc for every command (bash does that
// when it thinks sshd started it at the top level).
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fs.hpp"
#include "platform.hpp"
#include "process.hpp"
#include "ssh.hpp"
#include "ssh_keys.hpp"
#include "strings.hpp"

namespace ss::testing {

// A loopback TCP port nobody listens on right now (bind 0, read it, close).
inline int FreePort() {
  int fd = platform::Socket(AF_INET, SOCK_STREAM);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

inline bool CanConnect(int port) {
  int fd = platform::Socket(AF_INET, SOCK_STREAM);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// A file under /proc, or nullopt when its process went away meanwhile.
inline std::optional<std::string> ReadProc(const std::string& path) {
  try {
    return ReadFileIfExists(path);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Every process's command line on this machine.
inline std::vector<std::string> AllCommandLines() {
  std::vector<std::string> out;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    if (std::atoi(e->d_name) <= 0) continue;
    if (auto cmdline = ReadProc(Cat("/proc/", e->d_name, "/cmdline"))) out.push_back(*cmdline);
  }
  if (d) ::closedir(d);
  return out;
}

// Every process below `root` (children, grandchildren...), read from /proc.
inline std::vector<pid_t> Descendants(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> all;  // pid, ppid
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    auto stat = ReadProc(Cat("/proc/", pid, "/stat"));
    if (!stat) continue;
    auto close_paren = stat->rfind(')');
    if (close_paren == std::string::npos) continue;
    pid_t ppid = 0;
    std::sscanf(stat->c_str() + close_paren + 1, " %*c %d", &ppid);
    all.emplace_back(pid, ppid);
  }
  if (d) ::closedir(d);
  std::vector<pid_t> out;
  std::set<pid_t> parents{root};
  bool grew = true;
  while (grew) {
    grew = false;
    for (auto [pid, ppid] : all) {
      if (parents.count(ppid) && !parents.count(pid)) {
        parents.insert(pid);
        out.push_back(pid);
        grew = true;
      }
    }
  }
  return out;
}

class TestSshd {
 public:
  // `first_lines` go ahead of the configuration (sshd keeps a keyword's first value: they win).
  explicit TestSshd(std::string first_lines = {})
      : dir_("/tmp", "ss-sshd."), first_lines_(std::move(first_lines)) {
    passwd* pw = ::getpwuid(::getuid());
    user_ = pw ? pw->pw_name : "root";
    KeyPair client = GenerateEd25519Key("ss-test-client");
    // A stock sshd has host keys of several types; only the ed25519 one is pinned, so the client
    // must ask for that type.
    RunChecked({"ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", Path("host_key_ecdsa")},
               "cannot make an ecdsa host key");
    WriteKeyPair(Path("id_ed25519"), client);
    AtomicWrite(Path("authorized_keys"), client.public_key + "\n", 0600);
    for (int attempt = 0; attempt < 10; ++attempt) {
      if (Start()) return;
    }
    ADD_FAILURE() << "sshd did not start:\n" << ReadFileIfExists(Path("sshd.log")).value_or("");
  }

  ~TestSshd() { Stop(); }

  SshEndpoint endpoint() const {
    SshEndpoint e;
    e.host = "127.0.0.1";
    e.port = port_;
    e.user = user_;
    e.identity_file = Path("id_ed25519");
    e.known_hosts_file = Path("known_hosts");
    return e;
  }
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& user() const { return user_; }
  const std::string& host_public_key() const { return host_key_.public_key; }
  std::string Log() const { return ReadFileIfExists(Path("sshd.log")).value_or(""); }

  // Ends every live connection at once, as a crashed sandbox would (SIGKILL to the
  // per-connection sshd processes, which are children of ours).
  void KillConnections() {
    for (pid_t pid : Descendants(pid_)) ::kill(pid, SIGKILL);
  }
  // Freezes (or thaws) the per-connection processes: a sandbox that stopped answering.
  void FreezeConnections(bool freeze) {
    for (pid_t pid : Descendants(pid_)) ::kill(pid, freeze ? SIGSTOP : SIGCONT);
  }

 private:
  bool Start() {
    port_ = FreePort();
    host_key_ = CreateSandboxHostKey(Path("host_key"), Path("known_hosts"), "127.0.0.1", port_);
    AtomicWrite(Path("sshd_config"), Cat(first_lines_,
                                         "ListenAddress 127.0.0.1\n"
                                         "Port ",
                                         port_,
                                         "\n"
                                         "HostKey ",
                                         Path("host_key_ecdsa"),
                                         "\n"
                                         "HostKey ",
                                         Path("host_key"),
                                         "\n"
                                         "PidFile none\n"
                                         "AuthorizedKeysFile ",
                                         Path("authorized_keys"),
                                         "\n"
                                         "PubkeyAuthentication yes\n"
                                         "PasswordAuthentication no\n"
                                         "KbdInteractiveAuthentication no\n"
                                         "PermitRootLogin prohibit-password\n"
                                         "StrictModes no\n"
                                         "UsePAM no\n"
                                         "AllowTcpForwarding yes\n"
                                         "AllowStreamLocalForwarding yes\n"
                                         "AcceptEnv SS_TEST_ACCEPTED\n"
                                         "SetEnv SHLVL=1\n"
                                         "LogLevel INFO\n"));
    std::vector<std::string> argv;
    if (::getuid() == 0 && !IsDirectory("/run/sshd")) {
      argv = {"unshare",
              "--mount",
              "--propagation",
              "private",
              "--",
              "/bin/sh",
              "-c",
              "mount -t tmpfs -o mode=0755 ss-test-run /run && mkdir -m 0755 /run/sshd && "
              "exec /usr/sbin/sshd -D -e -f \"$0\"",
              Path("sshd_config")};
    } else {
      argv = {"/usr/sbin/sshd", "-D", "-e", "-f", Path("sshd_config")};
    }
    pid_ = Spawn(argv, Path("sshd.log"));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;  // port taken meanwhile, or a broken config: the log says
      }
      if (CanConnect(port_)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Stop();
    return false;
  }

  void Stop() {
    if (pid_ <= 0) return;
    for (pid_t pid : Descendants(pid_)) {
      ::kill(pid, SIGCONT);
      ::kill(pid, SIGTERM);
    }
    ::kill(pid_, SIGTERM);
    WaitPid(pid_);
    pid_ = -1;
  }

  TempDir dir_;
  std::string first_lines_;
  std::string user_;
  KeyPair host_key_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace ss::testing
