// The LXD backend: system containers driven through the `lxc` client (`lxc query` for the REST
// API as JSON), so LXD remotes work as they do for `lxc` itself (lxd.remote: myserver).
//
// A sandbox is a container named after the sandbox, marked user.ss.sandbox=true (ss never
// touches a container it did not create), with:
//   - security.nesting=true, so docker runs inside;
//   - files in the shared folders owned by `sandbox` inside and by the user outside (git sees no
//     "dubious ownership" on either side): raw.idmap "both <host uid> 1000" for a regular user;
//     for root, whose id must never be the container's (it would own every host device node
//     bound into it), an id-mapped view of each folder (idmap_view.hpp), recorded in
//     user.ss.views so that every start mounts it again;
//   - the projects folder as a disk device at /home/sandbox/projects;
//   - an SSH proxy device: 127.0.0.1:<port> on the LXD host → the container's port 22;
//   - the cloud-init NoCloud seed pushed into /var/lib/cloud/seed/nocloud before first boot;
//   - locally, a network of its own: a bridge without NAT (SandboxBridgeName) whose only way
//     out is the host's fence to ss-net (egress.hpp), and its eth0 there with IPv4 and MAC
//     filtering (root inside cannot take another address); a remote LXD's sandboxes keep the
//     remote's network, which ss cannot fence.
#include "backend_lxd.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "config.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "idmap_view.hpp"
#include "image.hpp"
#include "json_out.hpp"
#include "net.hpp"
#include "net_fence.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "size.hpp"
#include "strings.hpp"
#include "subnet.hpp"
#include "timefmt.hpp"

namespace ss {
namespace {

constexpr const char* kMarkKey = "user.ss.sandbox";
constexpr const char* kViewsKey = "user.ss.views";
constexpr const char* kNetworkKey = "user.ss.network";  // on the network: the sandbox it serves

// The host id the container's `id` maps to, by LXD's idmap ("volatile.idmap.next", a JSON list
// of {Isuid, Isgid, Hostid, Nsid, Maprange}); -1 when none maps it.
int64_t HostIdOf(const std::string& idmap, bool uid, int64_t id) {
  Json entries = Json::parse(idmap, nullptr, false);
  if (!entries.is_array()) return -1;
  for (const auto& e : entries) {
    if (!e.value(uid ? "Isuid" : "Isgid", false)) continue;
    int64_t ns = e.value("Nsid", int64_t{0}), range = e.value("Maprange", int64_t{0});
    if (id >= ns && id < ns + range) return e.value("Hostid", int64_t{0}) + id - ns;
  }
  return -1;
}

// The container's IPv4 address on its host-side NIC (the one LXD knows a host veth for): never
// an address of a bridge made inside the sandbox, such as docker0's 172.17.0.1.
std::string HostSideAddress(const Json& state) {
  if (!state.contains("network") || !state["network"].is_object()) return {};
  for (const auto& [ifname, iface] : state["network"].items()) {
    if (iface.value("host_name", "").empty()) continue;
    for (const auto& addr : iface["addresses"]) {
      if (addr.value("family", "") == "inet" && addr.value("scope", "") == "global") {
        return addr.value("address", "");
      }
    }
  }
  return {};
}

std::string CpuRange(int cpus) { return cpus <= 1 ? "0" : Cat("0-", cpus - 1); }

}  // namespace

LxdBackend::LxdBackend(std::string remote) : remote_(std::move(remote)) {}

std::string LxdBackend::Ref(const std::string& name) const {
  return remote_.empty() ? name : Cat(remote_, ":", name);
}

std::string LxdBackend::Lxc(const std::vector<std::string>& args, std::string_view what,
                            std::chrono::seconds timeout) {
  std::vector<std::string> argv{"lxc"};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions options;
  options.timeout = timeout;
  ProcessResult r = Run(argv, options);
  // An instance still finishing another operation (a stop LXD began when its init died) is
  // busy for a moment: wait for it rather than fail, within the same time limit.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!r.ok() && r.err.find("is busy running a") != std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    r = Run(argv, options);
  }
  if (r.ok()) return r.out;
  std::string err = std::string(Trim(r.err.empty() ? r.out : r.err));
  if (err.rfind("Error: ", 0) == 0) err = err.substr(7);
  if (r.timed_out) err = Cat("no answer from LXD after ", timeout.count(), "s");
  throw Error(kExitUnavailable, Cat(what, ": ", err));
}

