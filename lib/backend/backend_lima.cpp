// The Lima backend: a Lima virtual machine per sandbox, driven through `limactl` (Lima 2.x; see
// the facts on Lima's CLI and JSON). Lima runs QEMU on Linux hosts and Apple's
// Virtualization.framework (vz) on macOS.
//
// A sandbox is a Lima instance named after the sandbox, made from a template ss writes
// (LimaTemplate) rather than one of Lima's:
//   - the image is ss's own VM export (its disk, booted with its kernel and initrd);
//   - the shared folders are Lima mounts (writable only where the share is);
//   - Lima's user is the sandbox user (uid 1000, /home/sandbox), so the image's user is the one
//     Lima sets up; the install's key and the pinned host key come from ss's provisioning, not
//     from Lima's: the #cloud-config every backend gets, turned into a `boot` script (the SSH
//     identity, before sshd starts) and a `system` script (the rest) (provision_script.hpp);
//   - SSH on a loopback port ss chooses (Lima forwards it to the machine's port 22); ss reaches
//     it with its own key and verifies the pinned host key, where Lima's own ssh does neither;
//   - none of Lima's automatic port forwards, no containerd, no keys from ~/.ssh.
// Lima's network is its own (a user-mode network behind its host agent): ss cannot fence it,
// so a Lima sandbox is made only with an open network policy (CannotFence).
#include "backend_lima.hpp"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <ctime>
#include <regex>

#include "error.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "image.hpp"
#include "net.hpp"
#include "output.hpp"
#include "process.hpp"
#include "provision_script.hpp"
#include "size.hpp"
#include "strings.hpp"

