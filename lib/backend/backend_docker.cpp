// The Docker and Podman backends: a system container per sandbox, as the LXD one, but through a
// container engine most users already have.
//
// A sandbox is a container named after the sandbox, labelled ss.sandbox=true (ss never touches a
// container it did not create), made from the base image imported into the engine once, with:
//   - systemd as PID 1 in its own cgroup namespace, on a private cgroup tmpfs (the host's
//     /sys/fs/cgroup is never mounted in), and the capabilities systemd and a nested dockerd
//     need: all but a few that reach the host (not --privileged, which also fails where the
//     host lacks a capability, e.g. CAP_SYS_RESOURCE);
//   - /var/lib/docker on a volume of its own, so docker inside gets overlay2 on a real
//     filesystem;
//   - the shared folders bind-mounted; there is no user namespace, so host uid 1000 is the
//     sandbox user: folders of another owner (root too) go through an id-mapped view
//     (idmap_view.hpp), which only root can mount. Root in the sandbox may remount a bind
//     read-write, so a read-only folder is a volume of its own instead: an overlay the engine
//     mounts read-only on the host (the folder over an empty layer, no upper one), which no
//     remount inside makes writable (Docker; Podman's volumes cannot be, and are refused);
//   - SSH published on 127.0.0.1 at a port the engine picks when the container starts (nothing
//     to race for);
//   - the cloud-init NoCloud seed copied into /var/lib/cloud/seed/nocloud before first boot.
// This is much weaker isolation than LXD (user namespace) or a VM: root in the sandbox holds
// CAP_SYS_ADMIN and no seccomp filter. `auto` prefers those.
#include "backend_docker.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "error.hpp"
#include "fs.hpp"
#include "idmap_view.hpp"
#include "image.hpp"
#include "net_fence.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "size.hpp"
#include "strings.hpp"
#include "subnet.hpp"