std::optional<Json> LxdBackend::Query(const std::string& path) {
  std::vector<std::string> argv{"lxc", "query"};
  argv.push_back(remote_.empty() ? path : Cat(remote_, ":", path));
  ProcessOptions options;
  options.timeout = std::chrono::seconds(30);
  ProcessResult r = Run(argv, options);
  if (!r.ok()) {
    if (r.err.find("not found") != std::string::npos ||
        r.err.find("Not Found") != std::string::npos) {
      return std::nullopt;
    }
    // The daemon not running is the usual cause: say so, with the command that starts it.
    Probe probe = CheckHost();
    if (!probe.usable) throw Error(kExitUnavailable, probe.reason, {}, {probe.fix});
    throw Error(kExitUnavailable, Cat("LXD did not answer ", path, ": ", Trim(r.err)), {},
                {"check the daemon: ss doctor"});
  }
  try {
    return Json::parse(r.out);
  } catch (const Json::exception& e) {
    throw Error(kExitSoftware, Cat("LXD sent invalid JSON for ", path, ": ", e.what()));
  }
}

Probe LxdBackend::CheckHost() {
  Probe p;
  if (!FindInPath("lxc")) {
    p.reason = "the LXD client 'lxc' is not installed";
    p.fix = "install and start LXD: ss vm setup --backend lxd";
    return p;
  }
  ProcessOptions options;
  options.timeout = std::chrono::seconds(10);
  ProcessResult r =
      Run({"lxc", "query", remote_.empty() ? "/1.0" : Cat(remote_, ":/1.0")}, options);
  if (!r.ok()) {
    std::string err(Trim(r.err));
    if (remote_.empty()) {
      p.reason = Cat("the LXD daemon is not running (", err.empty() ? "no answer" : err, ")");
      p.fix = "start it: ss vm setup --backend lxd";
    } else {
      p.reason = Cat("LXD remote '", remote_, "' does not answer (", err, ")");
      p.fix = Cat("check it: lxc info ", remote_, ":");
    }
    return p;
  }
  p.usable = true;
  try {
    Json info = Json::parse(r.out);
    p.reason = Cat("LXD ", info["environment"].value("server_version", "?"),
                   remote_.empty() ? " (local)" : Cat(" on remote '", remote_, "'"));
  } catch (const Json::exception&) {
    p.reason = "LXD answers";
  }
  return p;
}

Json LxdBackend::Instance(const std::string& name) {
  auto inst = Query(Cat("/1.0/instances/", name));
  if (!inst) return Json();
  if ((*inst)["config"].value(kMarkKey, "") != "true") {
    throw Error(kExitCantCreate,
                Cat("LXD already has an instance called '", name, "' that ss did not create"), {},
                {"pick another sandbox name with --sandbox, or rename that instance"});
  }
  return *inst;
}

SandboxState LxdBackend::State(const std::string& name) {
  Json inst = Instance(name);
  if (inst.is_null()) return SandboxState::kNotExists;
  int code = inst.value("status_code", 0);
  switch (code) {
    case 102:
      return SandboxState::kStopped;
    case 103:
      return SandboxState::kRunning;
    case 106:
    case 107:
    case 101:
    case 104:
    case 105:
      return SandboxState::kStarting;
    default:
      return SandboxState::kBroken;  // 108 aborting, 109 freezing, 110 frozen, 112 error
  }
}

