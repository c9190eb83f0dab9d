#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "host_commands.hpp"
#include "output.hpp"
#include "platform.hpp"
#include "shell_quote.hpp"
#include "strings.hpp"

extern char** environ;

namespace ss {
namespace {

void MakePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (int err = platform::Pipe(fds); err != 0) {
    throw Error(kExitSoftware, Cat("cannot create a pipe: ", std::strerror(err)));
  }
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
}

}  // namespace

std::vector<std::string> DaemonEnvNames() {
  return {"PATH",
          "HOME",
          "USER",
          "LOGNAME",
          "LANG",
          "LC_ALL",
          "LC_CTYPE",
          "TZ",
          "TMPDIR",
          "TERM",
          "NO_COLOR",
          "SS_HOME",
          "SS_CACHE",
          "SS_DEBUG",
          "SS_TRACE",
          "SS_EXEC_PATH",
          "SS_LUME_URL",
          "SUDO_USER",
          "SUDO_UID",
          "SUDO_GID",
          "XDG_RUNTIME_DIR",
          "XDG_CACHE_HOME",
          "LXD_DIR",
          "LXD_CONF",
          "DOCKER_HOST",
          "CONTAINER_HOST",
          "SSL_CERT_FILE",
          "SSL_CERT_DIR",
          "SS_NET_UPSTREAM_DNS",
          "SS_BROWSER_SOCKET_DIR"};
}

namespace {

std::vector<std::string> BuildEnv(const ProcessOptions& options) {
  std::map<std::string, std::string> vars;
  std::vector<std::string> order;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string key(kv.substr(0, eq));
    if (options.only_env && std::find(options.only_env->begin(), options.only_env->end(), key) ==
                                options.only_env->end()) {
      continue;
    }
    if (!vars.count(key)) order.push_back(key);
    vars[key] = std::string(kv.substr(eq + 1));
  }
  for (const auto& key : options.unset_env) vars.erase(key);
  for (const auto& [key, value] : options.env) {
    if (!vars.count(key)) order.push_back(key);
    vars[key] = value;
  }
  std::vector<std::string> out;
  for (const auto& key : order) {
    auto it = vars.find(key);
    if (it != vars.end()) out.push_back(Cat(key, "=", it->second));
  }
  return out;
}

int DecodeStatus(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 255;
}

struct SpawnFds {
  int in = -1;   // -1: /dev/null
  int out = -1;  // -1: inherit
  int err = -1;
};

pid_t SpawnWith(const std::vector<std::string>& argv, const ProcessOptions& options,
                const SpawnFds& fds) {
  if (argv.empty()) throw Error(kExitSoftware, "internal: empty argv");
  if (!options.unlisted) RequireListed(argv[0]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (fds.in >= 0) {
    posix_spawn_file_actions_adddup2(&actions, fds.in, STDIN_FILENO);
  } else if (!options.inherit_stdin) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  if (fds.out >= 0) posix_spawn_file_actions_adddup2(&actions, fds.out, STDOUT_FILENO);
  if (fds.err >= 0) posix_spawn_file_actions_adddup2(&actions, fds.err, STDERR_FILENO);
  // Passed descriptors go through high duplicates first, so that one landing on another's
  // number (or on its own) is never lost and never keeps close-on-exec.
  std::vector<Fd> passed;
  for (const auto& [from, to] : options.pass_fds) {
    int high = ::fcntl(from, F_DUPFD_CLOEXEC, 100);
    if (high < 0) {
      throw Error(kExitSoftware, Cat("cannot pass descriptor ", from, ": ", std::strerror(errno)));
    }
    passed.emplace_back(high);
    posix_spawn_file_actions_adddup2(&actions, high, to);
  }
  // Nothing else is inherited: a descriptor the caller got without close-on-exec (a test
  // runner's output pipe, say) would otherwise live on in a background child and keep whoever
  // waits for that pipe's end waiting.
  int first_closed = STDERR_FILENO + 1;
  for (const auto& [from, to] : options.pass_fds) first_closed = std::max(first_closed, to + 1);
  for (int fd = STDERR_FILENO + 1; fd < first_closed; ++fd) {
    bool target = false;
    for (const auto& [from, to] : options.pass_fds) target = target || to == fd;
    if (!target && ::fcntl(fd, F_GETFD) >= 0) posix_spawn_file_actions_addclose(&actions, fd);
  }
  posix_spawn_file_actions_addclosefrom_np(&actions, first_closed);
  if (!options.cwd.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
  if (options.new_session) flags |= POSIX_SPAWN_SETSID;
  posix_spawnattr_setflags(&attr, flags);

  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env = BuildEnv(options);
  std::vector<char*> cenv;
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  Debug(Cat("run: ", ShellJoin(argv)));
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw Error(kExitUnavailable, Cat("cannot run '", argv[0], "': ", std::strerror(rc)));
  }
  return pid;
}

}  // namespace

int WaitPid(pid_t pid) {
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return 255;
  }
  return DecodeStatus(wstatus);
}

bool IsSandboxDaemon(pid_t pid, const std::vector<std::string>& argv_prefix,
                     const std::string& sandbox) {
  if (pid <= 0 || !ProcessAlive(pid) || argv_prefix.empty()) return false;
  std::vector<std::string> argv = platform::ProcessArgs(pid);
  if (argv.size() < argv_prefix.size() || Basename(argv[0]) != argv_prefix[0] ||
      !std::equal(argv_prefix.begin() + 1, argv_prefix.end(), argv.begin() + 1)) {
    return false;
  }
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--sandbox" && argv[i + 1] == sandbox) return true;
  }
  return false;
}

bool ProcessAlive(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  auto p = platform::Process(pid);
  return !p || !p->ended;
}