namespace ss {
namespace {

constexpr const char* kMarkLabel = "ss.sandbox";
constexpr const char* kSpecLabel = "ss.spec";
// On the volumes of read-only folders: the sandbox they belong to.
constexpr const char* kNameLabel = "ss.sandbox.name";

// Capabilities left out of "ALL": they reach the host (modules, raw I/O, clock, reboot, MAC
// policy, kernel log, the immutable and append-only flags of the host's files in the shared
// folders, which would keep the user, and ss, from changing or moving them, and opening files by
// handle, which reaches every file of a shared folder's disk: open_by_handle_at from the
// folder's descriptor), and CAP_SYS_RESOURCE, which an unprivileged host may not have to give.
const char* const kDroppedCaps[] = {
    "SYS_RESOURCE",  "SYS_MODULE",      "SYS_RAWIO",      "SYS_BOOT",   "SYS_TIME",
    "MAC_ADMIN",     "MAC_OVERRIDE",    "SYSLOG",         "WAKE_ALARM", "BLOCK_SUSPEND",
    "AUDIT_CONTROL", "LINUX_IMMUTABLE", "DAC_READ_SEARCH"};

std::string VolumeName(const std::string& name) { return Cat("ss-", name, "-docker"); }
// The sandbox's own network, and its bridge (an interface name: 15 characters at most).
std::string NetworkName(const std::string& name) { return Cat("ss-", name, "-net"); }

// A --mount value; a field holding a comma or a quote is quoted as CSV.
std::string MountField(const std::string& key, const std::string& value) {
  std::string field = Cat(key, "=", value);
  if (field.find_first_of(",\"") == std::string::npos) return field;
  std::string quoted = "\"";
  for (char c : field) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string CpusValue(int cpus) { return std::to_string(cpus); }

bool DaemonDown(std::string_view err) {
  return err.find("Cannot connect to the Docker daemon") != std::string_view::npos ||
         err.find("Is the docker daemon running") != std::string_view::npos ||
         err.find("unable to connect to Podman") != std::string_view::npos ||
         err.find("Cannot connect to Podman") != std::string_view::npos;
}

bool NoSuchObject(std::string_view err) {
  return err.find("No such") != std::string_view::npos ||
         err.find("no such") != std::string_view::npos;
}

}  // namespace

ContainerEngine FindEngine(const std::string& name) {
  ContainerEngine e;
  e.name = name;
  e.display = name == "docker" ? "Docker" : "Podman";
  // The client the user would run: the first on PATH (a newer client negotiates down to an
  // older daemon).
  e.client = FindInPath(name).value_or(name);
  return e;
}

ContainerRlimits HostRlimits() {
  ContainerRlimits r;
  rlimit nofile{}, nproc{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  ::getrlimit(RLIMIT_NPROC, &nproc);
  r.nofile = std::min<uint64_t>(nofile.rlim_max, 1048576);
  uint64_t pid_max = 4194304;
  if (auto text = ReadFileIfExists("/proc/sys/kernel/pid_max")) {
    try {
      pid_max = std::stoull(std::string(Trim(*text)));
    } catch (const std::exception&) {
    }
  }
  r.nproc = std::min<uint64_t>({static_cast<uint64_t>(nproc.rlim_max), pid_max, 4194304});
  return r;
}

std::string ContainerImageRef(const std::string& engine, const std::string& image_id) {
  return Cat(engine == "podman" ? "localhost/" : "", "ss-sandbox:", image_id);
}

std::string ContainerViewsDir(const std::string& engine, const std::string& name) {
  return ViewsDir(Cat(engine, ":", name));
}

bool ContainerNeedsViews(const SandboxSpec& spec) { return spec.host_uid != kSandboxUserId; }

std::string ReadOnlyVolume(const std::string& name, const Mount& m) {
  return Cat("ss-", name, "-", m.name);
}

std::vector<std::string> ContainerCreateArgs(const std::string& engine, const SandboxSpec& spec,
                                             const std::string& image_ref,
                                             const ContainerRlimits& rlimits, bool have_fuse) {
  Json recorded = {{"image", spec.image_id},
                   {"owner", {spec.host_uid, spec.host_gid}},
                   {"mounts", Json::array()}};
  for (const auto& m : spec.mounts) recorded["mounts"].push_back(MountToJson(m));
  std::vector<std::string> a{"create",
                             "--name",
                             spec.name,
                             "--hostname",
                             spec.name,
                             "--label",
                             Cat(kMarkLabel, "=true"),
                             "--label",
                             Cat(kSpecLabel, "=", DumpJson(recorded)),
                             "--cap-add",
                             "ALL"};
  for (const char* cap : kDroppedCaps) a.insert(a.end(), {"--cap-drop", cap});
  a.insert(a.end(), {"--security-opt", "seccomp=unconfined"});
  if (engine == "docker") {
    a.insert(a.end(),
             {"--security-opt", "apparmor=unconfined", "--security-opt", "systempaths=unconfined"});
  } else {
    // Podman: no cgroup mounts of its own (systemd makes them, writable, in its namespace), the
    // console and tun devices a nested runc needs, and limits this host can grant.
    a.insert(a.end(), {"--systemd=false", "--security-opt", "unmask=ALL", "--device-cgroup-rule",
                       "c 5:1 rwm", "--device-cgroup-rule", "c 10:200 rwm", "--ulimit",
                       Cat("nproc=", rlimits.nproc, ":", rlimits.nproc)});
  }
  // Every process's open files, soft and hard (root inside lacks CAP_SYS_RESOURCE to raise
  // them): the sandbox's setting, never more than this process may grant (Podman asks for its
  // own default of 1048576 otherwise, which fails without CAP_SYS_RESOURCE).
  uint64_t nofile = rlimits.nofile;
  if (spec.resources.open_files > 0) {
    nofile = std::min<uint64_t>(nofile, static_cast<uint64_t>(spec.resources.open_files));
  }
  if (engine != "docker" || spec.resources.open_files > 0) {
    a.insert(a.end(), {"--ulimit", Cat("nofile=", nofile, ":", nofile)});
  }
  // The cgroup's pids limit: a fork bomb inside takes the sandbox's tasks, not the host's.
  if (spec.resources.processes > 0) {
    a.insert(a.end(), {"--pids-limit", std::to_string(spec.resources.processes)});
  }
  if (have_fuse) a.insert(a.end(), {"--device", "/dev/fuse"});
  a.insert(a.end(), {"--cgroupns", "private", "--tmpfs",
                     "/sys/fs/cgroup:rw,nosuid,nodev,noexec,mode=755", "--tmpfs",
                     "/run:exec,mode=755", "--tmpfs", "/run/lock", "--tmpfs", "/tmp:exec,mode=1777",
                     "--stop-signal", "SIGRTMIN+3", "--env", Cat("container=", engine)});
  bool views = ContainerNeedsViews(spec);
  for (const auto& m : spec.mounts) {
    if (m.read_only) {
      a.insert(a.end(), {"--mount", Cat("type=volume,source=", ReadOnlyVolume(spec.name, m), ",",
                                        MountField("target", m.target), ",readonly")});
      continue;
    }
    std::string source = views ? Cat(ContainerViewsDir(engine, spec.name), "/", m.name) : m.source;
    a.insert(a.end(), {"--mount", Cat("type=bind,", MountField("source", source), ",",
                                      MountField("target", m.target))});
  }
  a.insert(a.end(), {"--mount",
                     Cat("type=volume,source=", VolumeName(spec.name), ",target=/var/lib/docker")});
  if (!spec.network.empty()) a.insert(a.end(), {"--network", spec.network, "--dns", spec.dns});
  a.insert(a.end(), {"--publish", "127.0.0.1::22"});
  if (spec.resources.cpus > 0) a.insert(a.end(), {"--cpus", CpusValue(spec.resources.cpus)});
  if (spec.resources.memory > 0) {
    a.insert(a.end(), {"--memory", std::to_string(spec.resources.memory), "--memory-swap",
                       std::to_string(spec.resources.memory)});
  }
  a.insert(a.end(), {image_ref, "/sbin/init"});
  return a;
}

int64_t ParseEngineTime(const std::string& text) {
  if (text.size() < 19 || text.rfind("0001-01-01", 0) == 0) return -1;
  std::tm tm{};
  std::string head = text.substr(0, 19);
  head[10] = 'T';
  if (!::strptime(head.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return -1;
  return static_cast<int64_t>(::timegm(&tm));
}

ContainerBackend::ContainerBackend(const std::string& engine) : engine_(FindEngine(engine)) {}

std::string ContainerBackend::Cli(const std::vector<std::string>& args, std::string_view what,
                                  std::chrono::seconds timeout,
                                  const std::optional<std::string>& input) {
  std::vector<std::string> argv{engine_.client};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout = timeout;
  o.input = input;
  // Podman copies what it reads on stdin to a file in $TMPDIR and, before 4.7, leaves it there;
  // the seed, which holds the sandbox's host key, is such an input. It goes to a folder of ours.
  std::optional<TempDir> scratch;
  if (input) {
    scratch.emplace();
    o.env.emplace_back("TMPDIR", scratch->path());
  }
  ProcessResult r = Run(argv, o);
  if (r.ok()) return r.out;
  std::string err(Trim(r.err.empty() ? r.out : r.err));
  if (DaemonDown(err)) {
    throw Error(kExitUnavailable, Cat("the ", engine_.display, " daemon is not running"),
                {Cat("  ", err)}, {Cat("start it: ss vm setup --backend ", engine_.name)});
  }
  if (err.rfind("Error: ", 0) == 0) err = err.substr(7);
  if (err.rfind("Error response from daemon: ", 0) == 0) err = err.substr(28);
  if (r.timed_out) err = Cat("no answer from ", engine_.display, " after ", timeout.count(), "s");
  throw Error(kExitUnavailable, Cat(what, ": ", err));
}

Probe ContainerBackend::CheckHost() {
  Probe p;
  if (!FindInPath(engine_.client)) {
    p.reason = Cat(engine_.display, " is not installed");
    p.fix = Cat("install it: ss vm setup --backend ", engine_.name);
    return p;
  }
  ProcessOptions o;
  o.timeout = std::chrono::seconds(10);
  ProcessResult r = Run({engine_.client, "version", "--format",
                         engine_.name == "docker" ? "{{.Server.Version}}" : "{{.Version}}"},
                        o);
  std::string err(Trim(r.err));
  if (!r.ok() || Trim(r.out).empty()) {
    if (engine_.name == "docker") {
      p.reason = Cat("the Docker daemon is not running (", err.empty() ? "no answer" : err, ")");
      p.fix = "start it: ss vm setup --backend docker";
    } else {
      p.reason = Cat("podman does not work (", err.empty() ? "no answer" : err, ")");
      p.fix = "set it up: ss vm setup --backend podman";
    }
    return p;
  }
  p.usable = true;
  p.reason = Cat(engine_.display, " ", Trim(r.out), " (", engine_.client, ")");
  return p;
}

Json ContainerBackend::Inspect(const std::string& name) {
  std::vector<std::string> argv{engine_.client, "container", "inspect", name};
  ProcessOptions o;
  o.timeout = std::chrono::seconds(30);
  ProcessResult r = Run(argv, o);
  if (!r.ok()) {
    std::string err(Trim(r.err));
    if (DaemonDown(err)) Cli({"container", "inspect", name}, "");  // throws the daemon error
    if (NoSuchObject(err)) return Json();
    throw Error(kExitUnavailable,
                Cat(engine_.display, " did not describe container '", name, "': ", err));
  }
  Json list = Json::parse(r.out, nullptr, false);
  if (!list.is_array() || list.empty()) return Json();
  Json c = list[0];
  const Json& labels = c["Config"]["Labels"];
  if (!labels.is_object() || labels.value(kMarkLabel, "") != "true") {
    throw Error(
        kExitCantCreate,
        Cat(engine_.display, " already has a container called '", name, "' that ss did not create"),
        {}, {"pick another sandbox name with --sandbox, or rename that container"});
  }
  return c;
}

SandboxState ContainerBackend::State(const std::string& name) {
  Json c = Inspect(name);
  if (c.is_null()) return SandboxState::kNotExists;
  std::string status = ToLower(c["State"].value("Status", ""));
  if (status == "running") return SandboxState::kRunning;
  if (status == "created" || status == "exited" || status == "stopped" || status == "configured" ||
      status == "initialized") {
    return SandboxState::kStopped;
  }
  if (status == "restarting" || status == "stopping" || status == "removing") {
    return SandboxState::kStarting;
  }
  return SandboxState::kBroken;  // paused, dead
}

void ContainerBackend::EnsureImage(const std::string& image_id, const std::string& image_dir,
                                   Progress& progress) {
  std::string ref = ContainerImageRef(engine_.name, image_id);
  auto present = [&] {
    ProcessOptions o;
    o.timeout = std::chrono::seconds(30);
    return Run({engine_.client, "image", "inspect", ref}, o).ok();
  };
  if (present()) return;
  // One import at a time per engine and image; the next one finds it done.
  // (The lock is this user's: the image cache may be root's, built with sudo.)
  FileLock lock(Cat(RuntimeDir(), "/import-", image_id, ".", engine_.name, ".lock"));
  if (present()) return;
  progress.Step(Cat("importing image ", image_id, " into ", engine_.display, " (once)"));
  Cli({"import", "--change", "CMD [\"/sbin/init\"]", "--change",
       Cat("ENV container=", engine_.name), ContainerTarball(image_dir), ref},
      Cat("cannot import image ", image_id, " into ", engine_.display), std::chrono::minutes(20));
}

bool ContainerBackend::RemoveImageCopy(const std::string& image_id) {
  std::string ref = ContainerImageRef(engine_.name, image_id);
  ProcessOptions o;
  o.timeout = std::chrono::seconds(30);
  if (!Run({engine_.client, "image", "inspect", ref}, o).ok()) return false;
  // Refused while a container (a sandbox) is made from it: the engine's words say which.
  Cli({"rmi", ref}, Cat("cannot remove image ", image_id, " from ", engine_.display));
  return true;
}

namespace {

// The spec a container was made with, from its label (made before owners were recorded: 1000).
SandboxSpec RecordedSpec(const std::string& name, const Json& container) {
  Json recorded =
      Json::parse(container["Config"]["Labels"].value(kSpecLabel, "{}"), nullptr, false);
  SandboxSpec spec;
  spec.name = name;
  spec.image_id = recorded.value("image", "");
  Json owner = recorded.value("owner", Json::array({kSandboxUserId, kSandboxUserId}));
  spec.host_uid = owner[0].get<uid_t>();
  spec.host_gid = owner[1].get<gid_t>();
  for (const auto& m : recorded.value("mounts", Json::array())) {
    spec.mounts.push_back(MountFromJson(m));
  }
  return spec;
}

}  // namespace

void ContainerBackend::EnsureViews(const SandboxSpec& spec) {
  for (const auto& m : spec.mounts) {
    if (!m.read_only) continue;
    if (engine_.name != "docker") {
      throw Error(
          kExitUnavailable,
          Cat(engine_.display, " cannot keep ", m.source, " read-only against root in the sandbox"),
          {}, {"share it read-write, or use the docker, lxd or qemu backend for it"});
    }
    if (m.source.find_first_of(",:\\") != std::string::npos) {
      throw Error(kExitUsage,
                  Cat("a read-only folder of a Docker sandbox cannot have ',', ':' or '\\' ",
                      "in its path: ", m.source),
                  {}, {"share a folder whose path has none of them"});
    }
    std::string volume = ReadOnlyVolume(spec.name, m);
    if (Run({engine_.client, "volume", "inspect", volume}).ok()) continue;
    std::string empty = StateDir() + "/empty";
    MakeDirs(empty, 0755);
    Cli({"volume", "create", "--driver", "local", "--label", Cat(kNameLabel, "=", spec.name),
         "--opt", "type=overlay", "--opt", "device=overlay", "--opt",
         Cat("o=ro,lowerdir=", m.source, ":", empty), volume},
        Cat("cannot share ", m.source, " read-only"));
  }
  if (!ContainerNeedsViews(spec)) return;
  for (const auto& m : spec.mounts) {
    if (m.read_only) continue;
    EnsureView(m.source, Cat(ContainerViewsDir(engine_.name, spec.name), "/", m.name),
               {spec.host_uid, spec.host_gid}, {kSandboxUserId, kSandboxUserId});
  }
}

void ContainerBackend::Create(const SandboxSpec& spec, Progress& progress) {
  if (ContainerNeedsViews(spec) && ::geteuid() != 0) {
    throw Error(kExitNoPerm,
                Cat(engine_.display, " sandboxes cannot share folders of uid ", spec.host_uid,
                    " without root"),
                {Cat("  the engine has no user namespace: the sandbox's user is uid ",
                     kSandboxUserId, " on this host, and only root can map your files to it")},
                {"run it with sudo, or use the LXD or QEMU backend (--backend lxd)"});
  }
  EnsureImage(spec.image_id, spec.image_dir, progress);
  EnsureViews(spec);
  progress.Step(Cat("creating ", engine_.display, " container '", spec.name, "'"));
  SandboxSpec applied = spec;
  applied.resources = Applicable(spec.resources, true);
  if (auto n = AttachNetwork(spec.name, true)) {
    applied.network = n->name;
    applied.dns = n->gateway;
  }
  try {
    Cli(ContainerCreateArgs(engine_.name, applied, ContainerImageRef(engine_.name, spec.image_id),
                            HostRlimits(), PathExists("/dev/fuse")),
        Cat("cannot create container '", spec.name, "'"), std::chrono::minutes(2));
  } catch (...) {
    Run({engine_.client, "network", "rm", NetworkName(spec.name)});
    throw;
  }
  try {
    // The seed goes in as a tar stream of files only (no directory entries, so no mode of an
    // existing directory changes); it holds the host key: root, 0600.
    std::string tar;
    {
      TempDir tmp;  // its files last as long as the packing, not the start
      std::string seed = tmp.path() + "/var/lib/cloud/seed/nocloud";
      MakeDirs(seed, 0755);
      AtomicWrite(seed + "/user-data", spec.user_data, 0600);
      AtomicWrite(seed + "/meta-data", spec.meta_data, 0600);
      tar = RunChecked(
          {"tar", "--numeric-owner", "--owner=0", "--group=0", "-C", tmp.path(), "-cf", "-",
           "var/lib/cloud/seed/nocloud/user-data", "var/lib/cloud/seed/nocloud/meta-data"},
          "cannot pack the seed");
    }
    Cli({"cp", "-", Cat(spec.name, ":/")}, Cat("cannot provision '", spec.name, "'"),
        std::chrono::seconds(60), tar);
    if (spec.before_first_boot) spec.before_first_boot();
    progress.Step(Cat("starting '", spec.name, "'"));
    Cli({"start", spec.name}, Cat("cannot start '", spec.name, "'"), std::chrono::minutes(2));
  } catch (...) {
    // Never leave a half-made sandbox behind.
    Run({engine_.client, "rm", "--force", spec.name});
    Run({engine_.client, "volume", "rm", "--force", VolumeName(spec.name)});
    RemoveReadOnlyVolumes(spec.name);
    Run({engine_.client, "network", "rm", NetworkName(spec.name)});
    RemoveViews(ContainerViewsDir(engine_.name, spec.name));
    throw;
  }
}

Resources ContainerBackend::Applicable(Resources r, bool say) {
  if (!limits_known_) {
    limits_known_ = true;
    // Docker says which limits this kernel's cgroups allow (Podman has no such keys: both).
    ProcessOptions o;
    o.timeout = std::chrono::seconds(30);
    ProcessResult info = Run({engine_.client, "info", "--format", "{{json .}}"}, o);
    Json j = info.ok() ? Json::parse(info.out, nullptr, false) : Json();
    if (j.is_object()) {
      cpu_limits_ = j.value("CpuCfsQuota", true) || !j.contains("CpuCfsQuota");
      memory_limits_ = j.value("MemoryLimit", true) || !j.contains("MemoryLimit");
    }
  }
  if (r.cpus > 0 && !cpu_limits_) {
    if (say)
      Warn(Cat(engine_.display, " cannot limit CPU time here (no CPU CFS cgroup): the sandbox's ",
               r.cpus, " CPUs are not enforced"));
    r.cpus = 0;
  }
  if (r.memory > 0 && !memory_limits_) {
    if (say)
      Warn(Cat(engine_.display, " cannot limit memory here (no memory cgroup): the sandbox's ",
               FormatSizeHuman(r.memory), " are not enforced"));
    r.memory = 0;
  }
  return r;
}

void ContainerBackend::Update(const std::string& name, const Resources& requested) {
  Resources r = Applicable(requested, false);
  std::vector<std::string> args{"update"};
  if (r.cpus > 0) args.insert(args.end(), {"--cpus", CpusValue(r.cpus)});
  if (r.memory > 0) {
    args.insert(args.end(),
                {"--memory", std::to_string(r.memory), "--memory-swap", std::to_string(r.memory)});
  }
  // Docker changes the pids limit of a container as it runs; Podman 4 only at its creation.
  if (r.processes > 0 && engine_.name == "docker") {
    args.insert(args.end(), {"--pids-limit", std::to_string(r.processes)});
  }
  if (args.size() == 1) return;
  args.push_back(name);
  Cli(args, Cat("cannot set the resources of '", name, "'"));
}

void ContainerBackend::Start(const std::string& name, const Resources& resources) {
  Json c = Inspect(name);
  if (!c.is_null()) EnsureViews(RecordedSpec(name, c));
  // Docker keeps limits set on a stopped container; Podman changes only a running one's cgroup.
  if (engine_.name == "docker") Update(name, resources);
  try {
    Cli({"start", name}, Cat("cannot start '", name, "'"), std::chrono::minutes(2));
  } catch (const Error& e) {
    // Podman keeps the host port it picked when the container was made; if something took it
    // while the sandbox was stopped, the container is made again (same filesystem, same volume)
    // with a new port.
    if (std::string(e.what()).find("address already in use") == std::string::npos) throw;
    Debug(Cat(engine_.name, ": the SSH port of '", name, "' is taken; recreating it"));
    std::string keep = Cat(KeepRepo(name), ":", std::time(nullptr));
    Cli({"commit", name, keep}, Cat("cannot keep the filesystem of '", name, "'"),
        std::chrono::minutes(10));
    Recreate(name, keep);
    Cli({"start", name}, Cat("cannot start '", name, "'"), std::chrono::minutes(2));
  }
  if (engine_.name != "docker") Update(name, resources);
}

void ContainerBackend::Stop(const std::string& name, std::chrono::seconds timeout) {
  // systemd halts on SIGRTMIN+3 (the container's stop signal); the engine kills after timeout.
  Cli({"stop", "--time", std::to_string(timeout.count()), name}, Cat("cannot stop '", name, "'"),
      timeout + std::chrono::seconds(60));
}

void ContainerBackend::Delete(const std::string& name) {
  if (!Inspect(name).is_null()) {
    Cli({"rm", "--force", name}, Cat("cannot delete '", name, "'"), std::chrono::minutes(2));
  }
  ProcessOptions o;
  o.timeout = std::chrono::seconds(60);
  Run({engine_.client, "volume", "rm", "--force", VolumeName(name)}, o);
  // Images made for this sandbox (a recreated filesystem, snapshots) go with it.
  for (const auto& repo : {KeepRepo(name), SnapshotRepo(name)}) {
    ProcessResult images =
        Run({engine_.client, "images", "--format", "{{.Repository}}:{{.Tag}}", repo}, o);
    for (const auto& ref : SplitLines(images.out)) {
      if (!Trim(ref).empty()) Run({engine_.client, "rmi", "--force", std::string(Trim(ref))}, o);
    }
  }
  RemoveReadOnlyVolumes(name);
  RemoveViews(ContainerViewsDir(engine_.name, name));
  Run({engine_.client, "network", "rm", NetworkName(name)}, o);
}

void ContainerBackend::RemoveReadOnlyVolumes(const std::string& name) {
  ProcessOptions o;
  o.timeout = std::chrono::seconds(60);
  ProcessResult volumes = Run(
      {engine_.client, "volume", "ls", "--quiet", "--filter", Cat("label=", kNameLabel, "=", name)},
      o);
  for (const auto& v : SplitLines(volumes.out)) {
    if (!Trim(v).empty()) Run({engine_.client, "volume", "rm", "--force", std::string(Trim(v))}, o);
  }
}

// The sandbox's own network, made with the sandbox: a bridge without masquerading or traffic
// between containers, so nothing leaves it but through the host, where the fence sends it to
// ss-net. Rootless Podman has no bridge on the host (its traffic leaves as the user's own
// sockets): it keeps the engine's network, which ss cannot fence.
std::optional<ContainerBackend::Network> ContainerBackend::AttachNetwork(const std::string& name,
                                                                         bool create) {
  bool podman = engine_.name != "docker";
  if (podman && ::geteuid() != 0) return std::nullopt;
  std::string network = NetworkName(name);
  ProcessResult r = Run({engine_.client, "network", "inspect", network});
  if (!r.ok()) {
    if (!create) return std::nullopt;  // made before sandboxes had networks of their own
    auto subnet = FreeSubnet(SubnetsInUse(), static_cast<uint32_t>(std::hash<std::string>{}(name)));
    if (!subnet) throw Error(kExitUnavailable, "no free private /24 for the sandbox's network");
    std::string gateway = subnet->GatewayCidr().substr(0, subnet->GatewayCidr().find('/'));
    std::vector<std::string> args = {
        "network",          "create",    "--driver", "bridge",  "--subnet",
        subnet->ToString(), "--gateway", gateway,    "--label", Cat(kMarkLabel, "=true")};
    if (podman) {
      // Podman names the bridge itself (cni-podmanN); no resolver of its own on it.
      args.insert(args.end(), {"--disable-dns", "-o", "isolate=true"});
    } else {
      args.insert(args.end(),
                  {"-o", Cat("com.docker.network.bridge.name=", SandboxBridgeName(name)), "-o",
                   "com.docker.network.bridge.enable_ip_masquerade=false", "-o",
                   "com.docker.network.bridge.enable_icc=false"});
    }
    args.push_back(network);
    Cli(args, Cat("cannot create the network of '", name, "'"), std::chrono::seconds(60));
    r = Run({engine_.client, "network", "inspect", network});
  }
  Json j = Json::parse(r.out, nullptr, false);
  if (!j.is_array() || j.empty() || !j[0].is_object()) return std::nullopt;
  Network n{network, {}, {}};
  if (podman) {
    const Json& subnets = j[0].value("subnets", Json::array());
    if (!subnets.is_array() || subnets.empty()) return std::nullopt;
    n.gateway = subnets[0].value("gateway", "");
    n.bridge = j[0].value("network_interface", "");
  } else {
    const Json& config = j[0]["IPAM"]["Config"];
    if (!config.is_array() || config.empty()) return std::nullopt;
    n.gateway = config[0].value("Gateway", "");
    n.bridge = SandboxBridgeName(name);
  }
  if (n.gateway.empty() || n.bridge.empty()) return std::nullopt;
  return n;
}

std::string ContainerBackend::CannotFence() {
  if (engine_.name == "docker" || ::geteuid() == 0) return {};
  return "rootless Podman's traffic leaves as your own sockets, not through a bridge ss can fence";
}

std::string ContainerBackend::RootIsHostRoot() {
  if (engine_.name != "docker") {
    if (::geteuid() != 0) return {};  // rootless: root inside is the user, in a namespace
    return "Podman run as root puts its containers in the host's own user namespace";
  }
  // A daemon with user namespaces (userns-remap) or one run without root (rootless) says so.
  ProcessOptions o;
  o.timeout = std::chrono::seconds(10);
  ProcessResult r = Run({engine_.client, "info", "--format", "{{json .SecurityOptions}}"}, o);
  if (r.ok() && (r.out.find("name=userns") != std::string::npos ||
                 r.out.find("name=rootless") != std::string::npos)) {
    return {};
  }
  return "the Docker daemon puts its containers in the host's own user namespace";
}

std::optional<EgressLink> ContainerBackend::Egress(const std::string& name) {
  auto n = AttachNetwork(name, false);
  if (!n) return std::nullopt;
  return EgressLink{n->bridge, n->gateway, false};
}

SandboxStatus ContainerBackend::Status(const std::string& name) {
  SandboxStatus s;
  Json c = Inspect(name);
  if (c.is_null()) return s;
  s.state = State(name);
  const Json& host = c["HostConfig"];
  int64_t nano = host.value("NanoCpus", int64_t{0});
  if (nano > 0) s.limits.cpus = static_cast<int>((nano + 999999999) / 1000000000);
  s.limits.memory = host.value("Memory", int64_t{0});
  s.detail = Cat(engine_.display, " container; the disk size is not enforced");
  if (s.state != SandboxState::kRunning) return s;
  int64_t started = ParseEngineTime(c["State"].value("StartedAt", ""));
  if (started > 0) s.uptime_seconds = std::max<int64_t>(0, std::time(nullptr) - started);
  s.address = c["NetworkSettings"].value("IPAddress", "");
  return s;
}

SshTarget ContainerBackend::Ssh(const std::string& name) {
  Json c = Inspect(name);
  if (c.is_null()) throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"));
  const Json& ports = c["NetworkSettings"]["Ports"];
  if (ports.is_object() && ports.contains("22/tcp") && ports["22/tcp"].is_array()) {
    for (const auto& binding : ports["22/tcp"]) {
      std::string port = binding.value("HostPort", "");
      if (!port.empty()) {
        SshTarget t;
        t.host = binding.value("HostIp", "127.0.0.1");
        if (t.host.empty() || t.host == "0.0.0.0") t.host = "127.0.0.1";
        t.port = std::stoi(port);
        return t;
      }
    }
  }
  throw Error(kExitUnavailable, Cat("sandbox '", name, "' publishes no SSH port (is it running?)"),
              {}, {Cat("start it: ss vm start --sandbox ", name)});
}

// Snapshots are images committed from the container (its filesystem; /var/lib/docker lives on
// a volume and is not part of them). Restoring recreates the container from one.
std::string ContainerBackend::SnapshotRepo(const std::string& name) const {
  return Cat(engine_.name == "podman" ? "localhost/" : "", "ss-snapshot-", name);
}

std::string ContainerBackend::KeepRepo(const std::string& name) const {
  return Cat(engine_.name == "podman" ? "localhost/" : "", "ss-keep-", name);
}

void ContainerBackend::TakeSnapshot(const std::string& name, const std::string& snapshot) {
  if (Inspect(name).is_null())
    throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"));
  for (const auto& s : Snapshots(name)) {
    if (s.name == snapshot) {
      throw Error(kExitCantCreate, Cat("'", name, "' already has a snapshot '", snapshot, "'"));
    }
  }
  Cli({"commit", name, Cat(SnapshotRepo(name), ":", snapshot)}, Cat("cannot snapshot '", name, "'"),
      std::chrono::minutes(10));
}

void ContainerBackend::Recreate(const std::string& name, const std::string& image_ref) {
  Json c = Inspect(name);
  if (c.is_null()) throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"));
  SandboxSpec spec = RecordedSpec(name, c);
  EnsureViews(spec);
  if (auto n = AttachNetwork(name, false)) {
    spec.network = n->name;
    spec.dns = n->gateway;
  }
  const Json& host = c["HostConfig"];
  spec.resources.cpus = static_cast<int>(host.value("NanoCpus", int64_t{0}) / 1000000000);
  spec.resources.memory = host.value("Memory", int64_t{0});
  // The limits it was made with go with it (null when unset).
  if (host.contains("PidsLimit") && host["PidsLimit"].is_number_integer()) {
    spec.resources.processes = std::max<int64_t>(0, host["PidsLimit"].get<int64_t>());
  }
  if (host.contains("Ulimits") && host["Ulimits"].is_array()) {
    for (const auto& u : host["Ulimits"]) {
      std::string limit = u.is_object() ? u.value("Name", "") : "";
      if ((limit == "nofile" || limit == "RLIMIT_NOFILE") && u.contains("Hard") &&
          u["Hard"].is_number_integer()) {
        spec.resources.open_files = u["Hard"].get<int64_t>();
      }
    }
  }
  spec.resources = Applicable(spec.resources, false);
  std::string old_image = c["Config"].value("Image", "");
  Cli({"rm", "--force", name}, Cat("cannot replace '", name, "'"), std::chrono::minutes(2));
  Cli(ContainerCreateArgs(engine_.name, spec, image_ref, HostRlimits(), PathExists("/dev/fuse")),
      Cat("cannot recreate '", name, "'"), std::chrono::minutes(2));
  // An image kept for the previous incarnation is not needed any more.
  if (old_image.rfind(KeepRepo(name) + ":", 0) == 0 && old_image != image_ref) {
    Run({engine_.client, "rmi", old_image});
  }
}

void ContainerBackend::RestoreSnapshot(const std::string& name, const std::string& snapshot) {
  Json c = Inspect(name);
  if (c.is_null()) throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"));
  RequireSnapshot(*this, name, snapshot);
  std::string ref = Cat(SnapshotRepo(name), ":", snapshot);
  bool running = ToLower(c["State"].value("Status", "")) == "running";
  Recreate(name, ref);
  if (running) Cli({"start", name}, Cat("cannot start '", name, "'"), std::chrono::minutes(2));
}

void ContainerBackend::DeleteSnapshot(const std::string& name, const std::string& snapshot) {
  RequireSnapshot(*this, name, snapshot);
  std::string ref = Cat(SnapshotRepo(name), ":", snapshot);
  // A container restored from this snapshot runs on its image: the image stays, under the name
  // of the sandbox's kept filesystem (removed with the sandbox), and only the snapshot's name
  // goes (untagging; never a forced removal, which Podman applies to the container too).
  auto id = [](std::string text) {
    text = std::string(Trim(text));
    return text.rfind("sha256:", 0) == 0 ? text.substr(7) : text;
  };
  Json c = Inspect(name);
  std::string snapshot_id = id(Cli({"image", "inspect", "--format", "{{.Id}}", ref},
                                   Cat("cannot read snapshot '", snapshot, "'")));
  if (!c.is_null() && !snapshot_id.empty() && id(c.value("Image", "")) == snapshot_id) {
    Cli({"tag", ref, Cat(KeepRepo(name), ":", std::time(nullptr))},
        Cat("cannot delete snapshot '", snapshot, "'"));
  }
  Cli({"rmi", ref}, Cat("cannot delete snapshot '", snapshot, "'"));
}

std::vector<Snapshot> ContainerBackend::Snapshots(const std::string& name) {
  std::vector<Snapshot> out;
  std::string text = Cli({"images", "--format", "{{.Tag}}\t{{.CreatedAt}}", SnapshotRepo(name)},
                         Cat("cannot list the snapshots of '", name, "'"));
  for (const auto& line : SplitLines(text)) {
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    Snapshot s;
    s.name = line.substr(0, tab);
    int64_t t = ParseEngineTime(line.substr(tab + 1));
    s.created =
        std::chrono::system_clock::time_point(std::chrono::seconds(std::max<int64_t>(t, 0)));
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(),
            [](const Snapshot& a, const Snapshot& b) { return a.created < b.created; });
  return out;
}

}  // namespace ss