void LxdBackend::EnsureImage(const std::string& image_id, const std::string& image_dir,
                             Progress& progress) {
  std::string alias = Cat("ss-", image_id);
  if (Query(Cat("/1.0/images/aliases/", alias))) return;
  progress.Step(Cat("importing image ", image_id, " into LXD"));
  TempDir tmp;
  std::string meta = Cat(tmp.path(), "/meta.tar");
  WriteLxdMetadataTarball(image_dir, meta);
  std::vector<std::string> args{"image", "import", meta, ContainerTarball(image_dir)};
  if (!remote_.empty()) args.push_back(remote_ + ":");
  args.insert(args.end(), {"--alias", alias});
  Lxc(args, Cat("cannot import image ", image_id, " into LXD"), std::chrono::seconds(900));
}

bool LxdBackend::RemoveImageCopy(const std::string& image_id) {
  // Sandboxes made from it keep working: LXD gave each its own copy of the filesystem.
  std::string alias = Cat("ss-", image_id);
  if (!Query(Cat("/1.0/images/aliases/", alias))) return false;
  Lxc({"image", "delete", remote_.empty() ? alias : Cat(remote_, ":", alias)},
      Cat("cannot remove image ", image_id, " from LXD"));
  return true;
}

std::string LxdBackend::ViewsOf(const std::string& name) const {
  return ViewsDir(Cat("lxd:", remote_, ":", name));
}

void LxdBackend::EnsureViews(const std::string& name, const Json& instance) {
  const Json& config = instance["config"];
  Json views = Json::parse(config.value(kViewsKey, ""), nullptr, false);
  if (!views.is_object()) return;
  std::string idmap = config.value("volatile.idmap.next", "");
  Ids shown{static_cast<uid_t>(HostIdOf(idmap, true, kSandboxUserId)),
            static_cast<gid_t>(HostIdOf(idmap, false, kSandboxUserId))};
  if (HostIdOf(idmap, true, kSandboxUserId) < 0 || HostIdOf(idmap, false, kSandboxUserId) < 0) {
    throw Error(kExitSoftware,
                Cat("LXD maps no host id to uid ", kSandboxUserId, " of '", name, "'"),
                {Cat("  volatile.idmap.next: ", idmap)});
  }
  Ids owner{views["owner"][0].get<uid_t>(), views["owner"][1].get<gid_t>()};
  for (const auto& m : views["mounts"]) {
    EnsureView(m.value("source", ""), Cat(ViewsOf(name), "/", m.value("name", "")), owner, shown);
  }
}

void LxdBackend::Create(const SandboxSpec& spec, Progress& progress) {
  EnsureImage(spec.image_id, spec.image_dir, progress);
  progress.Step(Cat("creating LXD container '", spec.name, "'"));
  std::string ref = Ref(spec.name);
  std::vector<std::string> init{"init",
                                Cat(remote_.empty() ? "" : remote_ + ":", "ss-", spec.image_id),
                                ref,
                                "-c",
                                "security.nesting=true",
                                "-c",
                                Cat(kMarkKey, "=true"),
                                "-c"};
  bool views = spec.host_uid == 0;
  if (views) {
    Json record = {{"owner", {spec.host_uid, spec.host_gid}}, {"mounts", Json::array()}};
    for (const auto& m : spec.mounts) {
      record["mounts"].push_back({{"name", m.name}, {"source", m.source}});
    }
    init.push_back(Cat(kViewsKey, "=", DumpJson(record)));
  } else {
    init.push_back(Cat("raw.idmap=both ", spec.host_uid, " ", kSandboxUserId));
  }
  Lxc(init, Cat("cannot create container '", spec.name, "'"), std::chrono::seconds(300));
  try {
    ApplyResources(spec.name, spec.resources);
    EnsureViews(spec.name, Instance(spec.name));
    for (const auto& m : spec.mounts) {
      std::string source = views ? Cat(ViewsOf(spec.name), "/", m.name) : m.source;
      std::vector<std::string> args{"config",
                                    "device",
                                    "add",
                                    ref,
                                    m.name,
                                    "disk",
                                    Cat("source=", source),
                                    Cat("path=", m.target)};
      if (m.read_only) args.push_back("readonly=true");
      Lxc(args, Cat("cannot share ", m.source, " into '", spec.name, "'"));
    }
    int port = FreeLoopbackPort();
    Lxc({"config", "device", "add", ref, "ssh", "proxy",
         Cat("listen=tcp:", remote_.empty() ? "127.0.0.1" : "0.0.0.0", ":", port),
         "connect=tcp:127.0.0.1:22", "bind=host"},
        Cat("cannot publish SSH of '", spec.name, "'"));
    {
      // The seed is pushed, never put on a command line: user-data holds the host private key
      // (and the client's public one). Its files on the host last as long as the push, not the
      // start.
      TempDir seed;
      AtomicWrite(Cat(seed.path(), "/user-data"), spec.user_data, 0600);
      AtomicWrite(Cat(seed.path(), "/meta-data"), spec.meta_data, 0600);
      for (const char* f : {"user-data", "meta-data"}) {
        Lxc({"file", "push", "-p", "--mode", "0600", Cat(seed.path(), "/", f),
             Cat(ref, "/var/lib/cloud/seed/nocloud/", f)},
            Cat("cannot provision '", spec.name, "'"));
      }
    }
    if (remote_.empty()) AttachNetwork(spec.name);
    if (spec.before_first_boot) spec.before_first_boot();
    progress.Step(Cat("starting '", spec.name, "'"));
    StartWithFreePort(spec.name);
  } catch (...) {
    // Never leave a half-made sandbox behind.
    Run({"lxc", "delete", "--force", ref});
    if (remote_.empty()) Run({"lxc", "network", "delete", SandboxBridgeName(spec.name)});
    RemoveViews(ViewsOf(spec.name));
    throw;
  }
}