namespace ss {
namespace {

constexpr const char* kLimactl = "limactl";
constexpr int kMinimumMajor = 2;
constexpr std::chrono::minutes kBootTimeout{10};
// Creating an instance fetches the image (a local file: copied) and makes the instance's disk
// from it: gigabytes, on a disk other work may keep busy.
constexpr std::chrono::minutes kCreateTimeout{10};
constexpr const char* kNoInstance = "No instance matching";

#ifdef __APPLE__
constexpr const char* kVmType = "vz";
constexpr const char* kMountType = "virtiofs";
#else
constexpr const char* kVmType = "qemu";
constexpr const char* kMountType = "9p";  // Lima's default for QEMU
#endif

// Lima's name for the host's architecture (macOS says arm64).
std::string HostArch() {
  std::string machine = HostMachine();
  return machine == "arm64" ? "aarch64" : machine;
}

std::string MiB(int64_t bytes) { return Cat(bytes / kMiB, "MiB"); }

// The major version of `limactl --version` ("limactl version 2.0.3"), or -1.
int MajorVersion(const std::string& text, std::string* version) {
  std::smatch m;
  static const std::regex re(R"(version\s+v?((\d+)\.\d+[^\s]*))");
  if (!std::regex_search(text, m, re)) return -1;
  *version = m[1];
  return std::stoi(m[2]);
}

// Broken because the machine itself is gone (it crashed or was killed) while Lima's host agent
// lingers: for a moment as it closes its forwards and exits, or for good if it hangs. The
// sandbox is not running; starting it stops the instance by force first, as a Lima user would.
bool MachineGone(const Json& instance) {
  return instance.value("status", "") == "Broken" && instance.value("hostAgentPID", 0) > 0 &&
         instance.value("driverPID", 0) == 0;
}

SandboxState StateOf(const Json& instance) {
  std::string status = instance.value("status", "");
  if (status == "Running") return SandboxState::kRunning;
  if (status == "Stopped" || MachineGone(instance)) return SandboxState::kStopped;
  if (status == "Installing" || status == "Uninitialized") return SandboxState::kStarting;
  return SandboxState::kBroken;  // Broken, or a status this ss does not know
}

constexpr const char* kInstallHint =
    "install Lima 2 or later: https://lima-vm.io/docs/installation/";

void RequireLimactl() {
  if (!FindInPath(kLimactl)) {
    throw Error(kExitUnavailable, "Lima is not installed (no limactl)", {}, {kInstallHint});
  }
}

}  // namespace

std::string LimaTemplate(const SandboxSpec& spec, int ssh_port) {
  VmImage image = VmImageFiles(spec.image_dir);
  ProvisionScripts scripts = CloudConfigToScripts(spec.user_data);
  std::string arch = HostArch();
  YAML::Emitter y;
  y << YAML::Comment(Cat("Lima template of ss sandbox '", spec.name, "', written by ss"));
  y << YAML::BeginMap;
  y << YAML::Key << "minimumLimaVersion" << YAML::Value << YAML::DoubleQuoted << "2.0.0";
  y << YAML::Key << "vmType" << YAML::Value << kVmType;
  y << YAML::Key << "os" << YAML::Value << "Linux";
  y << YAML::Key << "arch" << YAML::Value << arch;
  y << YAML::Key << "images" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "location" << YAML::Value << image.disk;
  y << YAML::Key << "arch" << YAML::Value << arch;
  y << YAML::Key << "kernel" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "location" << YAML::Value << image.kernel;
  y << YAML::Key << "cmdline" << YAML::Value << VmImage::kKernelArgs << YAML::EndMap;
  y << YAML::Key << "initrd" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "location" << YAML::Value << image.initrd << YAML::EndMap;
  y << YAML::EndMap << YAML::EndSeq;
  const Resources& r = spec.resources;
  y << YAML::Key << "cpus" << YAML::Value << (r.cpus > 0 ? r.cpus : 2);
  y << YAML::Key << "memory" << YAML::Value << MiB(r.memory > 0 ? r.memory : 2048 * kMiB);
  y << YAML::Key << "disk" << YAML::Value << MiB(r.disk > 0 ? r.disk : 20 * kGiB);
  y << YAML::Key << "mountType" << YAML::Value << kMountType;
  y << YAML::Key << "mounts" << YAML::Value << YAML::BeginSeq;
  for (const auto& m : spec.mounts) {
    y << YAML::BeginMap;
    y << YAML::Key << "location" << YAML::Value << m.source;
    y << YAML::Key << "mountPoint" << YAML::Value << m.target;
    y << YAML::Key << "writable" << YAML::Value << !m.read_only;
    y << YAML::EndMap;
  }
  y << YAML::EndSeq;
  y << YAML::Key << "ssh" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "localPort" << YAML::Value << ssh_port;
  y << YAML::Key << "loadDotSSHPubKeys" << YAML::Value << false;
  y << YAML::Key << "forwardAgent" << YAML::Value << false << YAML::EndMap;
  y << YAML::Key << "user" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << "sandbox";
  y << YAML::Key << "uid" << YAML::Value << kSandboxUserId;
  y << YAML::Key << "home" << YAML::Value << "/home/sandbox" << YAML::EndMap;
  y << YAML::Key << "containerd" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "system" << YAML::Value << false;
  y << YAML::Key << "user" << YAML::Value << false << YAML::EndMap;
  y << YAML::Key << "upgradePackages" << YAML::Value << false;
  // Lima forwards every port the machine listens on to the host's loopback unless told not to:
  // nothing the sandbox opens reaches the host that way.
  y << YAML::Key << "portForwards" << YAML::Value << YAML::BeginSeq;
  for (const char* ip : {"0.0.0.0", "127.0.0.1"}) {
    y << YAML::BeginMap;
    y << YAML::Key << "guestIP" << YAML::Value << ip;
    y << YAML::Key << "guestPortRange" << YAML::Value << YAML::Flow << YAML::BeginSeq << 1 << 65535
      << YAML::EndSeq;
    y << YAML::Key << "proto" << YAML::Value << "any";
    y << YAML::Key << "ignore" << YAML::Value << true;
    y << YAML::EndMap;
  }
  y << YAML::EndSeq;
  y << YAML::Key << "provision" << YAML::Value << YAML::BeginSeq;
  for (const auto& [mode, script] :
       {std::pair{"boot", &scripts.boot}, {"system", &scripts.system}}) {
    y << YAML::BeginMap;
    y << YAML::Key << "mode" << YAML::Value << mode;
    y << YAML::Key << "script" << YAML::Value << YAML::Literal << *script;
    y << YAML::EndMap;
  }
  y << YAML::EndSeq;
  y << YAML::EndMap;
  if (!y.good()) throw Error(kExitSoftware, Cat("internal: the Lima template: ", y.GetLastError()));
  return std::string(y.c_str()) + "\n";
}

std::vector<Snapshot> ParseLimaSnapshots(const std::string& text) {
  // The ID is "--" while the machine runs (QEMU's `info snapshots`), a number when it is stopped.
  static const std::regex row(
      R"(^\s*(?:\d+|--)\s+(\S+)\s.*?(\d{4})-(\d{2})-(\d{2})\s+(\d{2}):(\d{2}):(\d{2}))");
  std::vector<Snapshot> out;
  for (const auto& line : SplitLines(text)) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    std::tm tm{};
    tm.tm_year = std::stoi(m[2]) - 1900;
    tm.tm_mon = std::stoi(m[3]) - 1;
    tm.tm_mday = std::stoi(m[4]);
    tm.tm_hour = std::stoi(m[5]);
    tm.tm_min = std::stoi(m[6]);
    tm.tm_sec = std::stoi(m[7]);
    tm.tm_isdst = -1;  // QEMU prints local time
    out.push_back({m[1], std::chrono::system_clock::from_time_t(std::mktime(&tm))});
  }
  return out;
}

