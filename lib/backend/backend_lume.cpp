// The Lume backend: a Lume virtual machine per sandbox (Apple's Virtualization.framework on
// Apple Silicon), driven through Lume's HTTP API (lume_api.hpp), made from the spec's image,
// trycua's ubuntu-noble-vanilla.
//
// That image takes no provisioning data: neither Lume's create nor its run carries any, and the
// only way in is its user `lume` with the password `lume`, over SSH to an address whose host key
// nobody knows yet. ss never sends a secret that way, and never trusts that key:
//   - the provisioning (the sandbox's host key and install key, the same #cloud-config every
//     backend gets) is a folder of the host, shared read-only with this machine alone for its
//     first boot (Lume's shares reach only the machine they are given to);
//   - Lume's own `lume ssh` runs one fixed command there: mount the shares, run the script in
//     that folder. Whoever answered that login learns the image's published password and the
//     command, nothing else;
//   - the script turns the image's user into the sandbox user without a password, installs
//     ss's pinned host key and turns password logins off; the folder is then removed from the
//     host and the machine restarted without it. From then on ss connects as with every backend:
//     its own key, the pinned host key, nothing accepted on first use.
// That image has none of ss's tools either: the first boot installs what it lacks of ss's image
// (shell/ss-install-tools, from the guest's own archive and the npm registry).
// Lume forgets shared directories between runs: the backend keeps each sandbox's, and gives them
// on every start. Snapshots are clones (POST /lume/vms/clone, as the spec does them), named
// NAME.snap.SNAPSHOT, with their times kept beside the shares. Lume's network is Apple's vmnet
// NAT, out of ss's reach: a Lume sandbox is made only with an open network policy.
#include "backend_lume.hpp"

#include <algorithm>
#include <thread>

#include "error.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "process.hpp"
#include "provision_script.hpp"
#include "resources.hpp"
#include "shell_quote.hpp"
#include "strings.hpp"

namespace ss {
namespace {

constexpr std::chrono::minutes kBootTimeout{10};
constexpr std::chrono::minutes kPullTimeout{60};
constexpr std::chrono::minutes kFirstBootTimeout{20};
// Where the guest mounts Lume's shares (each share is a folder there).
constexpr const char* kGuestShares = "/mnt/lume";
constexpr const char* kSeed = "ss-seed";
constexpr const char* kSnap = ".snap.";

SandboxState StateOf(const Json& vm) {
  std::string status = vm.value("status", "");
  if (status == "running") return SandboxState::kRunning;
  if (status == "stopped") return SandboxState::kStopped;
  if (status == "provisioning" || status == "pulling") return SandboxState::kStarting;
  return SandboxState::kBroken;  // "provisioning (stale)", or a status this ss does not know
}

std::string Str(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t Int(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : -1;
}

// fstab's escapes for a field (a folder may be "name (2)").
std::string FstabField(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
      out += Cat("\\", (c >> 6) & 7, (c >> 3) & 7, c & 7);
    } else {
      out += c;
    }
  }
  return out;
}

std::string SnapshotVm(const std::string& name, const std::string& snapshot) {
  return Cat(name, kSnap, snapshot);
}

}  // namespace

