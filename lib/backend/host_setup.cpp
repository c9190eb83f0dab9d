#include "host_setup.hpp"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <thread>

#include "error.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "json_out.hpp"
#include "lume_api.hpp"
#include "output.hpp"
#include "packages.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "process.hpp"
#include "shell_quote.hpp"
#include "strings.hpp"
#include "subnet.hpp"

namespace ss {
namespace {

std::string DaemonsFile() { return "/run/ss-daemons.json"; }

void RequireRoot(const std::string& what) {
  if (::geteuid() != 0) {
    throw Error(kExitNoPerm, Cat(what, " needs root"), {}, {"run it with sudo: sudo ss vm setup"});
  }
}

void Append(SetupReport& report, const std::vector<std::string>& done) {
  report.done.insert(report.done.end(), done.begin(), done.end());
}

bool LxdAnswers() {
  ProcessOptions o;
  o.timeout = std::chrono::seconds(5);
  return FindInPath("lxc") && Run({"lxc", "query", "/1.0"}, o).ok();
}

Json ReadDaemons() {
  auto text = ReadFileIfExists(DaemonsFile());
  if (!text) return Json::object();
  try {
    return Json::parse(*text);
  } catch (const Json::exception&) {
    return Json::object();
  }
}

void RecordDaemon(const std::string& name, pid_t pid) {
  FileLock lock(DaemonsFile() + ".lock");
  Json d = ReadDaemons();
  d[name] = pid;
  AtomicWrite(DaemonsFile(), DumpJson(d) + "\n", 0644);
}

pid_t StartDaemon(const std::string& name, const std::vector<std::string>& argv,
                  const std::string& log, SetupReport& report) {
  ProcessOptions o;
  o.new_session = true;
  MakeDirs(Dirname(log));
  pid_t pid = Spawn(argv, log, o);
  RecordDaemon(name, pid);
  report.started.emplace_back(name, pid);
  report.done.push_back(Cat("started ", name, " (pid ", pid, ")"));
  return pid;
}

// A daemon killed without cleaning up leaves its pidfile; while the pid names a process (another
// one by now, or the daemon's own zombie, not reaped yet) the daemon refuses to start ("pid file
// found"). Removes `path` unless it names a live `comm`.
void RemoveStalePidFile(const std::string& path, const std::string& comm) {
  auto text = ReadFileIfExists(path);
  if (!text) return;
  std::string pid(Trim(*text));
  if (!pid.empty() && pid.size() < 10 && pid.find_first_not_of("0123456789") == std::string::npos) {
    auto running = platform::Process(std::stoi(pid));
    if (running && !running->ended && running->name == comm) return;
  }
  ::unlink(path.c_str());
}

// The host user (owner of the projects) must be mappable into containers: root's subordinate
// id ranges, which LXD reads at start, need "root:<uid>:1".
bool EnsureSubidMapping(uid_t uid, SetupReport& report) {
  bool changed = false;
  for (const char* file : {"/etc/subuid", "/etc/subgid"}) {
    std::string text = ReadFileIfExists(file).value_or("");
    std::string line = Cat("root:", uid, ":1");
    bool present = false;
    for (const auto& l : SplitLines(text)) present = present || l == line;
    if (present) continue;
    RequireRoot(Cat("editing ", file));
    if (!text.empty() && text.back() != '\n') text += '\n';
    AtomicWrite(file, text + line + "\n", 0644);
    report.done.push_back(Cat("added ", line, " to ", file));
    changed = true;
  }
  return changed;
}

// Docker and LXD inside a container need every cgroup v1 controller the kernel has to be
// mounted (systemd hosts mount them all); one left unmounted makes the container's systemd mount
// it at the root, where the nested engine cannot create cgroups. Mounts the missing ones, as the
// usual pairs share one hierarchy where the host has them so, each alone where it has not (a
// container sees its host's choice); a cgroup2-only host needs nothing.
void EnsureCgroupControllers(SetupReport& report) {
  auto cgroups = ReadFileIfExists("/proc/cgroups");
  auto mountinfo = ReadFileIfExists("/proc/self/mountinfo");
  if (!cgroups || !mountinfo) return;
  // mountinfo: "id parent dev root mountpoint options ... - fstype source superoptions"
  bool v1 = false, read_only = false;
  std::set<std::string> mounted;
  for (const auto& line : SplitLines(*mountinfo)) {
    auto fields = Split(line, ' ');
    auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 6 || dash == fields.end() || dash + 1 == fields.end()) continue;
    if (fields[4] == "/sys/fs/cgroup" && *(dash + 1) == "tmpfs") {
      v1 = true;
      read_only = fields[5].rfind("ro", 0) == 0;
    }
    if (*(dash + 1) == "cgroup" && dash + 3 < fields.end()) {
      for (const auto& option : Split(*(dash + 3), ',')) mounted.insert(option);
    }
  }
  if (!v1) return;  // cgroup2 only: nothing to mount
  std::vector<std::string> missing;
  for (const auto& line : SplitLines(*cgroups)) {
    if (line.empty() || line[0] == '#') continue;
    auto f = Split(line, '\t');
    if (f.size() < 4 || f[3] != "1" || mounted.count(f[0])) continue;  // disabled, or mounted
    missing.push_back(f[0]);
  }
  if (missing.empty()) return;
  RequireRoot("mounting cgroup controllers");
  auto is_missing = [&](const std::string& c) {
    return std::find(missing.begin(), missing.end(), c) != missing.end();
  };
  // The usual pairs share one hierarchy, as systemd mounts them, when both are missing.
  std::vector<std::string> groups;
  for (const auto& c : missing) {
    if ((c == "net_prio" && is_missing("net_cls")) || (c == "cpuacct" && is_missing("cpu"))) {
      continue;
    }
    if (c == "net_cls" && is_missing("net_prio")) {
      groups.push_back("net_cls,net_prio");
    } else if (c == "cpu" && is_missing("cpuacct")) {
      groups.push_back("cpu,cpuacct");
    } else {
      groups.push_back(c);
    }
  }
  if (read_only) Run({"mount", "-o", "remount,rw", "/sys/fs/cgroup"});
  auto mount_one = [&](const std::string& g) {
    std::string dir = "/sys/fs/cgroup/" + g;
    ProcessResult r;
    try {
      MakeDirs(dir);
    } catch (const Error& e) {
      // A container's read-only /sys/fs/cgroup: nothing can be added there.
      r.status = 1;
      r.err = e.what();
      return r;
    }
    r = Run({"mount", "-t", "cgroup", "-o", g, "cgroup", dir});
    if (!r.ok()) {
      ::rmdir(dir.c_str());
      return r;
    }
    for (const auto& part : Split(g, ',')) {
      if (part != g) ::symlink(g.c_str(), ("/sys/fs/cgroup/" + part).c_str());
    }
    report.done.push_back(
        Cat("mounted the cgroup v1 controller ", g, " (docker and LXD inside sandboxes need it)"));
    return r;
  };
  for (const auto& g : groups) {
    ProcessResult r = mount_one(g);
    if (r.ok()) continue;
    if (g.find(',') != std::string::npos) {
      // The host keeps these apart: so must we.
      bool all = true;
      for (const auto& part : Split(g, ',')) all = mount_one(part).ok() && all;
      if (all) continue;
    }
    Warn(Cat("could not mount the cgroup controller ", g, ": ", Trim(r.err)));
  }
  if (read_only) Run({"mount", "-o", "remount,ro", "/sys/fs/cgroup"});
}

// Inside a container with a user namespace, root's subordinate ids (which LXD gives its
// containers) must lie within the ids that namespace maps; Debian's lxd package writes a range
// larger than a container has (root:100000:10000001), and LXD then runs privileged containers
// only. Shrinks such a range to what fits. True when a file changed.
bool FitSubidRanges(SetupReport& report) {
  if (!InUserNamespace()) return false;
  uint64_t top = MappedIds();
  bool changed = false;
  for (const char* file : {"/etc/subuid", "/etc/subgid"}) {
    auto text = ReadFileIfExists(file);
    if (!text) continue;
    std::string out;
    bool file_changed = false;
    for (const auto& line : SplitLines(*text)) {
      auto f = Split(line, ':');
      uint64_t start = 0, count = 0;
      if (f.size() == 3 && f[0] == "root" && !f[1].empty() && !f[2].empty() &&
          f[1].find_first_not_of("0123456789") == std::string::npos &&
          f[2].find_first_not_of("0123456789") == std::string::npos) {
        start = std::stoull(f[1]);
        count = std::stoull(f[2]);
      }
      if (count > 1 && start + count > top && top > start + 65536) {
        std::string fitted = Cat("root:", start, ":", top - start);
        report.done.push_back(
            Cat("in ", file, ", ", line, " became ", fitted, " (the ids this container has)"));
        out += fitted + "\n";
        file_changed = true;
      } else {
        out += line + "\n";
      }
    }
    if (file_changed) {
      AtomicWrite(file, out, 0644);
      changed = true;
    }
  }
  return changed;
}

void WaitLxd(std::chrono::seconds timeout) {
  ProcessOptions o;
  o.timeout = timeout + std::chrono::seconds(5);
  ProcessResult r = Run({"lxd", "waitready", Cat("--timeout=", timeout.count())}, o);
  if (!r.ok() && !LxdAnswers()) {
    throw Error(kExitUnavailable, "LXD did not come up", {Cat("  ", Trim(r.err))},
                {"see /var/log/lxd/lxd.log"});
  }
}

void StartLxdDaemons(SetupReport& report) {
  RequireRoot("starting LXD");
  if (HaveSystemd()) {
    RunChecked({"systemctl", "start", "lxd"}, "cannot start lxd", {}, kExitUnavailable);
    report.done.push_back("started lxd (systemctl)");
    WaitLxd(std::chrono::seconds(60));
    return;
  }
  // (An lxcfs of a container's own, in another pid namespace, is not ours.)
  if (FindInPath("lxcfs") &&
      Run({"pgrep", "-x", "lxcfs", "--ns", std::to_string(::getpid()), "--nslist", "pid"}).status !=
          0) {
    // A FUSE mount whose lxcfs died answers "Transport endpoint is not connected": unmount it.
    struct stat st {};
    if (::stat("/var/lib/lxcfs", &st) != 0 && errno == ENOTCONN) {
      Run({"umount", "-l", "/var/lib/lxcfs"});
      report.done.push_back("removed the stale lxcfs mount");
    }
    MakeDirs("/var/lib/lxcfs");
    StartDaemon("lxcfs", {"lxcfs", "/var/lib/lxcfs"}, "/var/log/lxd/lxcfs.log", report);
  }
  MakeDirs("/var/log/lxd");
  StartDaemon("lxd", {"lxd", "--group", "lxd", "--logfile=/var/log/lxd/lxd.log"},
              "/var/log/lxd/lxd.stdout", report);
  WaitLxd(std::chrono::seconds(60));
}

// Under sudo, the user who ran it gets the engine's group (lxd, docker), whose members may use
// its socket: from their next login on, as groups go.
void AddSudoUserToGroup(const std::string& group, SetupReport& report) {
  const char* user = std::getenv("SUDO_USER");
  if (::geteuid() != 0 || !user || !*user || std::string_view(user) == "root") return;
  struct group* g = ::getgrnam(group.c_str());
  if (!g) return;
  for (char** m = g->gr_mem; m && *m; ++m) {
    if (std::string_view(*m) == user) return;
  }
  RunChecked({"usermod", "-a", "-G", group, user}, Cat("cannot add ", user, " to ", group), {},
             kExitUnavailable);
  report.done.push_back(Cat("added ", user, " to the group '", group,
                            "': it counts from their next login (log in again, or: newgrp ", group,
                            ")"));
}

// The fence around a sandbox's network is nftables rules, which only root may write. Members
// of the engine's group (root's equal on this host already: they can start privileged
// containers) may have ss-net install and remove fences through sudo without a password, and
// for nothing else: ss-net fence refuses, under sudo, an interface that is not a sandbox's.
// Whether only root can change `path`: it and every folder above it belong to root, and none is
// writable by others (a sticky folder such as /tmp excepted: others cannot replace root's entries
// there).
bool OnlyRootCanChange(const std::string& path) {
  if (!path.starts_with("/")) return false;
  std::string at = path;
  for (;;) {
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0 || st.st_uid != 0) return false;
    bool sticky = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX);
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky) return false;
    if (at == "/") return true;
    at = Dirname(at);
  }
}

