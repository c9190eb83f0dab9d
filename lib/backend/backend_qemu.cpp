// The QEMU backend: one virtual machine per sandbox, driven directly, as Lima does under the hood.
//
// A machine (StateDir()/qemu/<name>/, see qemu_supervisor.hpp for the files) boots the image's
// kernel directly (no boot loader) from a qcow2 overlay on the image's base disk, with:
//   - acceleration: KVM when hardware virtualization works, HVF on macOS, TCG otherwise;
//   - a NoCloud seed ISO (label cidata) with the rendered user-data and meta-data, and the list
//     of shares the image's ss-mount-shares unit mounts on every boot;
//   - the projects folder shared read-write with virtiofs (virtiofsd, which needs root; files keep
//     their owners both ways), or 9p (QEMU's own server) where virtiofs cannot be used;
//   - user networking (no host changes) with SSH forwarded from 127.0.0.1:<port>, restricted so
//     that the guest reaches nothing but ss-net's proxy and resolver at kQemuEgressAddress
//     (guestfwd relays, `ss-net relay`);
//   - QMP on a unix socket for state, graceful powerdown and forced quit.
// QEMU and virtiofsd run under a supervisor process that lives as long as the VM (see
// qemu_supervisor.hpp); ss commands talk to QEMU over QMP and never wait on it themselves.
#include "backend_qemu.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "idmap_view.hpp"
#include "image.hpp"
#include "net.hpp"
#include "net_fence.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "qemu_machine.hpp"
#include "qemu_supervisor.hpp"
#include "qmp.hpp"
#include "size.hpp"
#include "strings.hpp"
#include "timefmt.hpp"

namespace ss {
namespace {

constexpr const char* kQemu = "qemu-system-x86_64";
constexpr std::chrono::seconds kLaunchTimeout{90};

const char* const kIsoTools[] = {"genisoimage", "mkisofs", "xorrisofs"};

std::optional<std::string> IsoTool() {
  for (const char* tool : kIsoTools) {
    if (auto path = FindInPath(tool)) return path;
  }
  return std::nullopt;
}

// The machine's lock, held while this object lives (none when someone else holds it).
class MachineLock {
 public:
  explicit MachineLock(const std::string& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (!fd_.ok()) throw Error(kExitIoErr, Cat("cannot open ", path, ": ", std::strerror(errno)));
    if (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) fd_.Close();
  }
  bool held() const { return fd_.ok(); }
  int fd() const { return fd_.get(); }