std::vector<std::string> LxdLimits(const Resources& r) {
  std::vector<std::string> out;
  if (r.cpus > 0) out.push_back(Cat("limits.cpu=", CpuRange(r.cpus)));
  if (r.memory > 0) out.push_back(Cat("limits.memory=", r.memory / kMiB, "MiB"));
  // The cgroup's pids limit (changed live on a running container) and every process's open
  // files, soft and hard (from the next start): root in the container's user namespace cannot
  // raise either.
  if (r.processes > 0) out.push_back(Cat("limits.processes=", r.processes));
  if (r.open_files > 0) out.push_back(Cat("limits.kernel.nofile=", r.open_files));
  return out;
}

// The hard limit of open files of a local LXD's daemon (0 when unknown): a container's limit
// above it fails its start where the daemon may not raise it (no CAP_SYS_RESOURCE).
int64_t LxdBackend::DaemonOpenFiles() {
  if (!remote_.empty()) return 0;
  auto server = Query("/1.0");
  int pid = server ? (*server).value("environment", Json::object()).value("server_pid", 0) : 0;
  if (pid <= 0) return 0;
  for (const std::string& line :
       SplitLines(ReadFileIfExists(Cat("/proc/", pid, "/limits")).value_or(""))) {
    if (!line.starts_with("Max open files")) continue;
    auto words = Split(std::string(Trim(line.substr(14))), ' ');
    std::vector<std::string> values;
    for (const auto& w : words) {
      if (!w.empty()) values.push_back(w);
    }
    if (values.size() >= 2) return ParseDecimal(values[1]).value_or(0);
  }
  return 0;
}

void LxdBackend::ApplyResources(const std::string& name, const Resources& requested) {
  Resources r = requested;
  if (r.open_files > 0) {
    // A remote daemon's own limit cannot be read from here: its containers keep its default
    // rather than fail to start above it.
    int64_t most = DaemonOpenFiles();
    if (!remote_.empty()) r.open_files = 0;
    if (most > 0 && r.open_files > most) r.open_files = most;
  }
  std::string ref = Ref(name);
  std::vector<std::string> args{"config", "set", ref};
  for (std::string& limit : LxdLimits(r)) args.push_back(std::move(limit));
  if (args.size() > 3) Lxc(args, Cat("cannot set the resources of '", name, "'"));
  if (r.disk > 0) {
    // A size on the root disk needs a pool with quotas (btrfs, zfs, lvm); a dir pool has none.
    ProcessResult set = Run(
        {"lxc", "config", "device", "override", ref, "root", Cat("size=", r.disk / kMiB, "MiB")});
    if (!set.ok()) {
      set =
          Run({"lxc", "config", "device", "set", ref, "root", Cat("size=", r.disk / kMiB, "MiB")});
    }
    if (!set.ok()) Debug(Cat("lxd: disk size not applied: ", Trim(set.err)));
  }
}

