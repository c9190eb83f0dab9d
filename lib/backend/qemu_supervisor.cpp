#include "qemu_supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "digest.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "host_commands.hpp"
#include "output.hpp"
#include "packages.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "process.hpp"
#include "qemu_machine.hpp"
#include "qmp.hpp"
#include "strings.hpp"
#include "timefmt.hpp"

namespace ss {
namespace {

constexpr int kReadyFd = 3;
constexpr int kLockFd = 4;
// Room for "/vfs-<tag>.sock" after the socket directory in a sockaddr_un (108 bytes).
constexpr size_t kMaxSocketDir = 70;

using Clock = std::chrono::steady_clock;

std::string Describe(int wstatus) {
  if (WIFSIGNALED(wstatus)) {
    int sig = WTERMSIG(wstatus);
    return Cat("was killed by signal ", sig, " (", strsignal(sig), ")");
  }
  if (WIFEXITED(wstatus)) {
    return WEXITSTATUS(wstatus) == 0 ? "exited normally"
                                     : Cat("exited with status ", WEXITSTATUS(wstatus));
  }
  return "stopped";
}

// The Rust virtiofsd (in libexec), or QEMU's own C one until 8.0 (in /usr/lib/qemu).
std::optional<std::string> FindVirtiofsd() { return LocateCommand("virtiofsd"); }

// A child of the supervisor: stdin /dev/null, output to `log`, default signals, and `deathsig`
// when the supervisor dies, so that nothing outlives it.
pid_t StartChild(const std::vector<std::string>& argv, const std::string& log, int deathsig) {
  RequireListed(argv[0]);
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || null_fd < 0) {
    throw Error(kExitIoErr, Cat("cannot open ", log, ": ", std::strerror(errno)));
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    platform::SignalOnParentDeath(deathsig);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) ::signal(sig, SIG_DFL);
    ::execvp(cargv[0], cargv.data());
    ::_exit(127);
  }
  int err = errno;
  ::close(log_fd);
  ::close(null_fd);
  if (pid < 0) throw Error(kExitUnavailable, Cat("cannot fork: ", std::strerror(err)));
  return pid;
}

void WriteJson(const std::string& path, const Json& doc) {
  AtomicWrite(path, DumpJson(doc, 2) + "\n", 0644);
}

Json ProcessJson(const ProcessId& p) { return {{"pid", p.pid}, {"start", p.start}}; }