 private:
  Fd fd_;
};

Json ReadMachine(const QemuPaths& paths) {
  try {
    return Json::parse(ReadFile(paths.config));
  } catch (const Json::exception& e) {
    throw Error(kExitDataErr, Cat(paths.config, " is damaged: ", e.what()));
  }
}

void WriteMachine(const QemuPaths& paths, const Json& machine) {
  AtomicWrite(paths.config, DumpJson(machine, 2) + "\n", 0644);
}

int64_t VirtualSize(const std::string& disk) {
  std::string out = RunChecked({"qemu-img", "info", "-U", "--output=json", disk},
                               "cannot read the VM disk", {}, kExitIoErr);
  return Json::parse(out).value("virtual-size", int64_t{0});
}

// A snapshot command on the running machine's disk, through QMP. A snapshot of a large disk
// takes a while (QEMU answers when it is written).
void Live(const QemuPaths& paths, const std::string& command, const std::string& snapshot,
          const std::string& what) {
  try {
    QmpClient qmp(paths.Qmp(), std::chrono::minutes(5));
    qmp.Execute(command, Json{{"device", kQemuDiskId}, {"name", snapshot}});
  } catch (const QmpError& e) {
    throw Error(kExitIoErr, what, {Cat("  ", e.what())});
  }
}

std::string SupervisorBinary() {
  std::string path = ExecutableDir() + "/ss-vm";
  if (::access(path.c_str(), X_OK) != 0) {
    throw Error(kExitSoftware, Cat("cannot find ss-vm beside ", ExecutableDir()), {},
                {"reinstall ss"});
  }
  return path;
}

}  // namespace

QemuBackend::QemuBackend(std::string state_dir) : state_dir_(std::move(state_dir)) {}

std::string QemuBackend::MachineDir(const std::string& name) const {
  return Cat(state_dir_, "/qemu/", name);
}

Probe QemuBackend::CheckHost() {
  Probe p;
  for (const char* tool : {kQemu, "qemu-img"}) {
    if (!FindInPath(tool)) {
      p.reason = Cat("QEMU is not installed (no ", tool, ")");
      p.fix = "install it: ss vm setup --backend qemu";
      return p;
    }
  }
  ProcessOptions o;
  o.timeout = std::chrono::seconds(10);
  ProcessResult version = Run({kQemu, "--version"}, o);
  if (!version.ok()) {
    std::string err(Trim(version.err.empty() ? version.out : version.err));
    p.reason = Cat("QEMU does not run (", err.empty() ? "no answer" : err, ")");
    p.fix = "install it: ss vm setup --backend qemu";
    return p;
  }
  if (!IsoTool()) {
    p.reason = "no tool to make the NoCloud seed (genisoimage, mkisofs or xorrisofs)";
    p.fix = "install it: ss vm setup --backend qemu";
    return p;
  }
  Accel accel = DetectAccel();
  p.usable = true;
  p.degraded = !accel.hardware();
  p.reason = accel.reason;
  return p;
}

SandboxState QemuBackend::State(const std::string& name) {
  QemuPaths paths(MachineDir(name));
  if (!PathExists(paths.config)) return SandboxState::kNotExists;
  {
    MachineLock lock(paths.lock);
    if (lock.held()) {
      // Nothing runs: whatever a vanished supervisor left is cleaned up now.
      CleanUpStale(paths);
      return SandboxState::kStopped;
    }
  }
  std::optional<Json> run = ReadRunFile(paths);
  if (!run || !run->contains("ssh_port") || (*run)["ssh_port"].get<int>() == 0) {
    return SandboxState::kStarting;
  }
  try {
    QmpClient qmp(paths.Qmp(), std::chrono::seconds(3));
    std::string status = qmp.Execute("query-status").value("status", "");
    if (status == "running") return SandboxState::kRunning;
    if (status == "prelaunch" || status == "inmigrate" || status == "restore-vm" ||
        status == "finish-migrate" || status == "postmigrate" || status == "shutdown" ||
        status == "save-vm") {
      return SandboxState::kStarting;
    }
    return SandboxState::kBroken;  // paused, suspended, internal-error, io-error, guest-panicked
  } catch (const Error&) {
    // The supervisor holds the lock but QEMU does not answer. When QEMU has ended (the guest
    // powered itself off, or it crashed), the supervisor stops virtiofsd (7 s at most, longer on
    // a busy host) before it lets go: the machine is stopping, not broken.
    bool qemu_ended = run->contains("qemu") && !ProcessFromJson((*run)["qemu"]).Alive();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(qemu_ended ? 30 : 0);
    while (true) {
      MachineLock lock(paths.lock);
      if (lock.held()) {
        CleanUpStale(paths);
        return SandboxState::kStopped;
      }
      if (std::chrono::steady_clock::now() >= deadline) return SandboxState::kBroken;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

void QemuBackend::Create(const SandboxSpec& spec, Progress& progress) {
  QemuPaths paths(MachineDir(spec.name));
  if (PathExists(paths.config)) {
    throw Error(kExitCantCreate, Cat("a QEMU machine called '", spec.name, "' already exists"));
  }
  std::optional<std::string> iso = IsoTool();
  if (!iso) {
    throw Error(kExitUnavailable, "no tool to make the NoCloud seed (genisoimage)", {},
                {"install it: ss vm setup --backend qemu"});
  }
  VmImage image = VmImageFiles(spec.image_dir);
  progress.Step(Cat("creating QEMU machine '", spec.name, "'"));
  // Everything is made aside and moved in place at the end: a machine directory with a
  // machine.json is always complete.
  std::string tmp = paths.dir + ".new";
  RemoveTree(paths.dir);
  RemoveTree(tmp);
  MakeDirs(tmp, 0700);
  try {
    // The machine keeps its own link (or copy) of the image's files, so that rebuilding or
    // removing the image never changes the base under its overlay.
    std::string base_dir = Cat(state_dir_, "/qemu/images/", spec.image_id);
    if (!PathExists(base_dir + "/base.qcow2")) {
      std::string staging = base_dir + ".new";
      RemoveTree(staging);
      MakeDirs(staging, 0755);
      for (const auto& [from, to] :
           {std::pair{image.disk, "base.qcow2"}, std::pair{image.kernel, "vmlinuz"},
            std::pair{image.initrd, "initrd.img"}}) {
        std::string dest = Cat(staging, "/", to);
        if (::link(from.c_str(), dest.c_str()) != 0) {
          progress.Step(Cat("copying ", Basename(from), " of image ", spec.image_id));
          RunChecked({"cp", "--sparse=always", from, dest}, "cannot copy the image", {},
                     kExitIoErr);
        }
      }
      RemoveTree(base_dir);
      if (::rename(staging.c_str(), base_dir.c_str()) != 0) {
        throw Error(kExitIoErr, Cat("cannot move ", staging, ": ", std::strerror(errno)));
      }
    }
    QemuPaths made(tmp);
    int64_t disk = std::max<int64_t>(spec.resources.disk, 0);
    RunChecked({"qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b",
                base_dir + "/base.qcow2", made.disk},
               "cannot create the VM disk", {}, kExitIoErr);
    if (disk > 0 && VirtualSize(made.disk) < disk) {
      RunChecked({"qemu-img", "resize", "-q", made.disk, std::to_string(disk)},
                 "cannot size the VM disk", {}, kExitIoErr);
    }

    // The seed: cloud-init's user-data (which holds the host key: 0600) and meta-data, and the
    // shares to mount.
    std::string seed_dir = tmp + "/seed";
    MakeDirs(seed_dir, 0700);
    AtomicWrite(seed_dir + "/user-data", QemuUserData(spec.user_data), 0600);
    AtomicWrite(seed_dir + "/meta-data", spec.meta_data, 0600);
    std::string mounts;
    Json shares = Json::array();
    for (const auto& m : spec.mounts) {
      mounts += Cat(m.name, " ", m.target, " ", m.read_only ? "ro" : "rw", "\n");
      shares.push_back({{"tag", m.name},
                        {"source", m.source},
                        {"target", m.target},
                        {"read_only", m.read_only}});
    }
    AtomicWrite(seed_dir + "/ss-mounts", mounts, 0600);
    RunChecked({*iso, "-quiet", "-output", made.seed, "-volid", "cidata", "-joliet", "-rock",
                seed_dir + "/user-data", seed_dir + "/meta-data", seed_dir + "/ss-mounts"},
               "cannot make the NoCloud seed", {}, kExitIoErr);
    ::chmod(made.seed.c_str(), 0600);
    RemoveTree(seed_dir);

    Json machine = JsonDocument("QemuMachine");
    machine["name"] = spec.name;
    machine["image_id"] = spec.image_id;
    machine["kernel"] = base_dir + "/vmlinuz";
    machine["initrd"] = base_dir + "/initrd.img";
    machine["append"] = VmImage::kKernelArgs;
    machine["cpus"] = spec.resources.cpus > 0 ? spec.resources.cpus : 2;
    machine["memory_mib"] = spec.resources.memory > 0 ? spec.resources.memory / kMiB : 2048;
    machine["disk_bytes"] = VirtualSize(made.disk);
    machine["ssh_port"] = FreeLoopbackPort();
    machine["shares"] = shares;
    machine["owner"] = {spec.host_uid, spec.host_gid};
    machine["created"] = FormatRfc3339(NowSeconds());
    WriteMachine(made, machine);
    if (::rename(tmp.c_str(), paths.dir.c_str()) != 0) {
      throw Error(kExitIoErr, Cat("cannot move ", tmp, ": ", std::strerror(errno)));
    }
  } catch (...) {
    RemoveTree(tmp);
    throw;
  }
  progress.Step(Cat("booting '", spec.name, "' (", DetectAccel().kind, ")"));
  try {
    // ss-net runs before the guest's first packet (its relays fail closed until then anyway).
    if (spec.before_first_boot) spec.before_first_boot();
    Start(spec.name, spec.resources);
  } catch (...) {
    Delete(spec.name);
    throw;
  }
}

void QemuBackend::ApplyResources(const std::string& name, const Resources& r) {
  QemuPaths paths(MachineDir(name));
  Json machine = ReadMachine(paths);
  if (r.cpus > 0) machine["cpus"] = r.cpus;
  if (r.memory > 0) machine["memory_mib"] = r.memory / kMiB;
  int64_t current = VirtualSize(paths.disk);
  if (r.disk > current) {
    // The guest grows its filesystem to the disk on its next boot (cloud-init's resizefs, which
    // runs on later boots only when asked: cloud-init/qemu.yaml).
    RunChecked({"qemu-img", "resize", "-q", paths.disk, std::to_string(r.disk)},
               Cat("cannot grow the disk of '", name, "'"), {}, kExitIoErr);
    current = r.disk;
    machine["grow_filesystem"] = true;
  } else if (r.disk > 0 && r.disk < current) {
    Warn(Cat("the disk of '", name, "' is ", FormatSizeHuman(current), " and cannot shrink to ",
             FormatSizeHuman(r.disk), "; reset the sandbox to get a smaller one"));
  }
  machine["disk_bytes"] = current;
  WriteMachine(paths, machine);
}

void QemuBackend::Start(const std::string& name, const Resources& resources) {
  QemuPaths paths(MachineDir(name));
  if (!PathExists(paths.config)) {
    throw Error(kExitNoInput, Cat("QEMU machine '", name, "' does not exist"));
  }
  MachineLock lock(paths.lock);
  if (!lock.held()) return;  // already running (or being started by another ss)
  CleanUpStale(paths);
  ApplyResources(name, resources);
  Json machine = ReadMachine(paths);
  for (const char* key : {"kernel", "initrd"}) {
    if (!PathExists(machine.value(key, ""))) {
      throw Error(kExitNoInput,
                  Cat("the ", key, " of '", name, "' is missing (", machine.value(key, ""), ")"),
                  {}, {Cat("recreate the sandbox: ss vm reset --sandbox ", name)});
    }
  }
  QemuEnsureViews(paths.dir, machine);
  try {
    LaunchSupervisor(paths, lock.fd(), SupervisorBinary(), kLaunchTimeout);
  } catch (Error& e) {
    throw Error(e.code(), Cat("cannot start '", name, "': ", e.what()), e.details(), e.hints());
  }
  if (machine.contains("grow_filesystem")) {  // asked of this boot only
    machine.erase("grow_filesystem");
    WriteMachine(paths, machine);
  }
}

void QemuBackend::StopMachine(const std::string& name, std::chrono::seconds timeout) {
  QemuPaths paths(MachineDir(name));
  if (!PathExists(paths.config)) return;
  using Clock = std::chrono::steady_clock;
  // True once nothing runs (and what was left is cleaned up).
  auto stopped_within = [&](std::chrono::milliseconds wait) {
    auto deadline = Clock::now() + wait;
    while (true) {
      {
        MachineLock lock(paths.lock);
        if (lock.held()) {
          CleanUpStale(paths);
          return true;
        }
      }
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  };
  if (stopped_within(std::chrono::milliseconds(0))) return;
  auto ask = [&](const std::string& command) {
    try {
      QmpClient qmp(paths.Qmp(), std::chrono::seconds(5));
      qmp.Execute(command);
    } catch (const Error& e) {
      Debug(Cat("qemu: ", command, ": ", e.what()));
    }
  };
  if (timeout.count() > 0) {
    // ACPI power button: the guest shuts down cleanly (unless it is still booting and misses
    // it, hence the timeout).
    ask("system_powerdown");
    if (stopped_within(timeout)) return;
    Debug(Cat("qemu: '", name, "' did not power down within ", timeout.count(), "s; quitting"));
  }
  ask("quit");
  if (stopped_within(std::chrono::seconds(10))) return;
  // QEMU does not answer: kill it, and its supervisor if that does not end either.
  std::optional<Json> run = ReadRunFile(paths);
  if (run && run->contains("qemu")) {
    ProcessId qemu{(*run)["qemu"].value("pid", 0), (*run)["qemu"].value("start", uint64_t{0})};
    if (qemu.Alive()) ::kill(qemu.pid, SIGKILL);
  }
  if (stopped_within(std::chrono::seconds(5))) return;
  if (run && run->contains("supervisor")) {
    ProcessId sup{(*run)["supervisor"].value("pid", 0),
                  (*run)["supervisor"].value("start", uint64_t{0})};
    if (sup.Alive()) ::kill(sup.pid, SIGKILL);
  }
  if (!stopped_within(std::chrono::seconds(5))) {
    throw Error(kExitTempFail, Cat("cannot stop '", name, "': its processes do not end"), {},
                {Cat("see ", paths.supervisor_log)});
  }
}

void QemuBackend::Stop(const std::string& name, std::chrono::seconds timeout) {
  StopMachine(name, timeout);
}

void QemuBackend::Delete(const std::string& name) {
  QemuPaths paths(MachineDir(name));
  if (!IsDirectory(paths.dir)) return;
  if (PathExists(paths.config)) StopMachine(name, std::chrono::seconds(0));
  std::string image_id;
  try {
    image_id = ReadMachine(paths).value("image_id", "");
  } catch (const Error&) {
  }
  RemoveViews(QemuViewsDir(paths.dir));
  RemoveTree(paths.dir);
  if (paths.socket_dir != paths.dir) RemoveTree(paths.socket_dir);
  // The image's files go with the last machine that uses them.
  if (image_id.empty()) return;
  std::string machines = state_dir_ + "/qemu";
  if (!IsDirectory(machines)) return;
  bool used = false;
  for (const auto& entry : ListDir(machines)) {
    if (entry == "images") continue;
    auto text = ReadFileIfExists(Cat(machines, "/", entry, "/machine.json"));
    used = used || (text && text->find(Cat("\"", image_id, "\"")) != std::string::npos);
  }
  if (!used) RemoveTree(Cat(machines, "/images/", image_id));
}

SandboxStatus QemuBackend::Status(const std::string& name) {
  SandboxStatus s;
  s.state = State(name);
  if (s.state == SandboxState::kNotExists) return s;
  QemuPaths paths(MachineDir(name));
  Json machine = ReadMachine(paths);
  s.limits.cpus = machine.value("cpus", 0);
  s.limits.memory = machine.value("memory_mib", int64_t{0}) * kMiB;
  s.limits.disk = machine.value("disk_bytes", int64_t{0});
  std::vector<std::string> notes;
  std::optional<Json> run = ReadRunFile(paths);
  if (run && s.state != SandboxState::kStopped) {
    notes.push_back(run->value("accel_reason", ""));
    for (const auto& share : (*run)["shares"]) {
      notes.push_back(Cat("'", share.value("tag", ""), "' shared with ", share.value("type", "")));
    }
    if (auto started = ParseRfc3339(run->value("started_at", ""))) {
      s.uptime_seconds = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now() - *started)
                             .count();
    }
    s.address = "10.0.2.15 (QEMU user network)";
    if (run->value("network", "") != "restricted") {
      notes.push_back(
          "its network is open: it was started before ss restricted QEMU's network; restart it");
    }
  } else {
    notes.push_back(DetectAccel().reason);
  }
  if (s.state == SandboxState::kStopped) {
    if (auto text = ReadFileIfExists(paths.last_exit)) {
      try {
        Json exit = Json::parse(*text);
        if (!exit.value("clean", true)) {
          notes.push_back(Cat("it last stopped unexpectedly: ", exit.value("reason", "?"), " (",
                              exit.value("at", ""), ")"));
        }
      } catch (const Json::exception&) {
      }
    }
  }
  s.detail = Join(notes, "; ");
  return s;
}

std::optional<EgressLink> QemuBackend::Egress(const std::string& name) {
  QemuPaths paths(MachineDir(name));
  if (!PathExists(paths.config)) return std::nullopt;
  // A machine started before its network was restricted keeps its open network until it
  // restarts (its command line is made at every start): not fenced, and not said to be.
  if (State(name) != SandboxState::kStopped) {
    std::optional<Json> run = ReadRunFile(paths);
    if (run && run->value("network", "") != "restricted") return std::nullopt;
  }
  EgressLink link;  // no interface: QemuNetdev's restrict=on fences it
  link.gateway = kQemuEgressAddress;
  return link;
}

SshTarget QemuBackend::Ssh(const std::string& name) {
  QemuPaths paths(MachineDir(name));
  if (!PathExists(paths.config)) {
    throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"));
  }
  SshTarget t;
  t.host = "127.0.0.1";
  std::optional<Json> run = ReadRunFile(paths);
  t.port = run && run->value("ssh_port", 0) > 0 ? run->value("ssh_port", 0)
                                                : ReadMachine(paths).value("ssh_port", 0);
  return t;
}

std::string QemuBackend::ConsoleLog(const std::string& name) const {
  return QemuPaths(MachineDir(name)).console_log;
}

void QemuBackend::RequireStopped(const std::string& name, std::string_view what) {
  SandboxState state = State(name);
  if (state == SandboxState::kNotExists) {
    throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"));
  }
  if (state != SandboxState::kStopped) {
    throw Error(kExitTempFail, Cat("cannot ", what, " while '", name, "' runs"), {},
                {Cat("stop it first: ss vm stop --sandbox ", name)});
  }
}

// Snapshots are qcow2 internal snapshots of the machine's disk. While the machine is stopped,
// qemu-img makes them (the disk is consistent: the guest shut down cleanly). While it runs, QEMU
// makes them through QMP without pausing the guest: the disk as it is at that instant, as after a
// power cut, which is what a snapshot of a running LXD or Docker sandbox holds too (the guest's
// journaling filesystem recovers it). Restoring needs the machine stopped (ss stops it first).
// External overlays would turn the disk into a chain to manage; not worth it here.
// Restoring brings back the whole disk (the projects, on the host, are not in it).
void QemuBackend::TakeSnapshot(const std::string& name, const std::string& snapshot) {
  QemuPaths paths(MachineDir(name));
  SandboxState state = State(name);
  if (state == SandboxState::kNotExists) {
    throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"));
  }
  for (const auto& s : Snapshots(name)) {
    if (s.name == snapshot) {
      throw Error(kExitCantCreate, Cat("'", name, "' already has a snapshot '", snapshot, "'"));
    }
  }
  if (state != SandboxState::kStopped) {
    Live(paths, "blockdev-snapshot-internal-sync", snapshot, Cat("cannot snapshot '", name, "'"));
    return;
  }
  RunChecked({"qemu-img", "snapshot", "-c", snapshot, paths.disk},
             Cat("cannot snapshot '", name, "'"), {}, kExitIoErr);
}

void QemuBackend::RestoreSnapshot(const std::string& name, const std::string& snapshot) {
  RequireStopped(name, "restore a snapshot");
  RequireSnapshot(*this, name, snapshot);
  QemuPaths paths(MachineDir(name));
  RunChecked({"qemu-img", "snapshot", "-a", snapshot, paths.disk},
             Cat("cannot restore '", name, "' to '", snapshot, "'"), {}, kExitIoErr);
}

void QemuBackend::DeleteSnapshot(const std::string& name, const std::string& snapshot) {
  RequireSnapshot(*this, name, snapshot);
  QemuPaths paths(MachineDir(name));
  if (State(name) != SandboxState::kStopped) {
    Live(paths, "blockdev-snapshot-delete-internal-sync", snapshot,
         Cat("cannot delete snapshot '", snapshot, "'"));
    return;
  }
  RunChecked({"qemu-img", "snapshot", "-d", snapshot, paths.disk},
             Cat("cannot delete snapshot '", snapshot, "'"), {}, kExitIoErr);
}

std::vector<Snapshot> QemuBackend::Snapshots(const std::string& name) {
  QemuPaths paths(MachineDir(name));
  std::vector<Snapshot> out;
  if (!PathExists(paths.disk)) return out;
  Json info = Json::parse(RunChecked({"qemu-img", "info", "-U", "--output=json", paths.disk},
                                     "cannot read the VM disk", {}, kExitIoErr));
  for (const auto& s : info.value("snapshots", Json::array())) {
    Snapshot snap;
    snap.name = s.value("name", "");
    snap.created = std::chrono::system_clock::time_point(
        std::chrono::seconds(s.value("date-sec", int64_t{0})));
    out.push_back(snap);
  }
  return out;
}

}  // namespace ss