void LxdBackend::StartWithFreePort(const std::string& name) {
  std::string ref = Ref(name);
  for (int attempt = 0;; ++attempt) {
    ProcessOptions options;
    options.timeout = std::chrono::seconds(120);
    ProcessResult r = Run({"lxc", "start", ref}, options);
    if (r.ok()) return;
    std::string err(Trim(r.err));
    // The SSH port can be taken while the sandbox was stopped: pick another and retry.
    bool port_taken = err.find("address already in use") != std::string::npos;
    if (port_taken && attempt < 5) {
      Lxc({"config", "device", "set", ref, "ssh",
           Cat("listen=tcp:", remote_.empty() ? "127.0.0.1" : "0.0.0.0", ":", FreeLoopbackPort())},
          Cat("cannot publish SSH of '", name, "'"));
      continue;
    }
    if (err.rfind("Error: ", 0) == 0) err = err.substr(7);
    throw Error(kExitUnavailable, Cat("cannot start '", name, "': ", err), {},
                {Cat("see the container's log: lxc info --show-log ", ref)});
  }
}

void LxdBackend::Start(const std::string& name, const Resources& resources) {
  ApplyResources(name, resources);
  EnsureViews(name, Instance(name));
  if (remote_.empty()) AttachNetwork(name);  // sandboxes made before they had one get it now
  StartWithFreePort(name);
}

void LxdBackend::Stop(const std::string& name, std::chrono::seconds timeout) {
  std::string ref = Ref(name);
  // A plain stop right after a start can wait forever (the halt signal arrives before systemd
  // handles it): always bound it, then force.
  ProcessOptions options;
  options.timeout = timeout + std::chrono::seconds(5);
  ProcessResult r =
      Run({"lxc", "stop", ref, "--timeout", std::to_string(timeout.count())}, options);
  if (r.ok() || State(name) == SandboxState::kStopped) return;
  Debug(Cat("lxd: graceful stop failed (", Trim(r.err), "); forcing"));
  Lxc({"stop", ref, "--force"}, Cat("cannot stop '", name, "'"));
}

void LxdBackend::Delete(const std::string& name) {
  if (!Instance(name).is_null()) {
    // LXD refuses to remove a volume that has snapshots on disk, recorded or not.
    std::vector<std::string> left = RemoveOrphanSnapshots(name);
    if (!left.empty()) {
      throw Error(kExitNoPerm,
                  Cat("cannot delete '", name,
                      "': LXD left an unfinished snapshot of it that "
                      "only root can remove"),
                  {},
                  {Cat("remove it: sudo btrfs subvolume delete ", left[0]),
                   Cat("then again: ss vm delete --sandbox ", name, " --force")});
    }
    Lxc({"delete", "--force", Ref(name)}, Cat("cannot delete '", name, "'"),
        std::chrono::seconds(120));
  }
  if (remote_.empty()) {
    std::string bridge = SandboxBridgeName(name);
    auto network = Query(Cat("/1.0/networks/", bridge));
    if (network && (*network)["config"].value(kNetworkKey, "") == name) {
      Lxc({"network", "delete", bridge}, Cat("cannot delete the network of '", name, "'"));
    }
  }
  RemoveViews(ViewsOf(name));
}