std::string LimaBackend::Limactl(const std::vector<std::string>& args, std::string_view what,
                                 std::chrono::seconds timeout) {
  RequireLimactl();
  std::vector<std::string> argv{kLimactl};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout = timeout;
  return RunChecked(argv, what, o, kExitUnavailable);
}

std::optional<Json> LimaBackend::Instance(const std::string& name) {
  RequireLimactl();
  ProcessOptions o;
  o.timeout = std::chrono::seconds(30);
  ProcessResult r = Run({kLimactl, "list", "--json", name}, o);
  if (!r.ok()) {
    if (r.err.find(kNoInstance) != std::string::npos) return std::nullopt;
    std::string err(Trim(r.err));
    throw Error(kExitUnavailable,
                Cat("cannot read Lima's instances: ", err.empty() ? "no answer" : err));
  }
  // NDJSON: one object per line.
  for (const auto& line : SplitLines(r.out)) {
    if (Trim(line).empty()) continue;
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_object()) {
      throw Error(kExitUnavailable, Cat("limactl list printed what is not JSON: ", line));
    }
    if (j.value("name", "") == name) return j;
  }
  return std::nullopt;
}

Json LimaBackend::RequireInstance(const std::string& name) {
  auto instance = Instance(name);
  if (!instance) throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"));
  return *instance;
}

Probe LimaBackend::CheckHost() {
  Probe p;
  if (!FindInPath(kLimactl)) {
    p.reason = "Lima is not installed (no limactl)";
    p.fix = kInstallHint;
    return p;
  }
  ProcessOptions o;
  o.timeout = std::chrono::seconds(10);
  ProcessResult r = Run({kLimactl, "--version"}, o);
  std::string version;
  int major = r.ok() ? MajorVersion(r.out, &version) : -1;
  if (major < 0) {
    std::string err(Trim(r.err.empty() ? r.out : r.err));
    p.reason = Cat("limactl does not run (", err.empty() ? "no answer" : err, ")");
    p.fix = "reinstall Lima: https://lima-vm.io/docs/installation/";
    return p;
  }
  if (major < kMinimumMajor) {
    p.reason = Cat("Lima ", version, " is older than 2.0");
    p.fix = "upgrade Lima: https://lima-vm.io/docs/installation/";
    return p;
  }
  p.usable = true;
  p.reason = Cat("Lima ", version, " (", kVmType, ")");
  return p;
}