// Sends `sig` to each process still alive, then waits (up to `wait`) until they are gone.
void KillAndWait(const std::vector<ProcessId>& procs, int sig, std::chrono::milliseconds wait) {
  for (const auto& p : procs) {
    if (p.Alive()) ::kill(p.pid, sig);
  }
  auto deadline = Clock::now() + wait;
  while (Clock::now() < deadline) {
    bool any = false;
    for (const auto& p : procs) any = any || p.Alive();
    if (!any) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void RemoveRunFiles(const QemuPaths& paths, const Json& run) {
  ::unlink(paths.Qmp().c_str());
  if (run.contains("shares")) {
    for (const auto& share : run["shares"]) {
      std::string socket = share.value("socket", "");
      if (!socket.empty()) ::unlink(socket.c_str());
    }
  }
  ::unlink(paths.run.c_str());
  if (paths.socket_dir != paths.dir) ::rmdir(paths.socket_dir.c_str());
}

// The supervisor proper.
class Supervisor {
 public:
  explicit Supervisor(QemuPaths paths) : paths_(std::move(paths)) {}

  int Run() {
    try {
      Boot();
    } catch (const Error& e) {
      Json report = {{"error", e.what()}, {"details", e.details()}};
      Report(report);
      Shutdown();
      return 1;
    }
    Watch();
    return 0;
  }

 private:
  void Log(std::string_view line) {
    std::string text = Cat(FormatRfc3339(NowSeconds()), " ", line, "\n");
    ssize_t ignored = ::write(2, text.data(), text.size());
    (void)ignored;
  }

  // One line of JSON to whoever started us; they may be gone (SIGPIPE is ignored).
  void Report(const Json& doc) {
    if (reported_) return;
    reported_ = true;
    std::string line = DumpJson(doc) + "\n";
    ssize_t ignored = ::write(kReadyFd, line.data(), line.size());
    (void)ignored;
    ::close(kReadyFd);
  }

  QemuLaunch Launch(const Json& machine) {
    QemuLaunch l;
    l.name = machine.value("name", "");
    l.accel = DetectAccel();
    l.cpus = machine.value("cpus", 2);
    l.memory_mib = machine.value("memory_mib", int64_t{2048});
    l.kernel = machine.value("kernel", "");
    l.initrd = machine.value("initrd", "");
    l.append = machine.value("append", "");
    // cloud-init is off after the first boot (cloud-init/qemu.yaml) but for a grown disk's.
    if (machine.value("grow_filesystem", false)) l.append += " cloud-init=enabled";
    l.disk = paths_.disk;
    l.seed = paths_.seed;
    l.qmp_socket = paths_.Qmp();
    l.console_log = paths_.console_log;
    l.root = ::geteuid() == 0;
    l.relay = ExecutableDir() + "/ss-net";  // beside ss-vm, which runs this
    std::optional<std::string> virtiofsd = FindVirtiofsd();
    bool views = QemuNeedsViews(machine);
    for (const auto& s : machine["shares"]) {
      QemuShare share;
      share.tag = s.value("tag", "");
      share.source = QemuShareSource(paths_.dir, machine, s);
      share.target = s.value("target", "");
      share.read_only = s.value("read_only", false);
      // virtiofsd (C and Rust alike) needs root; read-only shares use 9p, where QEMU itself
      // enforces it.
      if (virtiofsd && l.root && !share.read_only && machine.value("share_type", "") != "9p") {
        share.vfs_socket = paths_.VfsSocket(share.tag);
      } else if (views && !share.read_only) {
        // Through a view only virtiofsd writes as the guest's user (9p would write as root,
        // which the view does not map).
        throw Error(kExitUnavailable,
                    Cat("cannot share ", s.value("source", ""), ": virtiofsd is not installed"), {},
                    {InstallHint("virtiofsd")});
      }
      mapped_ = views;
      l.shares.push_back(share);
    }
    virtiofsd_ = virtiofsd.value_or("");
    return l;
  }

  void StartShares(QemuLaunch& l) {
    for (auto& share : l.shares) {
      if (share.vfs_socket.empty()) continue;
      ::unlink(share.vfs_socket.c_str());
      std::string source = share.source;
      // virtiofsd's -o list is comma-separated; a comma in the path is escaped.
      for (size_t i = 0; (i = source.find(',', i)) != std::string::npos; i += 2) {
        source.insert(i, "\\");
      }
      pid_t pid = StartChild({virtiofsd_, "--socket-path=" + share.vfs_socket, "-o",
                              "source=" + source, "-o", "cache=auto", "-o", "xattr"},
                             paths_.virtiofsd_log, SIGTERM);
      shares_.push_back({share.tag, IdentifyProcess(pid)});
      auto deadline = Clock::now() + std::chrono::seconds(10);
      bool up = false;
      while (Clock::now() < deadline) {
        if (PathExists(share.vfs_socket)) {
          up = true;
          break;
        }
        int st = 0;
        if (::waitpid(pid, &st, WNOHANG) == pid) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (!up) {
        ::kill(pid, SIGKILL);
        if (mapped_) {
          throw Error(kExitUnavailable, Cat("virtiofsd for '", share.tag, "' did not start"), {},
                      {Cat("see ", paths_.virtiofsd_log)});
        }
        Log(Cat("virtiofsd for '", share.tag, "' did not start; sharing it with 9p instead"));
        share.vfs_socket.clear();
      }
    }
  }

  void StopShares() {
    std::vector<ProcessId> procs;
    for (const auto& s : shares_) procs.push_back(s.process);
    KillAndWait(procs, SIGTERM, std::chrono::seconds(3));
    KillAndWait(procs, SIGKILL, std::chrono::seconds(2));
    Reap();
    shares_.clear();
  }

  // Reaps every child that has exited; returns true when QEMU was one of them.
  bool Reap() {
    bool qemu_ended = false;
    while (true) {
      int st = 0;
      pid_t pid = ::waitpid(-1, &st, WNOHANG);
      if (pid <= 0) break;
      if (pid == qemu_.pid) {
        qemu_status_ = st;
        qemu_ended = true;
        continue;
      }
      for (const auto& s : shares_) {
        if (s.process.pid == pid && qemu_.pid != 0 && !qemu_done_) {
          Log(Cat("virtiofsd for '", s.tag, "' ", Describe(st)));
        }
      }
    }
    if (qemu_ended) qemu_done_ = true;
    return qemu_ended;
  }

  Json RunJson(const QemuLaunch& l, int port) {
    Json run = JsonDocument("QemuRun");
    run["supervisor"] = ProcessJson(IdentifyProcess(::getpid()));
    run["qemu"] = ProcessJson(qemu_);
    run["ssh_port"] = port;
    run["network"] = "restricted";  // QemuNetdev: machines started before it ran on an open one
    run["accel"] = l.accel.kind;
    run["accel_reason"] = l.accel.reason;
    run["started_at"] = FormatRfc3339(NowSeconds());
    run["cpus"] = l.cpus;
    run["memory_mib"] = l.memory_mib;
    run["shares"] = Json::array();
    for (const auto& share : l.shares) {
      Json s = {{"tag", share.tag},
                {"type", share.vfs_socket.empty() ? "9p" : "virtiofs"},
                {"socket", share.vfs_socket}};
      for (const auto& p : shares_) {
        if (p.tag == share.tag && !share.vfs_socket.empty())
          s["virtiofsd"] = ProcessJson(p.process);
      }
      run["shares"].push_back(s);
    }
    return run;
  }

  // QEMU runs once its monitor answers; false when it exited first (qemu_status_ says how).
  bool WaitForMonitor(std::chrono::seconds timeout) {
    auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      if (Reap()) return false;
      if (PathExists(paths_.Qmp())) {
        try {
          QmpClient probe(paths_.Qmp(), std::chrono::seconds(2));
          return true;
        } catch (const Error&) {
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw Error(kExitUnavailable,
                Cat("QEMU's monitor did not answer within ", timeout.count(), "s"),
                Tail(paths_.qemu_log, 8));
  }

  void Boot() {
    Json machine = Json::parse(ReadFile(paths_.config));
    QemuLaunch l = Launch(machine);
    int preferred = machine.value("ssh_port", 0);
    MakeDirs(paths_.socket_dir, 0700);
    AtomicWrite(paths_.qemu_log, "", 0600);
    for (int attempt = 0;; ++attempt) {
      // The preferred port was free when it was chosen; if something took it since, QEMU binds
      // any free one and says which.
      l.ssh_port = attempt == 0 ? preferred : 0;
      StartShares(l);
      ::unlink(paths_.Qmp().c_str());
      qemu_done_ = false;
      qemu_ = IdentifyProcess(StartChild(QemuArgv(l), paths_.qemu_log, SIGTERM));
      // Its processes are recorded at once; its SSH port only once it runs, since until then
      // the machine is starting (QEMU may yet fail to bind that port and try another).
      WriteJson(paths_.run, RunJson(l, 0));
      if (WaitForMonitor(std::chrono::seconds(60))) break;
      std::string log = ReadFileIfExists(paths_.qemu_log).value_or("");
      StopShares();
      if (log.find("Could not set up host forwarding rule") != std::string::npos && attempt < 2) {
        Log(Cat("SSH port ", l.ssh_port, " is taken; letting QEMU choose another"));
        AtomicWrite(paths_.qemu_log, "", 0600);
        continue;
      }
      throw Error(kExitUnavailable, Cat("qemu ", Describe(qemu_status_)), Tail(paths_.qemu_log, 8));
    }
    int port = l.ssh_port;
    if (port == 0) {
      QmpClient qmp(paths_.Qmp(), std::chrono::seconds(5));
      port = ParseUsernetSshPort(qmp.HumanMonitor("info usernet"));
      if (port == 0) throw Error(kExitSoftware, "QEMU did not say which SSH port it bound");
    }
    if (port != preferred) {
      machine["ssh_port"] = port;
      WriteJson(paths_.config, machine);
    }
    WriteJson(paths_.run, RunJson(l, port));
    ::unlink(paths_.last_exit.c_str());
    Log(Cat("QEMU ", qemu_.pid, " runs (", l.accel.kind, "), SSH on 127.0.0.1:", port));
    Report({{"ready", true}, {"port", port}});
  }

  // Waits for QEMU to end, then stops the rest and records how it ended.
  void Watch() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
    int term_count = 0;
    while (!qemu_done_) {
      if (Reap()) break;
      siginfo_t info;
      if (::sigwaitinfo(&set, &info) < 0) continue;
      if (info.si_signo != SIGCHLD && qemu_.Alive()) {
        // Asked to stop: QEMU quits on SIGTERM; a second request does not wait for it.
        ::kill(qemu_.pid, ++term_count > 1 ? SIGKILL : SIGTERM);
      }
    }
    Json exit = JsonDocument("QemuExit");
    exit["at"] = FormatRfc3339(NowSeconds());
    exit["clean"] = WIFEXITED(qemu_status_) && WEXITSTATUS(qemu_status_) == 0;
    exit["reason"] = Cat("QEMU ", Describe(qemu_status_));
    if (!exit["clean"].get<bool>()) exit["log"] = Tail(paths_.qemu_log, 5);
    WriteJson(paths_.last_exit, exit);
    Log(exit["reason"].get<std::string>());
    Shutdown();
  }

  void Shutdown() {
    if (qemu_.pid != 0 && !qemu_done_) {
      KillAndWait({qemu_}, SIGTERM, std::chrono::seconds(5));
      KillAndWait({qemu_}, SIGKILL, std::chrono::seconds(2));
    }
    StopShares();
    // Anything else that ended up ours (we are the subreaper) is reaped too.
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    RemoveRunFiles(paths_, ReadRunFile(paths_).value_or(Json::object()));
  }

  struct Share {
    std::string tag;
    ProcessId process;
  };
  QemuPaths paths_;
  std::string virtiofsd_;
  bool mapped_ = false;  // the shares are id-mapped views (QemuNeedsViews)
  std::vector<Share> shares_;
  ProcessId qemu_;
  int qemu_status_ = 0;
  bool qemu_done_ = false;
  bool reported_ = false;
};

}  // namespace

ProcessId ProcessFromJson(const Json& j) {
  ProcessId p;
  if (!j.is_object()) return p;
  p.pid = j.value("pid", 0);
  p.start = j.value("start", uint64_t{0});
  return p;
}

QemuPaths::QemuPaths(std::string d) : dir(std::move(d)) {
  config = dir + "/machine.json";
  disk = dir + "/disk.qcow2";
  seed = dir + "/seed.iso";
  lock = dir + "/lock";
  run = dir + "/run.json";
  last_exit = dir + "/last-exit.json";
  console_log = dir + "/console.log";
  qemu_log = dir + "/qemu.log";
  virtiofsd_log = dir + "/virtiofsd.log";
  supervisor_log = dir + "/supervisor.log";
  socket_dir =
      dir.size() <= kMaxSocketDir ? dir : Cat(RuntimeDir(), "/qemu-", Sha256Hex(dir).substr(0, 12));
}

std::string QemuPaths::Qmp() const { return socket_dir + "/qmp.sock"; }

std::string QemuPaths::VfsSocket(const std::string& tag) const {
  return Cat(socket_dir, "/vfs-", tag, ".sock");
}

ProcessId IdentifyProcess(pid_t pid) {
  ProcessId p;
  p.pid = pid;
  if (auto info = platform::Process(pid)) p.start = info->start;
  return p;
}

bool ProcessId::Alive() const {
  auto info = platform::Process(pid);
  return info && !info->ended && (start == 0 || info->start == start);
}

std::optional<Json> ReadRunFile(const QemuPaths& paths) {
  auto text = ReadFileIfExists(paths.run);
  if (!text) return std::nullopt;
  try {
    return Json::parse(*text);
  } catch (const Json::exception&) {
    return Json::object();
  }
}

void CleanUpStale(const QemuPaths& paths) {
  std::optional<Json> run = ReadRunFile(paths);
  if (!run) return;
  std::vector<ProcessId> procs;
  if (run->contains("supervisor")) procs.push_back(ProcessFromJson((*run)["supervisor"]));
  if (run->contains("qemu")) procs.push_back(ProcessFromJson((*run)["qemu"]));
  if (run->contains("shares")) {
    for (const auto& s : (*run)["shares"]) {
      if (s.contains("virtiofsd")) procs.push_back(ProcessFromJson(s["virtiofsd"]));
    }
  }
  bool any_alive = false;
  for (const auto& p : procs) any_alive = any_alive || p.Alive();
  KillAndWait(procs, SIGKILL, std::chrono::seconds(5));
  // The supervisor records how QEMU ended; when it could not, say what was found.
  auto exit = ReadFileIfExists(paths.last_exit);
  if (!exit) {
    Json doc = JsonDocument("QemuExit");
    doc["at"] = FormatRfc3339(NowSeconds());
    doc["clean"] = false;
    doc["reason"] = any_alive ? "the VM's supervisor had vanished; ss stopped what was left of it"
                              : "the VM's supervisor and QEMU had vanished";
    WriteJson(paths.last_exit, doc);
  }
  RemoveRunFiles(paths, *run);
}

int LaunchSupervisor(const QemuPaths& paths, int lock_fd, const std::string& supervisor,
                     std::chrono::seconds timeout) {
  int fds[2];
  if (int err = platform::Pipe(fds); err != 0) {
    throw Error(kExitSoftware, Cat("cannot create a pipe: ", std::strerror(err)));
  }
  ProcessOptions o;
  o.new_session = true;
  o.unlisted = true;  // ss-vm itself
  o.pass_fds = {{fds[1], kReadyFd}, {lock_fd, kLockFd}};
  // QEMU's guestfwd relays (ss-net relay) inherit this environment and find the sandbox's ss-net
  // through it, from another working directory.
  o.env = {{"SS_HOME", SsHome()}};
  AtomicWrite(paths.supervisor_log, "", 0600);
  pid_t pid;
  try {
    pid = Spawn({supervisor, "--qemu-supervise", paths.dir}, paths.supervisor_log, o);
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  WaitPid(pid);  // the first process returns at once; the supervisor is its child
  std::string answer;
  auto deadline = Clock::now() + timeout;
  char buf[4096];
  while (Clock::now() < deadline) {
    pollfd p{fds[0], POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    int rc = ::poll(&p, 1, static_cast<int>(std::max<long>(1, left.count())));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) break;
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
    if (answer.find('\n') != std::string::npos) break;
  }
  ::close(fds[0]);
  Json doc;
  try {
    doc = Json::parse(answer.substr(0, answer.find('\n')));
  } catch (const Json::exception&) {
    std::vector<std::string> details = Tail(paths.supervisor_log, 6);
    if (answer.empty() && Clock::now() >= deadline) {
      throw Error(kExitUnavailable, Cat("QEMU did not come up within ", timeout.count(), "s"),
                  details, {Cat("see ", paths.qemu_log)});
    }
    throw Error(kExitUnavailable, "the VM's supervisor ended before QEMU ran", details,
                {Cat("see ", paths.supervisor_log)});
  }
  if (doc.value("ready", false)) return doc.value("port", 0);
  std::vector<std::string> details;
  if (doc.contains("details")) {
    for (const auto& d : doc["details"]) details.push_back(d.get<std::string>());
  }
  throw Error(kExitUnavailable, doc.value("error", "QEMU did not start"), details,
              {Cat("see ", paths.qemu_log)});
}

int RunQemuSupervisor(const std::string& dir) {
  QemuPaths paths(dir);
  // The process ss started returns at once; the supervisor is its child, adopted by init, in
  // the session ss gave it (no terminal).
  pid_t pid = ::fork();
  if (pid < 0) {
    std::string line = Cat(R"({"error":"cannot fork the VM's supervisor"})", "\n");
    ssize_t ignored = ::write(kReadyFd, line.data(), line.size());
    (void)ignored;
    return kExitSoftware;
  }
  if (pid > 0) return 0;
  ::fcntl(kReadyFd, F_SETFD, FD_CLOEXEC);
  ::fcntl(kLockFd, F_SETFD, FD_CLOEXEC);
  ::signal(SIGPIPE, SIG_IGN);
  platform::AdoptOrphans();
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  Supervisor s(paths);
  return s.Run();
}

}  // namespace ss