std::string LxdBackend::AttachNetwork(const std::string& name) {
  std::string bridge = SandboxBridgeName(name);
  auto network = Query(Cat("/1.0/networks/", bridge));
  if (network && (*network)["config"].value(kNetworkKey, "") != name) {
    throw Error(
        kExitCantCreate,
        Cat("LXD already has a network called '", bridge, "' that is not the one of '", name, "'"),
        {}, {Cat("remove it if it is left over: lxc network delete ", bridge)});
  }
  if (!network) {
    auto subnet = FreeSubnet(SubnetsInUse(), static_cast<uint32_t>(std::hash<std::string>{}(name)));
    if (!subnet) throw Error(kExitUnavailable, "no free private /24 for the sandbox's network");
    // No NAT and no IPv6: nothing leaves this bridge but through the host, where the fence
    // sends it to ss-net. LXD's dnsmasq still hands out the address (the fence lets DHCP in).
    Lxc({"network", "create", bridge, Cat("ipv4.address=", subnet->GatewayCidr()), "ipv4.nat=false",
         "ipv6.address=none", Cat(kNetworkKey, "=", name)},
        Cat("cannot create the network of '", name, "'"));
    network = Query(Cat("/1.0/networks/", bridge));
    if (!network) throw Error(kExitSoftware, Cat("LXD lost the network of '", name, "'"));
  }
  std::string cidr = (*network)["config"].value("ipv4.address", "");
  std::string gateway = cidr.substr(0, cidr.find('/'));
  Json inst = Instance(name);
  const Json& devices = inst["devices"];
  if (!devices.contains("eth0") || devices["eth0"].value("network", "") != bridge) {
    if (devices.contains("eth0")) {
      Lxc({"config", "device", "remove", Ref(name), "eth0"},
          Cat("cannot disconnect '", name, "' from its old network"));
    }
    // IPv4 filtering (which implies MAC filtering) pins the address LXD leased it.
    Lxc({"config", "device", "add", Ref(name), "eth0", "nic", Cat("network=", bridge), "name=eth0",
         "security.ipv4_filtering=true"},
        Cat("cannot connect '", name, "' to its network"));
  }
  return gateway;
}

std::string LxdBackend::CannotFence() {
  if (remote_.empty()) return {};
  return Cat("its traffic leaves from LXD remote '", remote_,
             "', whose network ss does not control from here");
}

std::optional<EgressLink> LxdBackend::Egress(const std::string& name) {
  if (!remote_.empty()) return std::nullopt;
  std::string bridge = SandboxBridgeName(name);
  auto network = Query(Cat("/1.0/networks/", bridge));
  if (!network || (*network)["config"].value(kNetworkKey, "") != name) return std::nullopt;
  Json inst = Instance(name);
  if (inst.is_null() ||
      inst["devices"].value("eth0", Json::object()).value("network", "") != bridge)
    return std::nullopt;
  std::string cidr = (*network)["config"].value("ipv4.address", "");
  return EgressLink{bridge, cidr.substr(0, cidr.find('/')), true};
}

SandboxStatus LxdBackend::Status(const std::string& name) {
  SandboxStatus s;
  Json inst = Instance(name);
  if (inst.is_null()) return s;
  s.state = State(name);
  const Json& config = inst["expanded_config"];
  std::string cpu = config.value("limits.cpu", "");
  if (!cpu.empty()) {
    auto dash = cpu.find('-');
    s.limits.cpus = dash == std::string::npos
                        ? 1
                        : std::stoi(cpu.substr(dash + 1)) - std::stoi(cpu.substr(0, dash)) + 1;
  }
  std::string mem = config.value("limits.memory", "");
  if (mem.size() > 3 && mem.substr(mem.size() - 3) == "MiB")
    s.limits.memory = std::stoll(mem) * kMiB;
  std::string disk = inst["expanded_devices"]["root"].value("size", "");
  if (disk.size() > 3 && disk.substr(disk.size() - 3) == "MiB")
    s.limits.disk = std::stoll(disk) * kMiB;
  if (s.state != SandboxState::kRunning) return s;
  auto state = Query(Cat("/1.0/instances/", name, "/state"));
  if (state) {
    s.memory_used = (*state)["memory"].value("usage", int64_t{-1});
    if ((*state).contains("disk") && (*state)["disk"].is_object() &&
        (*state)["disk"].contains("root")) {
      s.disk_used = (*state)["disk"]["root"].value("usage", int64_t{-1});
    }
    s.address = HostSideAddress(*state);
  }
  if (auto started = ParseRfc3339(inst.value("last_used_at", ""))) {
    s.uptime_seconds = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now() - *started)
                           .count();
  }
  return s;
}