bool WaitProcessGone(pid_t pid, std::chrono::milliseconds wait) {
  for (auto end = std::chrono::steady_clock::now() + wait;
       ProcessAlive(pid) && std::chrono::steady_clock::now() < end;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return !ProcessAlive(pid);
}

ProcessResult Run(const std::vector<std::string>& argv, const ProcessOptions& options) {
  Fd in_r, in_w, out_r, out_w, err_r, err_w;
  SpawnFds fds;
  if (options.input) {
    MakePipe(in_r, in_w);
    fds.in = in_r.get();
  }
  if (options.capture_stdout) {
    MakePipe(out_r, out_w);
    fds.out = out_w.get();
  }
  if (options.capture_stderr) {
    MakePipe(err_r, err_w);
    fds.err = err_w.get();
  }
  pid_t pid = SpawnWith(argv, options, fds);
  in_r.Close();
  out_w.Close();
  err_w.Close();

  ProcessResult result;
  std::string_view pending = options.input ? std::string_view(*options.input) : "";
  if (options.input && pending.empty()) in_w.Close();
  if (in_w.get() >= 0) ::fcntl(in_w.get(), F_SETFL, O_NONBLOCK);

  using Clock = std::chrono::steady_clock;
  auto deadline = options.timeout ? std::optional(Clock::now() + *options.timeout) : std::nullopt;
  bool term_sent = false;
  Clock::time_point kill_at;
  char buf[65536];
  while (out_r.get() >= 0 || err_r.get() >= 0 || in_w.get() >= 0) {
    pollfd pfds[3];
    int n = 0;
    if (out_r.get() >= 0) pfds[n++] = {out_r.get(), POLLIN, 0};
    if (err_r.get() >= 0) pfds[n++] = {err_r.get(), POLLIN, 0};
    if (in_w.get() >= 0) pfds[n++] = {in_w.get(), POLLOUT, 0};
    int wait_ms = -1;
    if (deadline) {
      auto next = term_sent ? kill_at : *deadline;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
      wait_ms = static_cast<int>(std::max<long>(0, left.count()));
    }
    int rc = ::poll(pfds, n, wait_ms);
    if (rc < 0 && errno != EINTR) break;
    if (deadline && Clock::now() >= (term_sent ? kill_at : *deadline)) {
      result.timed_out = true;
      ::kill(pid, term_sent ? SIGKILL : SIGTERM);
      if (!term_sent) {
        term_sent = true;
        kill_at = Clock::now() + std::chrono::seconds(2);
      } else {
        deadline.reset();
      }
    }
    if (rc <= 0) continue;
    for (int i = 0; i < n; ++i) {
      if (pfds[i].revents == 0) continue;
      if (pfds[i].fd == in_w.get()) {
        ssize_t w = ::write(in_w.get(), pending.data(), pending.size());
        if (w > 0) pending.remove_prefix(static_cast<size_t>(w));
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || pending.empty()) in_w.Close();
        continue;
      }
      ssize_t r = ::read(pfds[i].fd, buf, sizeof buf);
      if (r > 0) {
        (pfds[i].fd == out_r.get() ? result.out : result.err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        (pfds[i].fd == out_r.get() ? out_r : err_r).Close();
      }
    }
  }
  if (deadline && !term_sent) {
    // Output closed; still honour the deadline while waiting for the exit.
    while (true) {
      int wstatus = 0;
      pid_t r = ::waitpid(pid, &wstatus, WNOHANG);
      if (r == pid) {
        result.status = DecodeStatus(wstatus);
        return result;
      }
      if (r < 0 && errno != EINTR) break;
      if (Clock::now() >= *deadline) {
        result.timed_out = true;
        ::kill(pid, SIGKILL);
        break;
      }
      ::usleep(10000);
    }
  }
  result.status = WaitPid(pid);
  return result;
}

std::string RunChecked(const std::vector<std::string>& argv, std::string_view what,
                       const ProcessOptions& options, int code) {
  ProcessResult r = Run(argv, options);
  if (r.ok()) return r.out;
  std::vector<std::string> lines = SplitLines(r.err.empty() ? r.out : r.err);
  std::vector<std::string> tail;
  for (size_t i = lines.size() > 5 ? lines.size() - 5 : 0; i < lines.size(); ++i) {
    tail.push_back(Cat("  ", lines[i]));
  }
  std::string why = r.timed_out ? "timed out" : Cat("exited with status ", r.status);
  throw Error(code, Cat(what, ": ", argv[0], " ", why), tail);
}

pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path,
            const ProcessOptions& options) {
  Fd log;
  const char* path = log_path.empty() ? "/dev/null" : log_path.c_str();
  log.Reset(::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (log.get() < 0) {
    throw Error(kExitIoErr, Cat("cannot open '", path, "': ", std::strerror(errno)));
  }
  SpawnFds fds;
  fds.out = options.capture_stdout ? log.get() : -1;
  fds.err = options.capture_stderr ? log.get() : -1;
  return SpawnWith(argv, options, fds);
}

void ExecPath(const std::string& path, const std::vector<std::string>& argv) {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  ::execv(path.c_str(), cargv.data());
  throw Error(kExitUnavailable, Cat("cannot run '", path, "': ", std::strerror(errno)));
}

std::optional<std::string> FindInPath(std::string_view name) {
  if (name.find('/') != std::string_view::npos) {
    return ::access(std::string(name).c_str(), X_OK) == 0 ? std::optional(std::string(name))
                                                          : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  for (const auto& dir : Split(path ? path : "/usr/local/bin:/usr/bin:/bin", ':')) {
    std::string candidate = Cat(dir.empty() ? "." : dir, "/", name);
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

}  // namespace ss