std::string LumeFirstBoot(const SandboxSpec& spec, const std::vector<std::string>& folders) {
  ProvisionScripts scripts = CloudConfigToScripts(spec.user_data);
  std::string s =
      "#!/bin/sh\n"
      "# ss: the first boot of a Lume sandbox, run once as root from a folder only this machine\n"
      "# is given. The image's user (uid 1000) becomes the sandbox user, without a password;\n"
      "# then the sandbox's SSH identity, its shares, and its provisioning.\n"
      "set -eu\n"
      "old=$(getent passwd 1000 | cut -d: -f1)\n"
      "if [ \"$old\" != sandbox ]; then\n"
      "  group=$(getent group \"$(id -g \"$old\")\" | cut -d: -f1)\n"
      // usermod refuses a user with processes, and the login this runs in is the user's.
      "  for f in /etc/passwd /etc/shadow /etc/group /etc/gshadow; do\n"
      "    [ -f \"$f\" ] || continue\n"
      "    awk -F: -v OFS=: -v old=\"$old\" -v group=\"$group\" -v file=\"$f\" '\n"
      "      function members(list,  n, i, m, out) {\n"
      "        n = split(list, m, \",\"); out = \"\"\n"
      "        for (i = 1; i <= n; i++) out = out (i > 1 ? \",\" : \"\") (m[i] == old ? "
      "\"sandbox\" : m[i])\n"
      "        return out\n"
      "      }\n"
      "      file == \"/etc/passwd\" && $1 == old { $1 = \"sandbox\"; $6 = \"/home/sandbox\" }\n"
      "      file == \"/etc/shadow\" && $1 == old { $1 = \"sandbox\"; $2 = \"!\" }\n"
      "      file == \"/etc/group\" { if ($1 == group) $1 = \"sandbox\"; $4 = members($4) }\n"
      "      file == \"/etc/gshadow\" { if ($1 == group) $1 = \"sandbox\"; $4 = members($4) }\n"
      "      { print }' \"$f\" > \"$f.ss-new\"\n"
      "    chmod --reference=\"$f\" \"$f.ss-new\"\n"
      "    chown --reference=\"$f\" \"$f.ss-new\"\n"
      "    mv \"$f.ss-new\" \"$f\"\n"
      "  done\n"
      "  if [ -d \"/home/$old\" ] && [ ! -e /home/sandbox ]; then mv \"/home/$old\" /home/sandbox; "
      "fi\n"
      "fi\n"
      "mkdir -p /home/sandbox\n"
      "chown 1000:1000 /home/sandbox\n"
      "printf 'sandbox ALL=(ALL) NOPASSWD:ALL\\n' > /etc/sudoers.d/90-sandbox\n"
      "chmod 0440 /etc/sudoers.d/90-sandbox\n";
  // The SSH identity (the script that runs before sshd on Lima's every boot: here once, the
  // machine is restarted after).
  s += Cat("sh <<'SS_BOOT'\n", scripts.boot, "SS_BOOT\n");
  // The shares on every boot: a Linux guest does not mount Lume's by itself.
  std::string fstab = Cat(kLumeShareTag, " ", kGuestShares, " virtiofs rw,nofail 0 0\n");
  for (size_t i = 0; i < spec.mounts.size() && i < folders.size(); ++i) {
    const Mount& m = spec.mounts[i];
    s += Cat("mkdir -p ", ShellQuote(m.target), "\n");
    fstab += Cat(FstabField(Cat(kGuestShares, "/", folders[i])), " ", FstabField(m.target),
                 " none bind,nofail", m.read_only ? ",ro" : "", " 0 0\n");
  }
  s += Cat("sed -i '/# ss-share$/d' /etc/fstab\n");
  for (const auto& line : SplitLines(fstab)) {
    if (!line.empty())
      s += Cat("printf '%s\\n' ", ShellQuote(line + " # ss-share"), " >> /etc/fstab\n");
  }
  // ss's tools, before the #cloud-config's commands (which may use them). No stdin: apt and
  // npm must not read this script.
  const ImageTools& t = spec.tools;
  s += Cat("SS_PACKAGES=", ShellQuote(Join(t.packages, " ")), " SS_NODE_MAJOR=", t.node_major,
           " SS_NPM_MAJOR=", t.npm_major, " SS_NPM=", ShellQuote(Join(t.npm, " ")),
           " SS_REGISTRY=", ShellQuote(t.registry), " sh \"${0%/*}/", kLumeInstallTools,
           "\" </dev/null\n");
  s += Cat("sh <<'SS_SYSTEM'\n", scripts.system, "SS_SYSTEM\n");
  return s;
}

LumeBackend::LumeBackend(std::string url, std::string dir)
    : api_(std::move(url)), dir_(std::move(dir)) {}

std::string LumeBackend::Dir(const std::string& name) const { return Cat(dir_, "/", name); }

Probe LumeBackend::CheckHost() {
  Probe p;
  std::string version;
  if (api_.Answers(&version)) {
    p.usable = true;
    p.reason = Cat("Lume's server answers at ", api_.url(),
                   version.empty() ? "" : Cat(" (version ", version, ")"));
    return p;
  }
  if (!FindInPath("lume")) {
    p.reason = "Lume is not installed (no lume)";
    p.fix = kLumeInstallHint;
    return p;
  }
  p.usable = true;
  p.reason = Cat("Lume is installed; ss starts its server (lume serve) at ", api_.url(),
                 " when it needs it");
  return p;
}