SshTarget LxdBackend::Ssh(const std::string& name) {
  Json inst = Instance(name);
  if (inst.is_null()) throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"));
  SshTarget t;
  if (remote_.empty()) {
    // Locally, the container's own address on the LXD bridge: LXD's proxy device relays every
    // byte through a userland process and adds ~45 ms to a session's first command.
    auto state = Query(Cat("/1.0/instances/", name, "/state"));
    if (state) t.host = HostSideAddress(*state);
    if (!t.host.empty()) {
      t.port = 22;
      return t;
    }
  }
  // Before DHCP has answered, or on a remote LXD: the proxy device.
  std::string listen = inst["expanded_devices"]["ssh"].value("listen", "");
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    throw Error(kExitSoftware, Cat("container '", name, "' has no SSH proxy device"), {},
                {Cat("recreate it: ss vm reset --sandbox ", name)});
  }
  t.port = std::stoi(listen.substr(colon + 1));
  t.host = "127.0.0.1";
  if (!remote_.empty()) {
    // The proxy listens on the remote LXD host: reach it at the remote's address.
    Json remotes = Json::parse(RunChecked({"lxc", "remote", "list", "--format", "json"},
                                          "cannot read the LXD remotes", {}, kExitUnavailable));
    std::string url = remotes.contains(remote_) ? remotes[remote_].value("Addr", "") : "";
    auto start = url.find("://");
    std::string hostport = start == std::string::npos ? url : url.substr(start + 3);
    t.host = hostport.substr(0, hostport.rfind(':'));
    if (!t.host.empty() && t.host.front() == '[') t.host = t.host.substr(1, t.host.size() - 2);
    if (t.host.empty()) {
      throw Error(kExitConfig, Cat("LXD remote '", remote_, "' has no address"), {},
                  {"check it: lxc remote list"});
    }
  }
  return t;
}

std::vector<std::string> LxdBackend::RemoveOrphanSnapshots(const std::string& name) {
  if (!remote_.empty()) return {};
  Json inst = Instance(name);
  if (inst.is_null()) return {};
  const Json& devices = inst.contains("expanded_devices") && inst["expanded_devices"].is_object()
                            ? inst["expanded_devices"]
                            : Json::object();
  const Json& root =
      devices.contains("root") && devices["root"].is_object() ? devices["root"] : Json::object();
  std::string pool = root.value("pool", "");
  if (pool.empty() || pool.find('/') != std::string::npos || pool[0] == '.') return {};
  // LXD's own folder: LXD_DIR, the snap's, or Debian's.
  std::string lxd_dir = "/var/lib/lxd";
  if (const char* env = std::getenv("LXD_DIR"); env && *env) {
    lxd_dir = env;
  } else if (PathExists("/var/snap/lxd/common/lxd/unix.socket")) {
    lxd_dir = "/var/snap/lxd/common/lxd";
  }
  std::string dir = Cat(lxd_dir, "/storage-pools/", pool, "/containers-snapshots/", name);
  if (!PathExists(dir)) return {};
  std::vector<std::string> known;
  for (const auto& s : Snapshots(name)) known.push_back(s.name);
  std::vector<std::string> left;
  for (const std::string& entry : ListDir(dir)) {
    if (std::find(known.begin(), known.end(), entry) != known.end()) continue;
    if (!NameOf(entry, "A-Za-z0-9", "A-Za-z0-9._-", 63)) continue;  // not a snapshot's name
    std::string path = Cat(dir, "/", entry);
    if (::geteuid() != 0) {
      left.push_back(path);
      continue;
    }
    // A btrfs snapshot is a subvolume (read-only: only its own delete removes it); on the dir
    // driver, a folder, removed without following a link or leaving the filesystem.
    ProcessResult r = Run({"btrfs", "subvolume", "show", path}).ok()
                          ? Run({"btrfs", "subvolume", "delete", path})
                          : Run({"rm", "-rf", "--one-file-system", "--", path});
    if (!r.ok()) {
      Debug(Cat("lxd: cannot remove the unfinished snapshot ", path, ": ", Trim(r.err)));
      left.push_back(path);
    } else {
      Debug(Cat("lxd: removed the unfinished snapshot ", path));
    }
  }
  return left;
}