void AllowFenceForGroup(const std::string& group, SetupReport& report) {
  if (::geteuid() != 0 || !::getgrnam(group.c_str())) return;
  std::string ss_net = Cat(ExecutableDir(), "/ss-net");
  if (!OnlyRootCanChange(ss_net)) {
    Warn(Cat("not letting the group '", group, "' run ", ss_net,
             " as root: someone other than root can change it; members of the group will need "
             "root to start sandboxes"));
    return;
  }
  std::string path = Cat("/etc/sudoers.d/ss-net-", group);
  std::string rule =
      Cat("%", group, " ALL=(root) NOPASSWD: ", ExecutableDir(), "/ss-net fence *\n");
  std::string text =
      Cat("# Written by ss vm setup: ss-net installs the network fence of a sandbox.\n", rule);
  if (ReadFileIfExists(path) == text) return;
  AtomicWrite(path, text, 0440);
  if (!Run({"visudo", "-c", "-q", "-f", path}).ok()) {
    ::unlink(path.c_str());
    throw Error(kExitUnavailable, Cat("cannot allow the group '", group, "' to fence sandboxes"),
                {Cat("visudo refused ", path)});
  }
  report.done.push_back(
      Cat("let the group '", group, "' fence its sandboxes' network (", path, ")"));
}