SandboxState LimaBackend::State(const std::string& name) {
  auto instance = Instance(name);
  return instance ? StateOf(*instance) : SandboxState::kNotExists;
}

void LimaBackend::Create(const SandboxSpec& spec, Progress& progress) {
  if (Instance(spec.name)) {
    throw Error(
        kExitCantCreate, Cat("a Lima instance called '", spec.name, "' already exists"), {},
        {"pick another sandbox name with --sandbox, or delete it: " + DeleteCommand(spec.name)});
  }
  progress.Step(Cat("creating Lima instance '", spec.name, "'"));
  // The template holds the host key: written for limactl only, and gone once Lima has its copy.
  {
    TempDir tmp;
    std::string file = tmp.path() + "/" + spec.name + ".yaml";
    AtomicWrite(file, LimaTemplate(spec, FreeLoopbackPort()), 0600);
    Limactl({"create", "--tty=false", Cat("--name=", spec.name), file},
            Cat("cannot create Lima instance '", spec.name, "'"), kCreateTimeout);
  }
  try {
    // Lima's copy too (the instance's lima.yaml, and the seed it makes from it) is the user's only.
    std::string dir = RequireInstance(spec.name).value("dir", "");
    if (!dir.empty()) ::chmod(dir.c_str(), 0700);
    progress.Step(Cat("booting '", spec.name, "' (Lima, ", kVmType, ")"));
    if (spec.before_first_boot) spec.before_first_boot();
    Limactl({"start", "--tty=false", spec.name}, Cat("cannot start '", spec.name, "'"),
            kBootTimeout);
  } catch (...) {
    Delete(spec.name);
    throw;
  }
}

void LimaBackend::ApplyResources(const std::string& name, const Json& instance,
                                 const Resources& r) {
  std::vector<std::string> args{"edit", "--tty=false", name};
  if (r.cpus > 0 && r.cpus != instance.value("cpus", 0)) {
    args.push_back(Cat("--cpus=", r.cpus));
  }
  if (r.memory > 0 && r.memory != instance.value("memory", int64_t{0})) {
    args.push_back(Cat("--set=.memory = \"", MiB(r.memory), "\""));
  }
  // The template always names the disk, so Lima reports it (its own default is larger).
  int64_t disk = instance.value("disk", int64_t{0});
  if (disk > 0 && r.disk > disk) {
    args.push_back(Cat("--set=.disk = \"", MiB(r.disk), "\""));
  } else if (r.disk > 0 && r.disk < disk) {
    Warn(Cat("the disk of '", name, "' is ", FormatSizeHuman(disk), " and cannot shrink to ",
             FormatSizeHuman(r.disk), "; reset the sandbox to get a smaller one"));
  }
  // The SSH port ss chose may have been taken since: another free one.
  int port = instance.value("sshLocalPort", 0);
  if (port > 0 && TcpPortOpen("127.0.0.1", port, std::chrono::milliseconds(200))) {
    args.push_back(Cat("--set=.ssh.localPort = ", FreeLoopbackPort()));
  }
  if (args.size() > 3) Limactl(args, Cat("cannot change the resources of '", name, "'"));
}

void LimaBackend::Start(const std::string& name, const Resources& resources) {
  Json instance = RequireInstance(name);
  if (instance.value("status", "") == "Running") return;
  if (MachineGone(instance)) {
    // Lima will not start it while its host agent runs ("seems running"): that agent goes.
    Limactl({"stop", "--force", name}, Cat("cannot stop what is left of '", name, "'"));
    instance = RequireInstance(name);
  }
  if (instance.value("status", "") == "Stopped") ApplyResources(name, instance, resources);
  Limactl({"start", "--tty=false", name}, Cat("cannot start '", name, "'"), kBootTimeout);
}

void LimaBackend::Stop(const std::string& name, std::chrono::seconds timeout) {
  auto instance = Instance(name);
  if (!instance || instance->value("status", "") == "Stopped") return;
  if (timeout.count() > 0) {
    ProcessOptions o;
    o.timeout = timeout;
    if (Run({kLimactl, "stop", name}, o).ok()) return;
    Debug(Cat("lima: '", name, "' did not stop within ", timeout.count(), "s; forcing it"));
  }
  Limactl({"stop", "--force", name}, Cat("cannot stop '", name, "'"));
}