void LxdBackend::TakeSnapshot(const std::string& name, const std::string& snapshot) {
  for (const auto& s : Snapshots(name)) {
    if (s.name == snapshot) {
      throw Error(kExitCantCreate, Cat("'", name, "' already has a snapshot '", snapshot, "'"));
    }
  }
  // LXD copies a running container's files one by one (on the dir driver) and stops at the
  // first one the guest removes meanwhile (a service's private /tmp going away), leaving a
  // partial copy on disk that later stops the container's deletion. The container is frozen
  // while its files are copied, and thawed whatever happens.
  bool running = State(name) == SandboxState::kRunning;
  if (running) Lxc({"pause", Ref(name)}, Cat("cannot freeze '", name, "' for a snapshot"));
  try {
    Lxc({"snapshot", Ref(name), snapshot}, Cat("cannot snapshot '", name, "'"),
        std::chrono::seconds(300));
  } catch (const Error& e) {
    if (running) Lxc({"start", Ref(name)}, Cat("cannot thaw '", name, "'"));
    // Nothing half-made stays: what LXD left on disk goes, and the error says what failed
    // without a path of several kilobytes.
    std::vector<std::string> left = RemoveOrphanSnapshots(name);
    std::vector<std::string> hints;
    for (const auto& path : left) {
      hints.push_back(Cat("remove what LXD left, as root: btrfs subvolume delete ", path));
    }
    std::string what = e.what();
    if (what.find("file name too long") != std::string::npos) {
      hints.insert(hints.begin(),
                   "shorten or remove the deepest folders in the sandbox, then snapshot again");
      throw Error(kExitCantCreate,
                  Cat("cannot snapshot '", name, "': a path in it is longer than the ",
                      "4096 bytes LXD can read on the host; no snapshot was kept"),
                  {}, hints);
    }
    if (what.size() > 400) what = Cat(what.substr(0, 400), "...");
    throw Error(e.code(), what, {}, hints);
  }
  if (running) Lxc({"start", Ref(name)}, Cat("cannot thaw '", name, "'"));
}

void LxdBackend::RestoreSnapshot(const std::string& name, const std::string& snapshot) {
  RequireSnapshot(*this, name, snapshot);
  Lxc({"restore", Ref(name), snapshot}, Cat("cannot restore '", name, "' to '", snapshot, "'"),
      std::chrono::seconds(300));
  // A snapshot from before the sandbox had its own network brings the old NIC back.
  if (remote_.empty()) AttachNetwork(name);
}

void LxdBackend::DeleteSnapshot(const std::string& name, const std::string& snapshot) {
  RequireSnapshot(*this, name, snapshot);
  Lxc({"delete", Cat(Ref(name), "/", snapshot)}, Cat("cannot delete snapshot '", snapshot, "'"));
}

std::vector<Snapshot> LxdBackend::Snapshots(const std::string& name) {
  std::vector<Snapshot> out;
  auto snaps = Query(Cat("/1.0/instances/", name, "/snapshots?recursion=1"));
  if (!snaps) return out;
  for (const auto& s : *snaps) {
    Snapshot snap;
    snap.name = s.value("name", "");
    if (auto t = ParseRfc3339(s.value("created_at", ""))) snap.created = *t;
    out.push_back(snap);
  }
  std::sort(out.begin(), out.end(),
            [](const Snapshot& a, const Snapshot& b) { return a.created < b.created; });
  return out;
}

}  // namespace ss