SandboxState LumeBackend::State(const std::string& name) {
  auto vm = api_.Vm(name);
  return vm ? StateOf(*vm) : SandboxState::kNotExists;
}

Json LumeBackend::RequireVm(const std::string& name) {
  auto vm = api_.Vm(name);
  if (!vm) throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"));
  return *vm;
}

std::vector<LumeShare> LumeBackend::Shares(const std::string& name) const {
  std::vector<LumeShare> out;
  std::string file = Dir(name) + "/shares.json";
  if (!PathExists(file)) return out;
  Json j = Json::parse(ReadFile(file), nullptr, false);
  for (const auto& s : j.is_array() ? j : Json::array()) {
    out.push_back({Str(s, "hostPath"), s.value("readOnly", false)});
  }
  return out;
}

void LumeBackend::WaitWhilePulling(const std::string& name, Progress& progress) {
  auto deadline = std::chrono::steady_clock::now() + kPullTimeout;
  int shown = -1;
  while (std::chrono::steady_clock::now() < deadline) {
    auto vm = api_.Vm(name);  // a failed pull throws Lume's message
    if (vm && Str(*vm, "status") != "pulling") return;
    int percent = vm ? static_cast<int>(Int(*vm, "downloadProgress")) : -1;
    if (percent >= 0 && percent / 10 != shown / 10) {
      shown = percent;
      progress.Step(Cat("downloading the image: ", percent, "%"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  throw Error(kExitTempFail, Cat("Lume did not finish pulling the image for '", name, "' within ",
                                 kPullTimeout.count(), " minutes"));
}

Json LumeBackend::RunAndWait(const std::string& name, const std::vector<LumeShare>& extra) {
  std::vector<LumeShare> shares = Shares(name);
  shares.insert(shares.end(), extra.begin(), extra.end());
  Json vm = RequireVm(name);
  if (Str(vm, "status") != "running") api_.Run(name, shares);
  auto deadline = std::chrono::steady_clock::now() + kBootTimeout;
  bool seen_running = false;
  while (std::chrono::steady_clock::now() < deadline) {
    vm = RequireVm(name);
    std::string status = Str(vm, "status");
    if (status == "running") seen_running = true;
    if (status == "running" && !Str(vm, "ipAddress").empty() &&
        vm.value("sshAvailable", Json()) == true) {
      return vm;
    }
    if (seen_running && status == "stopped") {
      throw Error(kExitUnavailable, Cat("'", name, "' stopped while it booted"), {},
                  {"see Lume's log: lume logs, or ~/.lume"});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  throw Error(kExitTempFail,
              Cat("'", name, "' has no SSH after ", kBootTimeout.count(), " minutes (Lume reports ",
                  Str(vm, "status"), ", address ",
                  Str(vm, "ipAddress").empty() ? "none" : Str(vm, "ipAddress"), ")"));
}

void LumeBackend::FirstBoot(const SandboxSpec& spec, Progress& progress) {
  const std::string& name = spec.name;
  std::vector<LumeShare> shares = Shares(name);
  // Last, so that the other folders keep the names they have on every later run.
  std::string seed = Cat(Dir(name), "/", kSeed);
  MakeDirs(seed, 0700);
  std::vector<LumeShare> with_seed = shares;
  with_seed.push_back({seed, true});
  std::vector<std::string> folders = LumeShareFolders(with_seed);
  AtomicWrite(seed + "/first-boot", LumeFirstBoot(spec, folders), 0600);
  AtomicWrite(Cat(seed, "/", kLumeInstallTools), RequireResource("shell/ss-install-tools"), 0600);
  progress.Step(Cat("booting '", name, "' (Lume)"));
  Json vm = RunAndWait(name, {with_seed.back()});
  progress.Step(Cat("provisioning '", name, "' at ", Str(vm, "ipAddress"),
                    ", with ss's tools that Lume's image lacks (a few minutes)"));
  std::string script = Cat(kGuestShares, "/", folders.back(), "/first-boot");
  std::string root_part =
      Cat("mkdir -p ", kGuestShares, " && (mountpoint -q ", kGuestShares, " || mount -t virtiofs ",
          kLumeShareTag, " ", kGuestShares, ") && exec sh ", ShellQuote(script));
  // The image's published password, for its sudo: the only thing this login is told.
  std::string command = Cat("printf 'lume\\n' | sudo -S -p '' sh -c ", ShellQuote(root_part));
  ProcessOptions o;
  o.timeout = kFirstBootTimeout;
  try {
    RunChecked(
        {"lume", "ssh", name, "--timeout", std::to_string(kFirstBootTimeout.count() * 60), command},
        Cat("the first boot of '", name, "' failed"), o, kExitUnavailable);
  } catch (...) {
    RemoveTree(seed);
    throw;
  }
  RemoveTree(seed);
  progress.Step(Cat("restarting '", name, "' with its shares"));
  api_.Stop(name);
  RunAndWait(name);
}

void LumeBackend::Create(const SandboxSpec& spec, Progress& progress) {
  const std::string& name = spec.name;
  if (api_.Vm(name)) {
    throw Error(kExitCantCreate, Cat("Lume already has a machine called '", name, "'"), {},
                {"pick another sandbox name with --sandbox, or delete it: " + DeleteCommand(name)});
  }
  progress.Step(Cat("pulling ", kLumeImage, " from ghcr.io/trycua (Lume)"));
  api_.PullStart(kLumeImage, name);
  try {
    WaitWhilePulling(name, progress);
    const Resources& r = spec.resources;
    api_.Set(name, r.cpus, r.memory, r.disk);
    MakeDirs(Dir(name), 0700);
    Json shares = Json::array();
    for (const auto& m : spec.mounts) {
      shares.push_back({{"hostPath", m.source}, {"readOnly", m.read_only}});
    }
    AtomicWrite(Dir(name) + "/shares.json", shares.dump(2) + "\n", 0600);
    if (spec.before_first_boot) spec.before_first_boot();
    FirstBoot(spec, progress);
  } catch (...) {
    try {
      Delete(name);
    } catch (const Error& e) {
      Warn(Cat("could not remove the half-made '", name, "': ", e.what()));
    }
    throw;
  }
}

void LumeBackend::Start(const std::string& name, const Resources& resources) {
  Json vm = RequireVm(name);
  if (Str(vm, "status") == "stopped") {
    int cpus = resources.cpus > 0 && resources.cpus != Int(vm, "cpuCount") ? resources.cpus : 0;
    int64_t memory =
        resources.memory > 0 && resources.memory != Int(vm, "memorySize") ? resources.memory : 0;
    int64_t total = vm.contains("diskSize") ? Int(vm["diskSize"], "total") : -1;
    int64_t disk = resources.disk > total && total > 0 ? resources.disk : 0;
    api_.Set(name, cpus, memory, disk);
  }
  RunAndWait(name);
}

void LumeBackend::Stop(const std::string& name, std::chrono::seconds /*timeout*/) {
  // Lume stops a machine its own way (and takes 5 s to answer): there is no gentler or harder.
  auto vm = api_.Vm(name);
  if (!vm || Str(*vm, "status") != "running") return;
  api_.Stop(name);
}

void LumeBackend::Delete(const std::string& name) {
  for (const auto& s : Snapshots(name)) api_.Delete(SnapshotVm(name, s.name));
  if (auto vm = api_.Vm(name)) {
    if (Str(*vm, "status") == "running") api_.Stop(name);
    api_.Delete(name);
  }
  RemoveTree(Dir(name));
}

SandboxStatus LumeBackend::Status(const std::string& name) {
  SandboxStatus s;
  auto vm = api_.Vm(name);
  if (!vm) return s;
  s.state = StateOf(*vm);
  s.limits.cpus = static_cast<int>(std::max<int64_t>(0, Int(*vm, "cpuCount")));
  s.limits.memory = std::max<int64_t>(0, Int(*vm, "memorySize"));
  if (vm->contains("diskSize") && (*vm)["diskSize"].is_object()) {
    s.limits.disk = std::max<int64_t>(0, Int((*vm)["diskSize"], "total"));
    s.disk_used = Int((*vm)["diskSize"], "allocated");
  }
  s.address = Str(*vm, "ipAddress");
  std::vector<std::string> notes{
      Cat("Lume, ", Str(*vm, "networkMode").empty() ? std::string("nat") : Str(*vm, "networkMode"),
          " network")};
  if (std::string op = Str(*vm, "provisioningOperation"); !op.empty()) notes.push_back(op);
  s.detail = Join(notes, "; ");
  return s;
}

SshTarget LumeBackend::Ssh(const std::string& name) {
  Json vm = RequireVm(name);
  std::string ip = Str(vm, "ipAddress");
  if (Str(vm, "status") != "running" || ip.empty()) {
    throw Error(kExitTempFail, Cat("Lume has no address for '", name, "' yet"), {},
                {Cat("start it: ss vm start --sandbox ", name)});
  }
  return {ip, 22};
}

std::string LumeBackend::CannotFence() {
  return "Lume's network is Apple's vmnet NAT, outside what ss can fence";
}

Json LumeBackend::SnapshotTimes(const std::string& name) const {
  std::string file = Dir(name) + "/snapshots.json";
  Json j = PathExists(file) ? Json::parse(ReadFile(file), nullptr, false) : Json::object();
  return j.is_object() ? j : Json::object();
}

void LumeBackend::SaveSnapshotTimes(const std::string& name, const Json& times) const {
  AtomicWrite(Dir(name) + "/snapshots.json", times.dump(2) + "\n", 0600);
}

std::vector<Snapshot> LumeBackend::Snapshots(const std::string& name) {
  Json j = SnapshotTimes(name);
  if (j.empty()) return {};
  std::vector<std::string> vms;
  for (const auto& vm : api_.Vms()) vms.push_back(Str(vm, "name"));
  std::vector<Snapshot> out;
  for (const auto& [snap, created] : j.items()) {
    if (std::find(vms.begin(), vms.end(), SnapshotVm(name, snap)) == vms.end()) continue;
    out.push_back({snap, std::chrono::system_clock::time_point(std::chrono::seconds(
                             created.is_number() ? created.get<int64_t>() : 0))});
  }
  std::sort(out.begin(), out.end(),
            [](const Snapshot& a, const Snapshot& b) { return a.created < b.created; });
  return out;
}

void LumeBackend::TakeSnapshot(const std::string& name, const std::string& snapshot) {
  for (const auto& s : Snapshots(name)) {
    if (s.name == snapshot) {
      throw Error(kExitCantCreate, Cat("'", name, "' already has a snapshot '", snapshot, "'"));
    }
  }
  // Lume copies a machine's files: stopped, so that its disk holds still.
  bool running = Str(RequireVm(name), "status") == "running";
  if (running) {
    Note(Cat("Lume copies a stopped machine: '", name, "' is restarted for the snapshot"));
    api_.Stop(name);
  }
  try {
    api_.Clone(name, SnapshotVm(name, snapshot));
    Json times = SnapshotTimes(name);
    times[snapshot] = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
    SaveSnapshotTimes(name, times);
  } catch (...) {
    if (running) RunAndWait(name);
    throw;
  }
  if (running) RunAndWait(name);
}

void LumeBackend::RestoreSnapshot(const std::string& name, const std::string& snapshot) {
  RequireSnapshot(*this, name, snapshot);
  // The machine as it is stays until the snapshot's copy has taken its place.
  std::string before = Cat(name, ".before-restore");
  if (api_.Vm(before)) api_.Delete(before);
  api_.Clone(name, before);
  api_.Delete(name);
  try {
    api_.Clone(SnapshotVm(name, snapshot), name);
  } catch (...) {
    api_.Clone(before, name);
    api_.Delete(before);
    throw;
  }
  api_.Delete(before);
}

void LumeBackend::DeleteSnapshot(const std::string& name, const std::string& snapshot) {
  RequireSnapshot(*this, name, snapshot);
  api_.Delete(SnapshotVm(name, snapshot));
  Json times = SnapshotTimes(name);
  times.erase(snapshot);
  SaveSnapshotTimes(name, times);
}

}  // namespace ss