void LimaBackend::Delete(const std::string& name) {
  if (!Instance(name)) return;
  Limactl({"delete", "--force", name}, Cat("cannot delete '", name, "'"));
}

SandboxStatus LimaBackend::Status(const std::string& name) {
  SandboxStatus s;
  auto instance = Instance(name);
  if (!instance) return s;
  s.state = StateOf(*instance);
  s.limits.cpus = instance->value("cpus", 0);
  s.limits.memory = instance->value("memory", int64_t{0});
  s.limits.disk = instance->value("disk", int64_t{0});
  std::vector<std::string> notes{
      Cat("Lima ", instance->value("limaVersion", "?"), ", ", instance->value("vmType", "?"))};
  if (std::string message = instance->value("message", ""); !message.empty()) {
    notes.push_back(message);
  }
  for (const auto& e : instance->value("errors", Json::array())) {
    if (e.is_string()) notes.push_back(e.get<std::string>());
  }
  s.detail = Join(notes, "; ");
  return s;
}

SshTarget LimaBackend::Ssh(const std::string& name) {
  Json instance = RequireInstance(name);
  SshTarget t;
  t.host = instance.value("sshAddress", "127.0.0.1");
  t.port = instance.value("sshLocalPort", 0);
  if (t.port <= 0) {
    throw Error(kExitTempFail, Cat("Lima has no SSH port for '", name, "' yet"), {},
                {Cat("start it: ss vm start --sandbox ", name)});
  }
  return t;
}

std::string LimaBackend::CannotFence() {
  return "Lima's network is its own (a user-mode network behind Lima's host agent)";
}

// Snapshots are Lima's (`limactl snapshot`): QEMU's internal snapshots of the machine's disk.
// Lima has none for vz machines.
void LimaBackend::RequireSnapshots(const Json& instance) {
  if (instance.value("vmType", "") == "vz") {
    throw Error(kExitUnavailable, "Lima cannot snapshot a vz machine (its snapshots are QEMU's)",
                {}, {"snapshots of Lima sandboxes work where Lima runs them with QEMU"});
  }
}

void LimaBackend::TakeSnapshot(const std::string& name, const std::string& snapshot) {
  RequireSnapshots(RequireInstance(name));
  for (const auto& s : Snapshots(name)) {
    if (s.name == snapshot) {
      throw Error(kExitCantCreate, Cat("'", name, "' already has a snapshot '", snapshot, "'"));
    }
  }
  Limactl({"snapshot", "create", name, Cat("--tag=", snapshot)},
          Cat("cannot snapshot '", name, "'"), std::chrono::minutes(5));
}

void LimaBackend::RestoreSnapshot(const std::string& name, const std::string& snapshot) {
  RequireSnapshots(RequireInstance(name));
  RequireSnapshot(*this, name, snapshot);
  Limactl({"snapshot", "apply", name, Cat("--tag=", snapshot)},
          Cat("cannot restore '", name, "' to '", snapshot, "'"), std::chrono::minutes(5));
}

void LimaBackend::DeleteSnapshot(const std::string& name, const std::string& snapshot) {
  RequireSnapshots(RequireInstance(name));
  RequireSnapshot(*this, name, snapshot);
  Limactl({"snapshot", "delete", name, Cat("--tag=", snapshot)},
          Cat("cannot delete snapshot '", snapshot, "'"), std::chrono::minutes(5));
}

std::vector<Snapshot> LimaBackend::Snapshots(const std::string& name) {
  auto instance = Instance(name);
  if (!instance || instance->value("vmType", "") == "vz") return {};
  return ParseLimaSnapshots(
      Limactl({"snapshot", "list", name}, Cat("cannot list the snapshots of '", name, "'")));
}

}  // namespace ss