// The LXD daemon's own pid (never a container's monitor, a proxy device or a daemon nested
// in a container: all are called lxd), or 0.
pid_t LxdServerPid() {
  ProcessResult r = Run({"lxc", "query", "/1.0"});
  if (!r.ok()) return 0;
  Json j = Json::parse(r.out, nullptr, false);
  return j.is_object() ? j.value("environment", Json::object()).value("server_pid", 0) : 0;
}

void RestartLxd(SetupReport& report) {
  if (HaveSystemd()) {
    RunChecked({"systemctl", "restart", "lxd"}, "cannot restart lxd", {}, kExitUnavailable);
  } else {
    // SIGTERM leaves the containers running; the new daemon takes them over.
    pid_t pid = LxdServerPid();
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      WaitProcessGone(pid, std::chrono::seconds(10));
    }
    MakeDirs("/var/log/lxd");
    StartDaemon("lxd", {"lxd", "--group", "lxd", "--logfile=/var/log/lxd/lxd.log"},
                "/var/log/lxd/lxd.stdout", report);
  }
  WaitLxd(std::chrono::seconds(60));
  report.done.push_back("restarted lxd to load the new id mapping");
}

// LXD's words for a failed command: its "Error: " line(s).
std::string LxdWords(const ProcessResult& r) {
  std::string text(Trim(r.err.empty() ? r.out : r.err));
  if (text.rfind("Error: ", 0) == 0) text = text.substr(7);
  return r.timed_out ? "no answer from LXD" : text;
}

}  // namespace

