#include "sandbox.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "agent_config.hpp"
#include "backend_factory.hpp"
#include "base_record.hpp"
#include "deploy.hpp"
#include "egress.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "image.hpp"
#include "net.hpp"
#include "net_store.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "provision.hpp"
#include "session_share.hpp"
#include "share_guard.hpp"
#include "shares.hpp"
#include "shell_quote.hpp"
#include "ssh_keys.hpp"
#include "strings.hpp"
#include "suggest.hpp"
#include "timefmt.hpp"

namespace ss {
namespace {
constexpr const char* kProxyEnvironmentComment = "# the sandbox's proxy (ss-net on the host):";
}  // namespace
std::string SandboxesDir() { return StateDir() + "/sandboxes"; }

Error VmFailedToStart(const std::string& backend, const std::string& why,
                      const std::vector<std::string>& why_details) {
  std::vector<std::string> details;
  if (!why.empty()) details.push_back(Cat("Reason: ", why));
  details.insert(details.end(), why_details.begin(), why_details.end());
  details.insert(details.end(), {"", "Possible causes:", "  • Not enough memory (need 4GB free)",
                                 "  • Not enough disk space (need 5GB free)",
                                 Cat("  • ", backend, " not installed or not running"), "",
                                 "Try:", "  ss reset          # Reset VM",
                                 "  ss doctor         # Check the host and backends"});
  return Error(kExitUnavailable, "VM failed to start", details).AsBlock();
}

Error CouldNotConnect(const std::string& why, const std::string& console_log) {
  std::vector<std::string> details = {"", "The VM is running but SSH is not responding."};
  if (!why.empty()) details.push_back(Cat("(", why, ")"));
  details.insert(details.end(), {"", "Try:", "  ss reset          # Reset VM",
                                 "  ss status         # Check VM status"});
  if (!console_log.empty())
    details.push_back(Cat("  less ", ShellQuote(console_log), "   # Where its boot stopped"));
  return Error(kExitUnavailable, "Could not connect to VM", details).AsBlock();
}

std::string ResolveSandboxName(const std::string& flag) {
  std::string name = flag;
  for (const char* var : {"SS_SANDBOX", "CLAUDE_SANDBOX"}) {
    if (!name.empty()) break;
    if (const char* v = std::getenv(var); v && *v) name = v;
  }
  if (name.empty()) name = kDefaultSandbox;
  ValidateSandboxName(name);
  return name;
}

std::string ProfileSandbox(const Config& config, const std::string& profile,
                           const std::string& sandbox_flag) {
  std::vector<std::string> profiles = config.ProfileNames();
  if (std::find(profiles.begin(), profiles.end(), profile) == profiles.end()) {
    std::vector<std::string> hints;
    if (auto guess = Suggest(profile, profiles))
      hints.push_back(Cat("did you mean '", *guess, "'?"));
    hints.push_back(profiles.empty() ? Cat("define it in config.yaml: ss config set profiles.",
                                           profile, ".description '...'")
                                     : Cat("profiles: ", Join(profiles, ", ")));
    throw Error(kExitUsage, Cat("no profile '", profile, "' in ", DisplayPath(ConfigPath())), {},
                hints);
  }
  if (!sandbox_flag.empty() && sandbox_flag != profile) {
    throw Error(kExitUsage,
                Cat("--profile ", profile, " runs in the sandbox '", profile,
                    "'; --sandbox names another ('", sandbox_flag, "')"),
                {}, {"give one of them"});
  }
  return profile;
}

std::vector<std::string> KnownSandboxes() {
  std::vector<std::string> out;
  for (auto& name : ListDir(SandboxesDir())) {
    if (IsSandboxName(name) && SandboxExists(name)) {
      out.push_back(std::move(name));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Sandbox::Sandbox(std::string name, Config config, std::string backend_flag)
    : name_(std::move(name)), config_(std::move(config)) {
  ValidateSandboxName(name_);
  std::string recorded;
  if (auto text = ReadFileIfExists(Dir() + "/sandbox.json")) {
    try {
      Json rec = Json::parse(*text);
      recorded = rec.value("backend", "");
      backend_reason_ = rec.value("backend_reason", "");
      record_complete_ = rec.value("complete", true);
      if (rec.contains("deploy") && rec["deploy"].is_string()) deploy_dir_ = rec["deploy"];
      if (rec.contains("shares") && rec["shares"].is_object()) {
        shares_.projects = rec["shares"].value("projects", true);
        for (const auto& m : rec["shares"].value("mounts", Json::array())) {
          shares_.mounts.push_back(MountFromJson(m));
        }
      }
    } catch (const Json::exception&) {
      Warn(Cat("the record of sandbox '", name_, "' is damaged; ignoring it"));
    }
  }
  if (!recorded.empty()) {
    // An existing sandbox never changes backend behind the user's back.
    if (!backend_flag.empty() && backend_flag != "auto" && backend_flag != recorded) {
      throw Error(kExitUsage,
                  Cat("sandbox '", name_, "' runs on ", recorded, ", not ", backend_flag), {},
                  {Cat("delete it first to move it: ss vm delete --sandbox ", name_)});
    }
    backend_name_ = recorded;
  } else {
    backend_name_ = backend_flag.empty() ? config_.SandboxValue(name_, "backend").get<std::string>()
                                         : backend_flag;
    if (backend_name_ == "auto") {
      BackendChoice choice = ChooseBackend(config_);
      backend_name_ = choice.name;
      backend_reason_ = Cat("chosen by auto: ", choice.reason);
      Debug(Cat("backend auto: ", choice.reason));
    } else {
      backend_reason_ = backend_flag.empty() ? Cat("set in ", DisplayPath(ConfigPath()))
                                             : Cat("set with --backend ", backend_flag);
    }
  }
  backend_ = MakeBackend(backend_name_, config_);
}

std::string Sandbox::Dir() const { return Cat(SandboxesDir(), "/", name_); }

bool SandboxExists(const std::string& name) {
  return PathExists(Cat(SandboxesDir(), "/", name, "/sandbox.json"));
}

bool Sandbox::exists() const { return SandboxExists(name_); }

SandboxState Sandbox::State() {
  SandboxState state = backend_->State(name_);
  if (state != SandboxState::kNotExists && !exists()) {
    // The machine is there but this install has no record (or keys) of it.
    return SandboxState::kBroken;
  }
  return state;
}

std::chrono::seconds Sandbox::DefaultStartTimeout() const {
  // A VM without hardware acceleration boots in a minute or so, more on a busy host.
  if (backend_name_ == "qemu" && !DetectAccel().hardware()) return std::chrono::seconds(300);
  return std::chrono::seconds(30);
}

Resources Sandbox::DesiredResources() const {
  Resources r;
  r.cpus = static_cast<int>(config_.SandboxValue(name_, "cpus").get<int64_t>());
  r.memory = config_.SandboxValue(name_, "memory").get<int64_t>();
  r.disk = config_.SandboxValue(name_, "disk").get<int64_t>();
  r.processes = config_.SandboxValue(name_, "processes").get<int64_t>();
  r.open_files = config_.SandboxValue(name_, "open_files").get<int64_t>();
  return r;
}

bool Sandbox::ephemeral() const {
  Json v = config_.SandboxValue(name_, "ephemeral");
  return v.is_boolean() && v.get<bool>();
}

// The record is written before the machine is made ("complete": false) and completed after, so
// that a creation cut short (ss killed, the host rebooted) is recognised and redone.
void Sandbox::WriteRecord(const std::string& image_id, bool complete) {
  Json rec = JsonDocument("SandboxRecord");
  rec["name"] = name_;
  rec["backend"] = backend_name_;
  rec["backend_reason"] = backend_reason_;
  rec["image"] = image_id;
  rec["created"] = FormatRfc3339(NowSeconds());
  rec["complete"] = complete;
  rec["deploy"] = deploy_dir_.empty() ? Json() : Json(deploy_dir_);
  rec["shares"] = {{"projects", shares_.projects}, {"mounts", Json::array()}};
  for (const auto& m : shares_.mounts) rec["shares"]["mounts"].push_back(MountToJson(m));
  AtomicWrite(Dir() + "/sandbox.json", DumpJson(rec, 2) + "\n", 0644);
  record_complete_ = complete;
}

std::string Sandbox::DeployForCreation() const {
  if (!deploy_request_.empty()) return ResolveDeployDir(deploy_request_, "--deploy DIR");
  if (!deploy_dir_.empty()) {
    return ResolveDeployDir(deploy_dir_, Cat("ss vm reset --sandbox ", name_, " --deploy DIR"));
  }
  Json v = config_.SandboxValue(name_, "deploy");
  if (v.is_string() && !v.get<std::string>().empty()) {
    return ResolveDeployDir(v.get<std::string>(),
                            Cat("sandboxes.", name_, ".deploy in ", DisplayPath(ConfigPath())));
  }
  return "";
}

std::string DescribeShares(const Shares& shares) {
  std::vector<std::string> parts;
  if (shares.projects) parts.emplace_back("the projects folder");
  for (const auto& m : shares.mounts) {
    parts.push_back(Cat(m.source, " at ", m.target, m.read_only ? " (read-only)" : ""));
  }
  return parts.empty() ? "no host folder" : Join(parts, ", ");
}

Shares ConfiguredShares(const Config& config, const std::string& sandbox) {
  Shares shares;
  std::string key = config.SandboxKey(sandbox, "mounts");
  if (key.empty()) return shares;
  std::string origin = Cat(key, " in ", DisplayPath(ConfigPath()));
  for (const auto& item : config.Get(key)) {
    std::string problem;
    auto spec = ParseMountSpec(item.get<std::string>(), &problem);
    if (!spec) throw Error(kExitConfig, Cat(origin, ": ", problem));
    shares.mounts.push_back(
        {Cat("mount-", shares.mounts.size() + 1),
         ResolveHostFolder(spec->host, "mount source", origin, !spec->read_only), spec->guest,
         spec->read_only});
  }
  return shares;
}

void Sandbox::set_shares(Shares shares) {
  if (exists() && shares != shares_) {
    throw Error(kExitUsage,
                Cat("sandbox '", name_, "' was made sharing ", DescribeShares(shares_),
                    "; this session asks for ", DescribeShares(shares)),
                {},
                {Cat("folders are shared when a sandbox is made; to make '", name_,
                     "' again with these: ss destroy --sandbox ", name_, ", then run this again"),
                 "or run in another sandbox: --sandbox NEW-NAME (add --ephemeral to remove it "
                 "after)"});
  }
  share_request_ = std::move(shares);
}

void Sandbox::Create(Progress& progress, const std::string& deploy) {
  ImageInfo image = backend_->UsesImage() ? EnsureImage(config_, progress) : ImageInfo{};
  MakeDirs(Dir(), 0700);
  std::string client_key = EnsureClientKey();
  // The host key is made here and pinned before the machine exists: the first connection is
  // already verified.
  KeyPair host = GenerateEd25519Key(Cat("ss-", name_));
  WriteKeyPair(Dir() + "/host_ed25519", host);
  std::string known_hosts = Dir() + "/known_hosts";
  ::unlink(known_hosts.c_str());

  SandboxSpec spec;
  spec.name = name_;
  spec.image_id = image.id;
  spec.image_dir = image.dir;
  if (!backend_->UsesImage()) spec.tools = ImageToolsFor(ImageOptionsFrom(config_));
  spec.resources = DesiredResources();
  Owner owner = ProjectsIds();
  spec.host_uid = owner.uid;
  spec.host_gid = owner.gid;
  if (shares_.projects) spec.mounts.push_back({"projects", ProjectsDir(), kProjectsTarget, false});
  spec.mounts.insert(spec.mounts.end(), shares_.mounts.begin(), shares_.mounts.end());
  deploy_dir_ = deploy;
  if (!deploy.empty()) spec.mounts.push_back({"deploy", deploy, kDeployTarget, false});
  ProvisionInput in;
  in.hostname = name_;
  in.instance_id = Cat(name_, "-", NowSeconds().time_since_epoch().count());
  in.client_public_key = ReadPublicKey(client_key);
  in.host_private_key = host.private_key;
  in.host_public_key = host.public_key;
  in.cdp_port = static_cast<int>(config_.Int("browser.cdp_port"));
  in.shell =
      login_shell_.empty() ? config_.SandboxValue(name_, "shell").get<std::string>() : login_shell_;
  in.sync_exclude = RenderSyncExclude(SyncExcludes(config_));
  spec.meta_data = RenderMetaData(in);
  spec.user_data = RenderUserData(in);
  spec.before_first_boot = [this] { KeepEgress(); };
  WriteRecord(image.id, false);
  try {
    backend_->Create(spec, progress);
  } catch (...) {
    // The backend removed what it made; so does this layer: the network fence and ss-net
    // installed before the first boot go too (with the record gone, nothing else would).
    try {
      RemoveEgress(name_);
      StopShareGuard(name_);
    } catch (const Error& e) {
      Warn(Cat("the network fence of '", name_, "' stays: ", e.what()));
    }
    RemoveTree(Dir());
    throw;
  }
  WriteRecord(image.id, true);
}

SshEndpoint Sandbox::Endpoint() { return EndpointAt(backend_->Ssh(name_)); }

SshEndpoint Sandbox::EndpointAt(const SshTarget& target) {
  SshEndpoint e;
  e.host = target.host;
  e.port = target.port;
  e.user = "sandbox";
  e.identity_file = EnsureClientKey();
  e.known_hosts_file = Dir() + "/known_hosts";
  std::string host_pub = Dir() + "/host_ed25519.pub";
  if (!PathExists(host_pub)) {
    throw Error(kExitNoPerm, Cat("no pinned host key for sandbox '", name_, "'"), {},
                {Cat("ss cannot verify it; recreate it: ss reset --sandbox ", name_)});
  }
  // The pin follows the address (a port may change between starts); the key never does.
  std::string pub = ReadPublicKey(host_pub);
  if (PinnedHostKeys(e.known_hosts_file, e.host, e.port) !=
      std::vector<std::string>{pub.substr(0, pub.rfind(' '))}) {
    PinHostKey(e.known_hosts_file, e.host, e.port, pub);
  }
  return e;
}

SshOptions Sandbox::Options() const {
  SshOptions o;
  o.name = name_;
  return o;
}

GuestFacts Sandbox::Inspect() {
  GuestFacts f;
  SshOptions o = Options();
  o.tcp_timeout = std::chrono::seconds(5);
  SshConnection conn(Endpoint(), o);
  // One round trip for memory, uptime and the memory cgroup (a container's limit is its own
  // cgroup's, which /proc/meminfo does not show): "path:line" for every file that exists.
  ExecResult mem = conn.Exec(
      {"grep", "-s", "-H", "", "/proc/meminfo", "/proc/uptime", "/sys/fs/cgroup/memory.max",
       "/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.stat",
       "/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes",
       "/sys/fs/cgroup/memory/memory.stat"});
  int64_t total_kb = -1, available_kb = -1;
  int64_t limit = -1, usage = -1, inactive_file = 0;
  auto number = [](std::string_view text) -> int64_t {
    std::string t(Trim(text));
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) return -1;
    try {
      return std::stoll(t);
    } catch (const std::exception&) {
      return -1;
    }
  };
  for (const auto& line : SplitLines(mem.out)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string file = line.substr(0, colon);
    std::string text = line.substr(colon + 1);
    std::vector<std::string> w;
    for (auto& x : Split(text, ' ')) {
      if (!x.empty()) w.push_back(x);
    }
    if (file == "/proc/meminfo" && w.size() >= 2) {
      if (w[0] == "MemTotal:") total_kb = number(w[1]);
      if (w[0] == "MemAvailable:") available_kb = number(w[1]);
    } else if (file == "/proc/uptime" && !w.empty()) {
      try {
        f.uptime_seconds = static_cast<int64_t>(std::stod(w[0]));
      } catch (const std::exception&) {
      }
    } else if (file == "/sys/fs/cgroup/memory.max" ||
               file == "/sys/fs/cgroup/memory/memory.limit_in_bytes") {
      limit = number(text);
    } else if (file == "/sys/fs/cgroup/memory.current" ||
               file == "/sys/fs/cgroup/memory/memory.usage_in_bytes") {
      usage = number(text);
    } else if ((file == "/sys/fs/cgroup/memory.stat" && w.size() == 2 && w[0] == "inactive_file") ||
               (file == "/sys/fs/cgroup/memory/memory.stat" && w.size() == 2 &&
                w[0] == "total_inactive_file")) {
      inactive_file = std::max<int64_t>(0, number(w[1]));
    }
  }
  if (total_kb >= 0 && available_kb >= 0) {
    f.memory_total = total_kb * 1024;
    f.memory_used = (total_kb - available_kb) * 1024;
  }
  if (limit > 0 && usage >= 0 && (f.memory_total < 0 || limit < f.memory_total)) {
    f.memory_total = limit;
    f.memory_used = std::max<int64_t>(0, usage - inactive_file);
  }
  ExecResult df = conn.Exec({"df", "-B1", "--output=size,used", "/"});
  auto lines = SplitLines(df.out);
  if (df.status == 0 && lines.size() >= 2) {
    std::vector<std::string> w;
    for (auto& x : Split(lines[1], ' ')) {
      if (!x.empty()) w.push_back(x);
    }
    if (w.size() == 2) {
      f.disk_total = number(w[0]);
      f.disk_used = number(w[1]);
    }
  }
  ExecResult login = conn.Exec({"test", "-s", "/home/sandbox/.claude/.credentials.json"});
  f.agent_logged_in = login.status == 0;
  ExecResult version = conn.Exec({"claude", "--version"});
  if (version.status == 0) f.agent_version = std::string(Trim(version.out));
  return f;
}

std::unique_ptr<SshConnection> Sandbox::TryConnect() {
  auto text = ReadFileIfExists(Dir() + "/ssh.json");
  if (!text || !exists()) return nullptr;
  try {
    Json j = Json::parse(*text);
    SshTarget target{j.at("host").get<std::string>(), j.at("port").get<int>()};
    SshOptions o = Options();
    o.tcp_timeout = std::chrono::seconds(2);
    return std::make_unique<SshConnection>(EndpointAt(target), o);
  } catch (const std::exception& e) {
    // Stopped, or the address changed: the slow path asks the backend.
    Debug(Cat("sandbox ", name_, ": no quick connection (", e.what(), ")"));
    return nullptr;
  }
}

void Sandbox::CheckShared(SshConnection& conn) const {
  // Mounted before sshd starts, so by now they are there or they will not come: work done in a
  // folder that is not the host's would be lost with the sandbox.
  std::vector<std::pair<std::string, std::string>> shared;
  if (shares_.projects) shared.emplace_back("projects", kProjectsTarget);
  if (!deploy_dir_.empty()) shared.emplace_back("deploy", kDeployTarget);
  for (const auto& m : shares_.mounts) shared.emplace_back(m.source, m.target);
  for (const auto& [what, target] : shared) {
    if (conn.Exec({"mountpoint", "-q", target}).status == 0) continue;
    throw Error(
        kExitUnavailable,
        Cat("the ", what, " folder is not shared with sandbox '", name_, "': ", target,
            " is not mounted"),
        {},
        {Cat("restart the sandbox: ss restart --sandbox ", name_), "if it stays so: ss doctor"});
  }
}

std::unique_ptr<SshConnection> Sandbox::WaitReady(Progress& progress,
                                                  std::chrono::seconds timeout) {
  KeepEgress();
  KeepGuard();
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + timeout;
  std::string last_error;
  bool announced = false;
  std::optional<Clock::time_point> refused_since;
  // sshd's first words before each SSH connection: a VM's forwarded port accepts before the guest
  // listens, and a whole connection attempt would then hang for its full timeout.
  GreetingWatch greeting("SSH-", std::chrono::milliseconds(500), std::chrono::seconds(3),
                         std::chrono::seconds(15));
  // Kept while provisioning finishes: a new connection costs a slow guest a whole sshd.
  std::unique_ptr<SshConnection> conn;
  SshTarget target;
  while (true) {
    SandboxState state = backend_->State(name_);
    if (state == SandboxState::kStopped || state == SandboxState::kBroken ||
        state == SandboxState::kNotExists) {
      std::string detail;
      try {
        detail = backend_->Status(name_).detail;
      } catch (const Error&) {
      }
      throw VmFailedToStart(backend_name_,
                            Cat("the ", backend_name_, " machine is ", StateName(state),
                                detail.empty() ? "" : Cat(" (", detail, ")")));
    }
    if (state == SandboxState::kRunning) {
      bool provisioned = false;
      try {
        if (!conn) {
          target = backend_->Ssh(name_);
          if (!greeting.Heard(target.host, target.port, std::chrono::milliseconds(500))) {
            throw Error(kExitUnavailable,
                        Cat("no sshd answered on ", target.host, ":", target.port));
          }
          // sshd is there: a slow handshake is a slow guest, given each step's full timeout.
          conn = std::make_unique<SshConnection>(EndpointAt(target), Options());
        }
        provisioned = conn->Exec({"test", "-e", "/var/lib/ss/provisioned"}).status == 0;
        if (!provisioned) last_error = "provisioning has not finished";
        if (!provisioned && !announced) {
          progress.Step("provisioning (cloud-init)");
          announced = true;
        }
      } catch (const AuthRefused& e) {
        // cloud-init writes the pinned host key a moment before the client's key: on a first
        // boot sshd may present the one and refuse the other. Half a minute of that is a race;
        // longer, a key that is not there.
        if (!refused_since) refused_since = Clock::now();
        if (Clock::now() - *refused_since > std::chrono::seconds(30)) throw;
        conn.reset();
        last_error = e.what();
      } catch (const Error& e) {
        if (e.code() == kExitNoPerm) throw;  // a wrong host key is never retried into success
        conn.reset();
        last_error = e.what();
      }
      if (conn && provisioned) {
        CheckShared(*conn);
        PointAtProxy(*conn);
        // Where it answered, for the quick path of the next command.
        AtomicWrite(Dir() + "/ssh.json",
                    DumpJson(Json{{"host", target.host}, {"port", target.port}}) + "\n", 0644);
        return conn;
      }
    }
    if (Clock::now() >= deadline) {
      if (state == SandboxState::kRunning)
        throw CouldNotConnect(last_error, backend_->ConsoleLog(name_));
      throw VmFailedToStart(backend_name_,
                            Cat("still ", StateName(state), " after ", timeout.count(), "s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(conn ? 500 : 200));
  }
}

std::unique_ptr<SshConnection> Sandbox::EnsureRunning(Progress& progress,
                                                      std::chrono::seconds timeout) {
  MakeDirs(SandboxesDir(), 0700);
  FileLock lock(Cat(SandboxesDir(), "/.", name_, ".lock"), FileLock::kExclusive,
                std::chrono::minutes(30), Cat("sandbox '", name_, "'"));
  SandboxState state = State();
  if (exists() && !record_complete_) {
    // An earlier creation was cut short (this lock was free, so nobody is still at it).
    progress.Step(Cat("finishing the interrupted creation of '", name_, "': starting afresh"));
    if (backend_->State(name_) != SandboxState::kNotExists) backend_->Delete(name_);
    RemoveEgress(name_);
    StopShareGuard(name_);
    RemoveTree(Dir());
    state = SandboxState::kNotExists;
  }
  if (state == SandboxState::kBroken && !exists()) {
    std::string command = backend_->DeleteCommand(name_);
    throw Error(kExitCantCreate,
                Cat("a machine called '", name_, "' exists in ", backend_name_,
                    " but this install has no record of it"),
                {},
                {command.empty() ? Cat("delete it with ", backend_name_, "'s own tools")
                                 : Cat("delete it with ", command)});
  }
  if (state == SandboxState::kNotExists) {
    // Checked before anything is made: a bad folder leaves nothing behind.
    std::string deploy = DeployForCreation();
    shares_ = share_request_ ? *share_request_ : ConfiguredShares(config_, name_);
    // A sandbox whose network cannot be fenced is made only when its policy is open anyway.
    if (std::string why = backend_->CannotFence();
        !why.empty() && LoadNetPolicy(name_).mode != NetMode::kOpen) {
      throw Error(kExitUnavailable,
                  Cat("the network of sandbox '", name_, "' cannot be fenced: ", why), {},
                  {Cat("to make it with an open network: ss config set sandboxes.", name_,
                       ".network.mode open"),
                   "or use a backend that fences it: lxd (local), docker, podman as root, qemu"});
    }
    // Said once, as it is made: the guarantees against a hostile sandbox do not hold there.
    if (std::string why = backend_->RootIsHostRoot(); !why.empty()) {
      Warn(Cat("root in sandbox '", name_, "' is root on this host: ", why,
               ". Root inside (the agent too, through sudo) can take the host over; for work you "
               "do not trust, use lxd or qemu (--backend)"));
    }
    progress.Step(Cat("creating sandbox '", name_, "' (", backend_name_, ")"));
    try {
      Create(progress, deploy);
    } catch (const Error& e) {
      if (e.code() == kExitNoPerm || e.code() == kExitUsage) throw;
      throw VmFailedToStart(backend_name_, e.what(), e.details());
    }
    // First boot provisions: give it longer, twice a start's wait and five minutes at least (ten
    // for a VM without hardware acceleration, whose first boot on a busy host has taken over
    // five).
    auto conn = WaitReady(
        progress, std::max({timeout, 2 * DefaultStartTimeout(), std::chrono::seconds(300)}));
    try {
      if (auto copied = CopyAgentConfig(*conn, config_, name_)) {
        progress.Step(Cat("copied ", DisplayPath(copied->folder), " into ~/.claude"));
      }
    } catch (const Error& e) {
      Warn(Cat("the agent's configuration was not copied into '", name_, "': ", e.what(),
               "; once fixed: ss vm provision --sandbox ", name_));
    }
    // The save point `ss restore clean-baseline` returns to.
    progress.Step("taking the clean-baseline snapshot");
    try {
      TakeSnapshot("clean-baseline", conn.get());
    } catch (const Error& e) {
      Warn(Cat("no clean-baseline snapshot of '", name_, "': ", e.what()));
    }
    if (backend_->SnapshotRestarts()) conn = WaitReady(progress, timeout);
    return conn;
  }
  // A sandbox whose mounts config.yaml names is told when they are not what it was made with.
  if (!share_request_ && !config_.SandboxKey(name_, "mounts").empty()) {
    try {
      if (Shares configured = ConfiguredShares(config_, name_); configured != shares_) {
        Warn(Cat("sandbox '", name_, "' shares ", DescribeShares(shares_),
                 " as when it was made; config.yaml now asks for ", DescribeShares(configured),
                 ". Folders are shared when a sandbox is made: ss destroy --sandbox ", name_,
                 ", and the next session makes it with them"));
      }
    } catch (const Error& e) {
      Warn(Cat("sandbox '", name_, "' keeps the folders it was made with: ", e.what()));
    }
  }
  if (!deploy_request_.empty()) {
    std::string want = ResolveDeployDir(deploy_request_, "--deploy DIR");
    if (want != deploy_dir_) {
      throw Error(
          kExitUsage,
          deploy_dir_.empty()
              ? Cat("sandbox '", name_, "' was created without a deploy folder")
              : Cat("sandbox '", name_, "' was created with the deploy folder ", deploy_dir_),
          {},
          {Cat("the deploy folder is chosen when a sandbox is created; to change it: "
               "ss vm reset --sandbox ",
               name_, " --deploy DIR")});
    }
  }
  if (state == SandboxState::kStopped) {
    // Fenced before it boots (the fence is gone after a host reboot; ss-net after a stop), and
    // its shared folders watched (the guard takes the repositories it finds for the user's).
    KeepEgress();
    KeepGuard(true);
    try {
      backend_->Start(name_, DesiredResources());
    } catch (const Error& e) {
      throw VmFailedToStart(backend_name_, e.what(), e.details());
    }
  }
  return WaitReady(progress, timeout);
}

// Every login in the sandbox (any shell: sshd reads /etc/environment through pam_env) gets the
// variables that point programs at the sandbox's proxy. Programs that ignore them are
// intercepted all the same; root inside may remove them and loses only the proxy's address.
void Sandbox::PointAtProxy(SshConnection& conn) const {
  auto env = SandboxProxyEnv(name_);
  if (env.empty()) return;
  ExecResult current = conn.Exec({"cat", "/etc/environment"});
  std::string text;
  for (const std::string& line : SplitLines(current.status == 0 ? current.out : "")) {
    bool ours = std::any_of(env.begin(), env.end(),
                            [&](const auto& kv) { return line.starts_with(kv.first + "="); });
    if (!ours && line != kProxyEnvironmentComment) text += line + "\n";
  }
  text += Cat(kProxyEnvironmentComment, "\n");
  for (const auto& [key, value] : env) text += Cat(key, "=", value, "\n");
  if (current.status == 0 && current.out == text) return;
  ExecOptions o;
  o.input = text;
  ExecResult wrote = conn.Exec({"sudo", "-n", "tee", "/etc/environment"}, o);
  if (wrote.status != 0) {
    Warn(Cat("could not point sandbox '", name_,
             "' at its proxy in /etc/environment: ", Trim(wrote.err)));
  }
}

// The sandbox's network goes through ss-net, which is started again if it is gone: every start
// and every session comes here first.
void Sandbox::KeepEgress() {
  if (auto link = backend_->Egress(name_)) EnsureEgress(name_, *link);
}

// The folders it shares are watched for repositories while it runs (share_guard.hpp): every start
// and every session comes here too.
void Sandbox::KeepGuard(bool starting) {
  std::vector<std::string> folders;
  for (const Mount& m : shares_.mounts) {
    if (!m.read_only) folders.push_back(m.source);
  }
  if (!deploy_dir_.empty()) folders.push_back(deploy_dir_);
  if (!shares_.projects && folders.empty()) return;
  EnsureShareGuard(name_, shares_.projects ? ProjectsDir() : "", folders, starting);
}

void Sandbox::Stop(std::chrono::seconds timeout) {
  SandboxState state = State();
  if (state == SandboxState::kStopped || state == SandboxState::kNotExists) return;
  EndShareMaster(name_);
  backend_->Stop(name_, timeout);
  StopEgress(name_);
  StopShareGuard(name_);
}

void Sandbox::TakeSnapshot(const std::string& snapshot, SshConnection* conn) {
  if (backend_->SnapshotSeesOnlyTheDisk() && State() != SandboxState::kStopped) {
    std::unique_ptr<SshConnection> own;
    if (!conn) {
      own = TryConnect();
      conn = own.get();
    }
    try {
      if (conn) conn->Exec({"sync"});
    } catch (const Error& e) {
      Debug(Cat("sandbox ", name_, ": sync before the snapshot: ", e.what()));
    }
  }
  backend_->TakeSnapshot(name_, snapshot);
}

void Sandbox::Delete() {
  MakeDirs(SandboxesDir(), 0700);
  FileLock lock(Cat(SandboxesDir(), "/.", name_, ".lock"), FileLock::kExclusive,
                std::chrono::minutes(5), Cat("sandbox '", name_, "'"));
  EndShareMaster(name_);
  if (backend_->State(name_) != SandboxState::kNotExists) backend_->Delete(name_);
  RemoveEgress(name_);
  StopShareGuard(name_);
  BaseRecord::ForgetSandbox(name_);  // its working copies' bases went with its disk
  RemoveTree(Dir());
}

std::unique_ptr<SessionLease> Sandbox::BeginSession(
    std::function<std::optional<std::string>()> keep) {
  MakeDirs(SandboxesDir(), 0700);
  return std::make_unique<SessionLease>(
      *this, FileLock(Cat(SandboxesDir(), "/.", name_, ".sessions"), FileLock::kShared),
      std::move(keep));
}

SessionLease::SessionLease(Sandbox& sandbox, FileLock lock,
                           std::function<std::optional<std::string>()> keep)
    : sandbox_(sandbox), lock_(std::move(lock)), keep_(std::move(keep)) {}

SessionLease::~SessionLease() {
  lock_.reset();
  if (!sandbox_.ephemeral()) return;
  try {
    // The last session out removes the sandbox; any other still open keeps it.
    auto last = FileLock::TryLock(Cat(StateDir(), "/sandboxes/.", sandbox_.name(), ".sessions"),
                                  FileLock::kExclusive);
    if (!last) return;
    if (keep_) {
      if (auto why = keep_()) {
        Warn(Cat("kept ephemeral sandbox '", sandbox_.name(), "': ", *why));
        return;
      }
    }
    Note(Cat("Removing ephemeral sandbox '", sandbox_.name(), "'..."));
    sandbox_.Delete();
  } catch (const Error& e) {
    Warn(Cat("could not remove ephemeral sandbox '", sandbox_.name(), "': ", e.what()));
  }
}

std::unique_ptr<SshConnection> Sandbox::Reset(Progress& progress, std::chrono::seconds timeout) {
  // The new sandbox keeps the deploy folder unless told another, and the folders it shares;
  // checked before the old one goes.
  deploy_request_ = DeployForCreation();
  if (!share_request_ && exists()) share_request_ = shares_;
  {
    MakeDirs(SandboxesDir(), 0700);
    FileLock lock(Cat(SandboxesDir(), "/.", name_, ".lock"), FileLock::kExclusive,
                  std::chrono::minutes(5), Cat("sandbox '", name_, "'"));
    if (backend_->State(name_) != SandboxState::kNotExists) {
      progress.Step("stopping and removing the old machine");
      backend_->Delete(name_);
    }
    // Its ss-net and fence go with it (the new machine gets its own before it boots); its
    // network policy's changes are the user's and stay.
    RemoveEgress(name_);
    StopShareGuard(name_);
    BaseRecord::ForgetSandbox(name_);
    auto changes = ReadFileIfExists(NetChangesPath(name_));
    RemoveTree(Dir());
    if (changes) {
      MakeDirs(SandboxNetDir(name_), 0700);
      AtomicWrite(NetChangesPath(name_), *changes, 0600);
    }
  }
  return EnsureRunning(progress, timeout);
}

}  // namespace ss