int64_t LxdPoolBytes(int64_t free) {
  constexpr int64_t kGiB = 1024LL * 1024 * 1024;
  int64_t fifth = free < 0 ? 30 * kGiB : free / 5;
  return std::clamp(fifth / kGiB, int64_t{5}, int64_t{30}) * kGiB;
}

namespace {

// The storage pool for the default profile: btrfs on a loop file (LxdPoolBytes), else a plain
// directory (where loop devices or btrfs are not available, as in a container).
std::string MakeLxdPool(Progress& progress) {
  std::vector<std::string> failures;
  const char* lxd_dir = std::getenv("LXD_DIR");
  std::string disks = Cat(lxd_dir && *lxd_dir ? lxd_dir : "/var/lib/lxd", "/disks");
  std::string gib = Cat(
      LxdPoolBytes(FreeBytes(IsDirectory(disks) ? disks : Dirname(disks))) / (1024LL * 1024 * 1024),
      "GiB");
  for (const char* driver : {"btrfs", "dir"}) {
    bool loop = std::string(driver) == "btrfs";
    progress.Step(Cat("creating LXD's storage pool 'default' (", driver,
                      loop ? Cat(", ", gib, " at most") : "", ")"));
    std::vector<std::string> argv{"lxc", "storage", "create", "default", driver};
    if (loop) argv.push_back(Cat("size=", gib));
    ProcessOptions o;
    o.timeout = std::chrono::minutes(2);
    // A failed btrfs pool leaves its loop file, which the next attempt would take for a used one.
    std::string loop_file = disks + "/default.img";
    bool had_loop_file = PathExists(loop_file);
    ProcessResult r = Run(argv, o);
    if (r.ok()) return driver;
    failures.push_back(Cat("  ", driver, ": ", LxdWords(r)));
    Run({"lxc", "storage", "delete", "default"});  // what a half-made attempt left
    if (!had_loop_file) ::unlink(loop_file.c_str());
  }
  throw Error(kExitUnavailable, "cannot create LXD's storage pool 'default'", failures,
              {"see /var/log/lxd/lxd.log"});
}

bool AutoSubnetFailed(std::string_view words) {
  return words.find("unused IPv4 subnet") != std::string_view::npos ||
         words.find("Failed generating auto config") != std::string_view::npos;
}

// A NAT bridge for the sandboxes, on a subnet LXD picks; where LXD's own probe finds none, on a
// private /24 that no route, interface, LXD, Docker or Podman network of this host uses. A
// bridge named lxdbr0 that LXD does not manage is the user's: ss makes ssbr0 instead.
std::pair<std::string, std::string> MakeLxdBridge(Progress& progress) {
  std::string name = IsDirectory("/sys/class/net/lxdbr0") ? "ssbr0" : "lxdbr0";
  progress.Step(Cat("creating LXD's network bridge '", name, "'"));
  ProcessOptions o;
  o.timeout = std::chrono::minutes(1);
  std::vector<std::string> argv{"lxc", "network",       "create",
                                name,  "ipv4.nat=true", "ipv6.address=none"};
  std::vector<std::string> with_auto = argv;
  with_auto.push_back("ipv4.address=auto");
  ProcessResult r = Run(with_auto, o);
  if (!r.ok() && AutoSubnetFailed(LxdWords(r))) {
    Debug(Cat("LXD found no subnet by itself: ", LxdWords(r)));
    Run({"lxc", "network", "delete", name});
    auto subnet = FreeSubnet(
        SubnetsInUse(), static_cast<uint32_t>(::getpid()) ^ static_cast<uint32_t>(::time(nullptr)));
    if (!subnet) {
      throw Error(kExitUnavailable,
                  Cat("cannot create LXD's network bridge '", name,
                      "': every private IPv4 /24 is in use on this host"),
                  {Cat("  LXD: ", LxdWords(r))},
                  {Cat("create it with an address of your choice: lxc network create ", name,
                       " ipv4.address=10.X.Y.1/24 ipv4.nat=true ipv6.address=none")});
    }
    argv.push_back(Cat("ipv4.address=", subnet->GatewayCidr()));
    progress.Step(Cat("creating LXD's network bridge '", name, "' on ", subnet->GatewayCidr()));
    r = Run(argv, o);
  }
  if (!r.ok()) {
    std::string words = LxdWords(r);
    Run({"lxc", "network", "delete", name});
    throw Error(kExitUnavailable, Cat("cannot create LXD's network bridge '", name, "'"),
                {Cat("  LXD: ", words)}, {"see /var/log/lxd/lxd.log"});
  }
  ProcessResult address = Run({"lxc", "network", "get", name, "ipv4.address"});
  return {name, std::string(Trim(address.out))};
}

// A fresh LXD (no root disk or network in the default profile) gets a storage pool, a NAT
// bridge and a default profile using both. What the user (or an earlier set-up) made is used as
// it is: a pool or a managed network named as ours is taken, never changed.
void InitialiseLxd(Progress& progress, SetupReport& report) {
  ProcessResult profile = Run({"lxc", "query", "/1.0/profiles/default"});
  bool has_root = false, has_nic = false;
  if (profile.ok()) {
    Json p = Json::parse(profile.out);
    for (auto& [name, dev] : p["devices"].items()) {
      has_root = has_root || (dev.value("type", "") == "disk" && dev.value("path", "") == "/");
      has_nic = has_nic || dev.value("type", "") == "nic";
    }
  }
  if (has_root && has_nic) return;  // the user's (or an earlier) set-up: leave it as it is
  RequireRoot("initialising LXD");
  std::vector<std::string> made;
  if (!has_root) {
    std::string pool = "default";
    if (!Run({"lxc", "query", "/1.0/storage-pools/default"}).ok()) {
      made.push_back(Cat(MakeLxdPool(progress), " pool 'default'"));
    }
    RunChecked({"lxc", "profile", "device", "add", "default", "root", "disk", "path=/",
                Cat("pool=", pool)},
               "cannot give LXD's default profile its root disk", {}, kExitUnavailable);
  }
  if (!has_nic) {
    std::string network = "lxdbr0";
    Json existing = Json::object();
    if (ProcessResult q = Run({"lxc", "query", "/1.0/networks/lxdbr0"}); q.ok()) {
      existing = Json::parse(q.out);
    }
    if (!existing.value("managed", false)) {
      auto [name, address] = MakeLxdBridge(progress);
      network = name;
      made.push_back(Cat("bridge '", name, "' on ", address));
    }
    RunChecked({"lxc", "profile", "device", "add", "default", "eth0", "nic", "name=eth0",
                Cat("network=", network)},
               "cannot give LXD's default profile its network", {}, kExitUnavailable);
  }
  report.done.push_back(
      Cat("initialised LXD: ", made.empty() ? "default profile" : Join(made, ", ")));
}

bool DockerAnswers() {
  ProcessOptions o;
  o.timeout = std::chrono::seconds(10);
  std::string client = ::access("/usr/bin/docker", X_OK) == 0 ? "/usr/bin/docker" : "docker";
  return FindInPath(client) && Run({client, "version", "--format", "{{.Server.Version}}"}, o).ok();
}

bool LinkExists(const std::string& name) { return IsDirectory("/sys/class/net/" + name); }

std::string ForwardPolicy() {
  if (!FindInPath("iptables")) return "";
  ProcessResult r = Run({"iptables", "-S", "FORWARD"});
  for (const auto& line : SplitLines(r.out)) {
    if (line.rfind("-P FORWARD ", 0) == 0) return line.substr(11);
  }
  return "";
}

bool DockerChains() {
  return FindInPath("iptables") && Run({"iptables", "-t", "nat", "-S", "DOCKER"}).ok();
}

// Removes the rules dockerd adds (those jumping to its chains or naming docker0), then its
// chains, in the nat and filter tables.
void RemoveDockerRules(SetupReport& report) {
  int removed = 0;
  for (const char* table : {"nat", "filter"}) {
    ProcessResult rules = Run({"iptables", "-t", table, "-S"});
    std::vector<std::string> chains;
    for (const auto& line : SplitLines(rules.out)) {
      std::vector<std::string> words;
      try {
        words = ShellSplit(line, "an iptables rule");
      } catch (const Error&) {
        continue;
      }
      if (words.size() >= 2 && words[0] == "-N" && words[1].rfind("DOCKER", 0) == 0) {
        chains.push_back(words[1]);
        continue;
      }
      if (words.size() < 3 || words[0] != "-A" || words[1].rfind("DOCKER", 0) == 0) continue;
      bool docker = std::any_of(words.begin() + 2, words.end(), [](const std::string& w) {
        return w.rfind("DOCKER", 0) == 0 || w == "docker0";
      });
      if (!docker) continue;
      std::vector<std::string> argv{"iptables", "-t", table, "-D"};
      argv.insert(argv.end(), words.begin() + 1, words.end());
      if (Run(argv).ok()) ++removed;
    }
    for (const auto& chain : chains) Run({"iptables", "-t", table, "-F", chain});
    for (const auto& chain : chains) Run({"iptables", "-t", table, "-X", chain});
  }
  if (removed > 0) report.done.push_back(Cat("removed dockerd's iptables rules and chains"));
}

}  // namespace

SetupReport SetupDocker(Progress& progress) {
  SetupReport report;
  // An engine that answers (the user's own, perhaps remote) needs no package of ours.
  std::vector<std::string> steps{"core", "image", "fence"};
  if (!DockerAnswers()) steps.push_back("docker");
  Append(report, InstallFor(steps, "ss vm setup --backend docker", progress));
  EnsureCgroupControllers(report);
  AddSudoUserToGroup("docker", report);
  AllowFenceForGroup("docker", report);
  if (DockerAnswers()) return report;
  RequireRoot("starting Docker");
  progress.Step("starting dockerd");
  if (HaveSystemd()) {
    RunChecked({"systemctl", "start", "docker"}, "cannot start docker", {}, kExitUnavailable);
    report.done.push_back("started docker (systemctl)");
  } else {
    // What dockerd is about to change on the host, so that --stop can put it back.
    Json before = {
        {"ip_forward",
         std::string(Trim(ReadFileIfExists("/proc/sys/net/ipv4/ip_forward").value_or("")))},
        {"docker0", LinkExists("docker0")},
        {"forward_policy", ForwardPolicy()},
        {"iptables_chains", DockerChains()}};
    {
      FileLock lock(DaemonsFile() + ".lock");
      Json d = ReadDaemons();
      d["dockerd.host"] = before;
      AtomicWrite(DaemonsFile(), DumpJson(d) + "\n", 0644);
    }
    MakeDirs("/var/log");
    RemoveStalePidFile("/var/run/docker.pid", "dockerd");
    // dockerd's own containerd: after an unclean stop its number may name another process by
    // now, and dockerd would wait for that one's socket ("containerd is still running") in vain.
    RemoveStalePidFile("/var/run/docker/containerd/containerd.pid", "containerd");
    pid_t pid = StartDaemon("dockerd", {"dockerd"}, "/var/log/ss-dockerd.log", report);
    for (int i = 0; i < 600 && !DockerAnswers(); ++i) {
      if (!ProcessAlive(pid)) {
        throw Error(kExitUnavailable, "dockerd exited while starting", {},
                    {"see /var/log/ss-dockerd.log"});
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (!DockerAnswers()) {
    throw Error(kExitUnavailable, "Docker did not come up", {}, {"see /var/log/ss-dockerd.log"});
  }
  return report;
}

SetupReport TeardownDocker(Progress& progress) {
  SetupReport report;
  Json daemons = ReadDaemons();
  pid_t pid = daemons.value("dockerd", 0);
  if (!ProcessAlive(pid)) return report;
  RequireRoot("stopping Docker");
  progress.Step("stopping dockerd and its containers");
  // dockerd stops its containers (systemd inside halts on the stop signal) and its containerd.
  ::kill(pid, SIGTERM);
  WaitProcessGone(pid, std::chrono::seconds(60));
  if (ProcessAlive(pid)) ::kill(pid, SIGKILL);
  WaitProcessGone(pid, std::chrono::seconds(5));
  report.done.push_back(Cat("stopped dockerd (pid ", pid, ")"));
  Json before = daemons.value("dockerd.host", Json::object());
  if (!before.value("docker0", true) && LinkExists("docker0")) {
    if (Run({"ip", "link", "delete", "docker0"}).ok()) {
      report.done.push_back("removed the docker0 bridge");
    }
  }
  if (!before.value("iptables_chains", true) && DockerChains()) RemoveDockerRules(report);
  std::string policy = before.value("forward_policy", "");
  if (!policy.empty() && ForwardPolicy() != policy) {
    if (Run({"iptables", "-P", "FORWARD", policy}).ok()) {
      report.done.push_back(Cat("set the FORWARD policy back to ", policy));
    }
  }
  // IP forwarding goes back off unless LXD (whose bridge does NAT) runs.
  if (before.value("ip_forward", "") == "0" && !LxdAnswers()) {
    // A sysctl file: written in place, not replaced.
    int fd = ::open("/proc/sys/net/ipv4/ip_forward", O_WRONLY | O_CLOEXEC);
    if (fd >= 0 && ::write(fd, "0\n", 2) == 2) {
      report.done.push_back("turned IP forwarding back off");
    }
    if (fd >= 0) ::close(fd);
  }
  {
    FileLock lock(DaemonsFile() + ".lock");
    Json d = ReadDaemons();
    d.erase("dockerd");
    d.erase("dockerd.host");
    AtomicWrite(DaemonsFile(), DumpJson(d) + "\n", 0644);
  }
  return report;
}

SetupReport SetupPodman(Progress& progress) {
  SetupReport report;
  Append(report, InstallFor({"core", "image", "podman", "fence"}, "ss vm setup --backend podman",
                            progress));
  EnsureCgroupControllers(report);
  return report;
}

SetupReport SetupQemu(Progress& progress) {
  SetupReport report;
  Append(report, InstallFor({"core", "image", "qemu"}, "ss vm setup --backend qemu", progress));
  return report;
}

SetupReport SetupLima(Progress& progress) {
  SetupReport report;
  Append(report, InstallFor({"core", "image"}, "ss vm setup --backend lima", progress));
  if (!LocateCommand("limactl")) {
    throw Error(kExitUnavailable, "Lima is not installed (no limactl)", {},
                {"install Lima 2 or later: https://lima-vm.io/docs/installation/"});
  }
  return report;
}

SetupReport SetupLume(Progress& progress) {
  SetupReport report;
  Append(report, InstallFor({"core"}, "ss vm setup --backend lume", progress));
  if (!LocateCommand("lume")) {
    throw Error(kExitUnavailable, "Lume is not installed (no lume)", {}, {kLumeInstallHint});
  }
  return report;
}

bool HaveSystemd() {
  struct stat st;
  return ::stat("/run/systemd/system", &st) == 0 && S_ISDIR(st.st_mode);
}

SetupReport SetupLxd(Progress& progress) {
  SetupReport report;
  Append(report,
         InstallFor({"core", "image", "lxd", "fence"}, "ss vm setup --backend lxd", progress));
  EnsureCgroupControllers(report);
  AddSudoUserToGroup("lxd", report);
  AllowFenceForGroup("lxd", report);
  // A regular user is mapped into containers (raw.idmap); root never is (its folders are
  // shared through id-mapped views, see backend_lxd.cpp).
  uid_t uid = ProjectsUid();
  bool mapping_changed = FitSubidRanges(report);
  mapping_changed = (uid != 0 && EnsureSubidMapping(uid, report)) || mapping_changed;
  if (!LxdAnswers()) {
    progress.Step("starting LXD");
    StartLxdDaemons(report);
  } else if (mapping_changed) {
    progress.Step("restarting LXD");
    RestartLxd(report);
  }
  InitialiseLxd(progress, report);
  return report;
}

SetupReport TeardownLxd(Progress& progress) {
  SetupReport report;
  Json daemons = ReadDaemons();
  pid_t lxd = daemons.value("lxd", 0);
  if (ProcessAlive(lxd)) {
    progress.Step("stopping LXD and its containers");
    ProcessOptions o;
    o.timeout = std::chrono::minutes(2);
    Run({"lxd", "shutdown"}, o);
    for (int i = 0; i < 100 && ProcessAlive(lxd); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (ProcessAlive(lxd)) ::kill(lxd, SIGKILL);
    report.done.push_back(Cat("stopped lxd (pid ", lxd, ")"));
    // LXD removes its bridge on shutdown but leaves its firewall table behind.
    if (FindInPath("nft") && Run({"nft", "list", "table", "inet", "lxd"}).ok()) {
      Run({"nft", "delete", "table", "inet", "lxd"});
      report.done.push_back("removed nftables table 'inet lxd'");
    }
  }
  pid_t lxcfs = daemons.value("lxcfs", 0);
  if (ProcessAlive(lxcfs)) {
    ::kill(lxcfs, SIGTERM);
    for (int i = 0; i < 50 && ProcessAlive(lxcfs); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    Run({"umount", "/var/lib/lxcfs"});
    report.done.push_back(Cat("stopped lxcfs (pid ", lxcfs, ")"));
  }
  if (PathExists(DaemonsFile())) {
    daemons.erase("lxd");
    daemons.erase("lxcfs");
    AtomicWrite(DaemonsFile(), DumpJson(daemons) + "\n", 0644);
  }
  return report;
}

}  // namespace ss
