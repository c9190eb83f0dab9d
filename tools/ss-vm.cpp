// ss-vm: sandboxes. Start, stop, status, reset and delete a sandbox; build and manage the base
// image; prepare the host for a backend. `ss status|start|stop|reset` come here.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <optional>

#include "agent_config.hpp"
#include "backend.hpp"
#include "backend_factory.hpp"
#include "browser.hpp"
#include "config.hpp"
#include "deploy.hpp"
#include "egress.hpp"
#include "error.hpp"
#include "health.hpp"
#include "host.hpp"
#include "host_setup.hpp"
#include "image.hpp"
#include "json_out.hpp"
#include "net_store.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "project.hpp"
#include "prompt.hpp"
#include "qemu_supervisor.hpp"
#include "rescue.hpp"
#include "sandbox.hpp"
#include "size.hpp"
#include "snapshot.hpp"
#include "strings.hpp"
#include "timefmt.hpp"
#include "tool.hpp"
#include "vm_line.hpp"

namespace ss {
namespace {

std::string FormatUptime(int64_t seconds) {
  if (seconds < 0) return "?";
  int64_t d = seconds / 86400, h = seconds % 86400 / 3600, m = seconds % 3600 / 60;
  if (d > 0) return Cat(d, "d ", h, "h");
  if (h > 0) return Cat(h, "h ", m, "m");
  if (m > 0) return Cat(m, "m");
  return Cat(seconds, "s");
}

std::chrono::seconds Timeout(const VmLine& o, std::chrono::seconds fallback) {
  return o.timeout > 0 ? std::chrono::seconds(o.timeout) : fallback;
}

void Say(std::string_view progress_line) { Note(progress_line); }

// The --deploy folder, checked: a bad one is reported before anything is asked of the backend
// (or of the user).
std::string RequestedDeploy(const VmLine& o) {
  return o.deploy.empty() ? "" : ResolveDeployDir(o.deploy, "--deploy DIR");
}

int Start(const VmLine& o, const Config& config) {
  std::string deploy = RequestedDeploy(o);
  Sandbox sandbox(ResolveSandboxName(o.sandbox), config, o.backend);
  if (o.fish) sandbox.set_login_shell("fish");
  sandbox.set_deploy_dir(deploy);
  SandboxState before = sandbox.State();
  if (before == SandboxState::kRunning) {
    Progress progress("start");
    sandbox.EnsureRunning(progress, Timeout(o, sandbox.DefaultStartTimeout()));
    std::cout << "Already running.\n";
    return 0;
  }
  Say("Starting VM...");
  Progress progress(Cat("sandbox ", sandbox.name()));
  sandbox.EnsureRunning(progress, Timeout(o, sandbox.DefaultStartTimeout()));
  std::cout << "Started.\n";
  return 0;
}

// The sandbox's state; exit 66 with `hint` when it does not exist.
SandboxState ExistingState(Sandbox& sandbox, std::string hint) {
  SandboxState state = sandbox.State();
  if (state == SandboxState::kNotExists) {
    throw Error(kExitNoInput, Cat("sandbox '", sandbox.name(), "' does not exist"), {},
                {std::move(hint)});
  }
  return state;
}

int Stop(const VmLine& o, const Config& config) {
  Sandbox sandbox(ResolveSandboxName(o.sandbox), config, o.backend);
  SandboxState state = ExistingState(sandbox, "list them: ss vm list");
  if (state == SandboxState::kStopped) {
    std::cout << "Already stopped.\n";
    return 0;
  }
  Say("Stopping VM...");
  sandbox.Stop(Timeout(o, std::chrono::seconds(15)));
  std::cout << "Stopped.\n";
  return 0;
}

int Restart(const VmLine& o, const Config& config) {
  Sandbox sandbox(ResolveSandboxName(o.sandbox), config, o.backend);
  if (ExistingState(sandbox, "create it: ss start") != SandboxState::kStopped) {
    Say("Stopping VM...");
    sandbox.Stop(std::chrono::seconds(15));
  }
  Say("Starting VM...");
  Progress progress(Cat("sandbox ", sandbox.name()));
  sandbox.EnsureRunning(progress, Timeout(o, sandbox.DefaultStartTimeout()));
  std::cout << "Restarted.\n";
  return 0;
}

// The snapshots' names, oldest first; empty when the backend cannot tell (said in `why`).
std::vector<std::string> SnapshotNames(Sandbox& sandbox, std::string& why) {
  std::vector<std::string> names;
  try {
    for (const auto& snap : ListSnapshots(sandbox)) names.push_back(snap.name);
  } catch (const Error& e) {
    why = e.what();
  }
  return names;
}

int Status(const VmLine& o, const Config& config) {
  Sandbox sandbox(ResolveSandboxName(o.sandbox), config, o.backend);
  SandboxStatus st = sandbox.backend().Status(sandbox.name());
  SandboxState state = sandbox.State();
  Resources want = sandbox.DesiredResources();
  std::optional<GuestFacts> guest;
  std::string guest_error;
  if (state == SandboxState::kRunning) {
    try {
      guest = sandbox.Inspect();
    } catch (const Error& e) {
      guest_error = e.what();
    }
  }
  Probe probe = sandbox.backend().CheckHost();
  std::string backend_detail = st.detail.empty() ? probe.reason : st.detail;
  // The backend knows when the machine started; a container's /proc/uptime is the host's.
  int64_t uptime = st.uptime_seconds >= 0 ? st.uptime_seconds : guest ? guest->uptime_seconds : -1;
  int cpus = st.limits.cpus > 0 ? st.limits.cpus : want.cpus;
  int64_t memory = guest && guest->memory_total > 0 ? guest->memory_total
                   : st.limits.memory > 0           ? st.limits.memory
                                                    : want.memory;
  int64_t memory_used = guest ? guest->memory_used : st.memory_used;
  // The real limit: the storage the sandbox's disk lives on may be smaller than configured (a
  // pool, the host's own disk); the sandbox's own df says so when it runs.
  int64_t disk_configured = st.limits.disk > 0 ? st.limits.disk : want.disk;
  int64_t disk = guest && guest->disk_total > 0 && guest->disk_total < disk_configured
                     ? guest->disk_total
                     : disk_configured;
  int64_t disk_used = guest ? guest->disk_used : st.disk_used;
  int projects = static_cast<int>(ProjectStore().Names().size());
  std::string snapshots_error;
  std::vector<std::string> snapshots;
  if (state != SandboxState::kNotExists) snapshots = SnapshotNames(sandbox, snapshots_error);
  BrowserReport browser = CheckBrowserHost(static_cast<int>(config.Int("browser.cdp_port")));
  std::optional<AgentVersion> agent;
  if (guest) agent = ParseAgentVersion(guest->agent_version);
  std::string why_broken;
  if (state == SandboxState::kBroken) {
    why_broken = sandbox.exists()
                     ? st.detail
                     : Cat("a machine called '", sandbox.name(), "' exists in ",
                           sandbox.backend_name(), " that this install did not create");
  }

  // The network: the policy, and whether the fence and ss-net hold it.
  NetPolicy policy = LoadNetPolicy(sandbox.name());
  bool fencing = state != SandboxState::kNotExists && sandbox.backend().Egress(sandbox.name());
  EgressState egress = fencing ? GetEgressState(sandbox.name()) : EgressState{};
  std::string network = Cat(NetModeName(policy.mode), ", ", policy.allow.size(), " allowed, ",
                            policy.deny.size(), " denied (ss net ls)");
  if (state != SandboxState::kNotExists) {
    if (!fencing) {
      std::string why = sandbox.backend().CannotFence();
      network = Cat("open, not fenced: ",
                    why.empty() ? Cat("made before ", sandbox.backend_name(),
                                      " sandboxes had a network of their own (ss vm reset "
                                      "fences it)")
                                : why);
    } else if (!egress.fenced) {
      network += "; not fenced yet (it is with the next start)";
    } else if (!egress.pid) {
      network += "; ss-net is not running, so nothing gets out until the next command starts it";
    }
  }

  if (o.json) {
    Json doc = JsonDocument("SandboxStatus");
    doc["name"] = sandbox.name();
    doc["backend"] = sandbox.backend_name();
    doc["backend_detail"] = backend_detail;
    doc["backend_reason"] = sandbox.backend_reason();
    doc["ephemeral"] = sandbox.ephemeral();
    doc["state"] = StateName(state);
    doc["state_detail"] = why_broken.empty() ? Json() : Json(why_broken);
    doc["uptime_seconds"] = state == SandboxState::kRunning && uptime >= 0 ? Json(uptime) : Json();
    doc["cpus"] = cpus;
    doc["memory_bytes"] = memory;
    doc["memory_used_bytes"] = memory_used >= 0 ? Json(memory_used) : Json();
    doc["disk_bytes"] = disk;
    doc["disk_configured_bytes"] = disk_configured;
    doc["disk_used_bytes"] = disk_used >= 0 ? Json(disk_used) : Json();
    doc["address"] = st.address.empty() ? Json() : Json(st.address);
    doc["ssh"] = Json();
    if (state == SandboxState::kRunning) {
      SshTarget t = sandbox.backend().Ssh(sandbox.name());
      doc["ssh"] = {{"host", t.host}, {"port", t.port}, {"user", "sandbox"}};
    }
    doc["projects"] = projects;
    doc["snapshots"] = snapshots_error.empty() ? Json(snapshots) : Json();
    doc["deploy"] = sandbox.deploy_dir().empty() ? Json() : Json(sandbox.deploy_dir());
    doc["shares"] = {{"projects", sandbox.shares().projects}, {"mounts", Json::array()}};
    for (const auto& m : sandbox.shares().mounts) {
      doc["shares"]["mounts"].push_back(
          {{"source", m.source}, {"target", m.target}, {"read_only", m.read_only}});
    }
    doc["browser"] = {{"mode", BrowserModeName(browser.mode)},
                      {"summary", StatusSummary(browser, agent)},
                      {"agent_version", agent ? Json(agent->text) : Json()},
                      {"relay", agent ? Json(UsesRelay(*agent)) : Json()}};
    doc["network"] = {{"mode", fencing || state == SandboxState::kNotExists
                                   ? std::string(NetModeName(policy.mode))
                                   : std::string("open")},
                      {"allow", policy.allow.size()},
                      {"deny", policy.deny.size()},
                      {"fenced", egress.fenced},
                      {"fence", egress.fence.empty() ? Json() : Json(egress.fence)},
                      {"proxy_pid", egress.pid ? Json(egress.pid) : Json()}};
    doc["agent_logged_in"] =
        guest && guest->agent_logged_in ? Json(*guest->agent_logged_in) : Json();
    if (!guest_error.empty()) doc["error"] = guest_error;
    PrintJson(doc);
    return 0;
  }
  auto used = [](int64_t v) {
    return v >= 0 ? Cat(" (", FormatSizeHuman(v), " used)") : std::string();
  };
  std::string vm = StateName(state);
  if (state == SandboxState::kRunning) vm += Cat(" (uptime: ", FormatUptime(uptime), ")");
  if (state == SandboxState::kNotExists) vm = "not created (it is created on first use)";
  if (!why_broken.empty()) vm += Cat(" (", why_broken, ")");
  std::cout << "VM:        " << vm << "\n";
  std::cout << "CPU:       " << cpus << (cpus == 1 ? " core" : " cores") << "\n";
  std::cout << "Memory:    " << FormatSizeHuman(memory) << used(memory_used) << "\n";
  std::string disk_used_text = disk_used >= 0 ? Cat(FormatSizeHuman(disk_used), " used") : "";
  if (disk < disk_configured) {
    disk_used_text += Cat(disk_used_text.empty() ? "" : "; ", "its storage is smaller than the ",
                          FormatSizeHuman(disk_configured), " configured");
  }
  std::cout << "Disk:      " << FormatSizeHuman(disk)
            << (disk_used_text.empty() ? "" : Cat(" (", disk_used_text, ")")) << "\n";
  std::cout << "Projects:  " << projects << "\n";
  if (!st.address.empty()) std::cout << "Address:   " << st.address << "\n";
  if (state != SandboxState::kNotExists) {
    std::cout << "Snapshots: "
              << (!snapshots_error.empty() ? Cat("unknown (", snapshots_error, ")")
                  : snapshots.empty()      ? std::string("none (take one: ss snapshot NAME)")
                                           : Cat(snapshots.size(), ": ", Join(snapshots, ", ")))
              << "\n";
  }
  if (!sandbox.deploy_dir().empty()) {
    std::cout << "Deploy:    " << DisplayPath(sandbox.deploy_dir()) << " (at " << kDeployTarget
              << ")\n";
  }
  std::cout << "Browser:   " << StatusSummary(browser, agent) << "\n";
  std::cout << "Network:   " << network << "\n";
  if (state == SandboxState::kRunning) {
    std::string claude =
        guest && guest->agent_logged_in
            ? (*guest->agent_logged_in ? "logged in" : "not logged in (run: ss login)")
            : Cat("unknown (", guest_error, ")");
    std::cout << "Claude:    " << claude << "\n";
  }
  std::cout << "Backend:   " << sandbox.backend_name() << " (" << backend_detail << ")\n";
  if (!sandbox.backend_reason().empty()) {
    std::cout << "           " << sandbox.backend_reason() << "\n";
  }
  if (!guest_error.empty()) Warn(Cat("could not look inside the sandbox: ", guest_error));
  return 0;
}

int Reset(const VmLine& o, const Config& config) {
  std::string name = ResolveSandboxName(o.sandbox);
  std::string deploy = RequestedDeploy(o);
  std::optional<Sandbox> sandbox;
  auto get = [&]() -> Sandbox& {
    if (!sandbox) sandbox.emplace(name, config, o.backend);
    return *sandbox;
  };
  UnappliedGuard guard(get, config, o.force, "reset");
  std::string question =
      Cat("This will:\n"
          "  • Stop the VM\n"
          "  • Reset to fresh state\n"
          "  • Require re-login to Claude Code, gh, vercel\n"
          "\n",
          guard.ProjectsLine(name),
          "\n"
          "\n"
          "Continue? [y/N]: ");
  if (!o.yes) {
    if (!Confirm(question, false)) {
      std::cout << "Cancelled.\n";
      return 0;
    }
  }
  for (const auto& line : guard.Save()) std::cout << line << "\n";
  if (o.fish) get().set_login_shell("fish");
  get().set_deploy_dir(deploy);
  Say("Resetting...");
  Progress progress(Cat("sandbox ", get().name()));
  get().Reset(progress, Timeout(o, get().DefaultStartTimeout()));
  std::cout << "Done.\n";
  return 0;
}

int Delete(const VmLine& o, const Config& config) {
  bool clean = o.command == "clean";
  // std::find, not std::ranges::find: libc++ 14 has no range algorithms.
  std::vector<std::string> known = clean ? KnownSandboxes() : std::vector<std::string>{};
  if (clean && std::find(known.begin(), known.end(), o.sandbox) == known.end()) {
    std::cout << "Profile '" << o.profile << "' has no sandbox yet; nothing to clean.\n";
    return 0;
  }
  Sandbox sandbox(ResolveSandboxName(o.sandbox), config, o.backend);
  if (!sandbox.exists() && sandbox.State() == SandboxState::kNotExists) {
    throw Error(kExitNoInput, Cat("sandbox '", sandbox.name(), "' does not exist"), {},
                {"list them: ss vm list"});
  }
  UnappliedGuard guard([&]() -> Sandbox& { return sandbox; }, config, o.force, "delete");
  std::string question = Cat(
      clean ? Cat("Clean profile '", o.profile, "': delete its sandbox '", sandbox.name(),
                  "'? The next session makes it afresh; everything installed in it, and "
                  "the agent's login and history there, are lost.\n")
            : Cat("Delete sandbox '", sandbox.name(), "'? Everything installed in it is lost.\n"),
      guard.ProjectsLine(sandbox.name()), " [y/N]: ");
  if (!Confirm(question, o.yes)) {
    std::cout << "Cancelled.\n";
    return 0;
  }
  for (const auto& line : guard.Save()) std::cout << line << "\n";
  sandbox.Delete();
  std::cout << "Deleted: " << sandbox.name() << "\n";
  return 0;
}

// `ss vm provision`: the agent's configuration folder copied into the running sandbox again.
int Provision(const VmLine& o, const Config& config) {
  Sandbox sandbox(ResolveSandboxName(o.sandbox), config, o.backend);
  ExistingState(sandbox, "create it: ss start");
  Progress progress(Cat("sandbox ", sandbox.name()));
  auto conn = sandbox.EnsureRunning(progress, Timeout(o, sandbox.DefaultStartTimeout()));
  auto copied = CopyAgentConfig(*conn, config, sandbox.name());
  if (!copied) {
    throw Error(kExitConfig, "no agent configuration folder is set", {},
                {"name one: ss config set agent.config ~/code/app/sandbox/claude (or "
                 "sandboxes.NAME.agent.config, profiles.NAME.agent.config)"});
  }
  std::cout << "Copied " << DisplayPath(copied->folder) << " into ~/.claude of '" << sandbox.name()
            << "'.\n";
  return 0;
}

int List(const VmLine& o, const Config& config) {
  Json doc = JsonDocument("SandboxList");
  doc["items"] = Json::array();
  bool tty = StdoutIsTty();
  if (!o.json && tty)
    std::cout << std::left << std::setw(24) << "NAME" << std::setw(10) << "BACKEND"
              << "STATE\n";
  for (const auto& name : KnownSandboxes()) {
    std::string backend, state;
    try {
      Sandbox s(name, config);
      backend = s.backend_name();
      state = StateName(s.State());
    } catch (const Error& e) {
      state = Cat("unknown (", e.what(), ")");
    }
    if (o.json) {
      doc["items"].push_back({{"name", name}, {"backend", backend}, {"state", state}});
    } else if (tty) {
      std::cout << std::setw(24) << name << std::setw(10) << backend << state << "\n";
    } else {
      std::cout << name << "\t" << backend << "\t" << state << "\n";
    }
  }
  if (o.json) PrintJson(doc);
  return 0;
}

int Backends(const VmLine& o, const Config& config) {
  BackendChoice choice;
  std::optional<Error> none;
  // Each backend probed once, those auto may choose first (a name this build does not have
  // probes as the reason it is missing).
  std::vector<std::pair<std::string, Probe>> probes;
  auto probe = [&](const std::string& name) {
    for (const auto& [known, p] : probes) {
      if (known == name) return p;
    }
    Probe p;
    try {
      p = MakeBackend(name, config)->CheckHost();
    } catch (const Error& e) {
      p.reason = e.what();
    }
    probes.emplace_back(name, p);
    return p;
  };
  for (const auto& name : AutoBackendNames()) probe(name);
  for (const auto& name : BackendNames()) probe(name);
  try {
    choice = ChooseBackend(AutoBackendNames(), probe);
  } catch (const Error& e) {
    none = e;
  }
  if (o.json) {
    Json doc = JsonDocument("BackendList");
    doc["auto"] = choice.name.empty() ? Json() : Json(choice.name);
    doc["auto_reason"] = none ? Json(none->what()) : Json(choice.reason);
    doc["items"] = Json::array();
    for (const auto& [name, p] : probes) {
      doc["items"].push_back({{"name", name},
                              {"usable", p.usable},
                              {"degraded", p.degraded},
                              {"reason", p.reason},
                              {"fix", p.fix.empty() ? Json() : Json(p.fix)}});
    }
    PrintJson(doc);
    return 0;
  }
  for (const auto& [name, p] : probes) {
    std::string mark = !p.usable ? "no " : p.degraded ? "slow" : "yes";
    std::cout << std::left << std::setw(8) << name << std::setw(6) << mark << p.reason;
    if (!p.fix.empty()) std::cout << " (" << p.fix << ")";
    std::cout << "\n";
  }
  if (none) {
    std::cout << "auto:   nothing runs here; set a backend up: ss vm setup --backend NAME\n";
  } else {
    std::cout << "auto:   " << choice.name << "\n";
  }
  return 0;
}

int Image(const VmLine& o) {
  if (o.command == "image build") {
    ImageBuildOptions b = ImageOptionsFrom(Config::Load());
    b.release = o.release;
    b.mirror = o.mirror;
    b.force = o.force;
    Progress progress("image");
    ImageInfo info = BuildImage(b, progress);
    if (o.json) {
      Json doc = JsonDocument("Image");
      doc["id"] = info.id;
      doc["path"] = info.dir;
      doc["release"] = info.release;
      doc["created"] = info.created;
      doc["size_bytes"] = info.size_bytes;
      doc["versions"] = info.versions;
      PrintJson(doc);
    } else {
      std::cout << info.id << "\n";
    }
    return 0;
  }
  if (o.command == "image ls") {
    auto images = ListImages();
    if (o.json) {
      Json doc = JsonDocument("ImageList");
      doc["items"] = Json::array();
      for (const auto& i : images) {
        doc["items"].push_back({{"id", i.id},
                                {"path", i.dir},
                                {"release", i.release},
                                {"created", i.created},
                                {"size_bytes", i.size_bytes},
                                {"versions", i.versions}});
      }
      PrintJson(doc);
      return 0;
    }
    bool tty = StdoutIsTty();
    if (tty)
      std::cout << std::left << std::setw(22) << "ID" << std::setw(22) << "CREATED" << std::setw(10)
                << "SIZE"
                << "CLAUDE CODE\n";
    for (const auto& i : images) {
      std::string claude = i.versions.value("claude_code", "");
      if (tty) {
        std::cout << std::setw(22) << i.id << std::setw(22) << i.created << std::setw(10)
                  << FormatSizeHuman(i.size_bytes) << claude << "\n";
      } else {
        std::cout << i.id << "\t" << i.created << "\t" << i.size_bytes << "\t" << claude << "\n";
      }
    }
    return 0;
  }
  {
    auto image = FindImage(o.args[0]);
    if (!image) {
      std::vector<std::string> ids;
      for (const auto& i : ListImages()) ids.push_back(i.id);
      throw Error(kExitNoInput, Cat("no image '", o.args[0], "'"), {},
                  {ids.empty() ? "there are no images" : Cat("images: ", Join(ids, ", "))});
    }
    if (!Confirm(Cat("Remove image ", image->id, "? [y/N]: "), o.yes)) {
      std::cout << "Cancelled.\n";
      return 0;
    }
    RemoveImage(*image);
    std::cout << "Removed: " << image->id << "\n";
    // Its copies imported into LXD and the container engines go too, where those run.
    Config config = Config::Load();
    for (const char* kind : {"lxd", "docker", "podman"}) {
      try {
        auto backend = MakeBackend(kind, config);
        if (!backend->CheckHost().usable) continue;
        if (backend->RemoveImageCopy(image->id)) {
          std::cout << "Removed its copy in " << kind << "\n";
        }
      } catch (const Error& e) {
        Warn(Cat("kept its copy in ", kind, ": ", e.what()));
      }
    }
    return 0;
  }
}

int Setup(const VmLine& o) {
  std::string backend = o.backend;
  if (backend.empty() || backend == "auto") {
    // What auto prefers when the hardware allows it, else the container backend that isolates
    // best.
    backend = DetectAccel().hardware() ? "qemu" : "lxd";
  }
  std::vector<std::string> names = BackendNames();
  if (std::find(names.begin(), names.end(), backend) == names.end()) {
    throw Error(kExitUsage, Cat("ss vm setup does not know backend '", backend, "'"), {},
                {Cat("use --backend ", Join(names, ", --backend "))});
  }
  Progress progress("setup");
  SetupReport report;
  if (backend == "lxd") {
    report = o.stop ? TeardownLxd(progress) : SetupLxd(progress);
  } else if (backend == "docker") {
    report = o.stop ? TeardownDocker(progress) : SetupDocker(progress);
  } else if (backend == "podman") {
    if (!o.stop) report = SetupPodman(progress);
  } else if (backend == "lima") {
    if (!o.stop) report = SetupLima(progress);
  } else if (backend == "lume") {
    if (!o.stop) report = SetupLume(progress);
  } else if (!o.stop) {
    report = SetupQemu(progress);
  }
  if (o.json) {
    Json doc = JsonDocument("HostSetup");
    doc["backend"] = backend;
    doc["changes"] = report.done;
    doc["started"] = Json::array();
    for (const auto& [name, pid] : report.started)
      doc["started"].push_back({{"name", name}, {"pid", pid}});
    PrintJson(doc);
    return 0;
  }
  if (report.done.empty()) {
    if (o.stop) {
      std::cout << "Nothing to stop.\n";
    } else {
      std::cout << (backend == "lxd"      ? "LXD"
                    : backend == "docker" ? "Docker"
                    : backend == "podman" ? "Podman"
                    : backend == "lima"   ? "Lima"
                    : backend == "lume"   ? "Lume"
                                          : "QEMU")
                << " is ready; nothing to change.\n";
    }
  }
  for (const auto& line : report.done) std::cout << line << "\n";
  if (backend == "qemu" && !o.stop) {
    std::cout << "QEMU will use " << DetectAccel().reason << "\n";
  }
  return 0;
}

int PrintChecks(const std::vector<CheckResult>& checks, const VmLine& o, Json doc) {
  bool failed = AnyFailed(checks);
  if (o.json) {
    doc["ok"] = !failed;
    doc["checks"] = ChecksJson(checks);
    PrintJson(doc);
  } else {
    std::cout << FormatChecks(checks);
  }
  return failed ? kExitFailure : 0;
}

int HealthCheck(const VmLine& o, const Config& config) {
  std::string name = !o.args.empty() ? o.args[0] : ResolveSandboxName(o.sandbox);
  ValidateSandboxName(name);
  auto known = KnownSandboxes();
  if (std::find(known.begin(), known.end(), name) == known.end()) {
    throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"), {},
                {"list them: ss vm list"});
  }
  Sandbox sandbox(name, config);
  Json doc = JsonDocument("HealthCheck");
  doc["sandbox"] = name;
  return PrintChecks(ss::HealthCheck(sandbox, config), o, doc);
}

int Doctor(const VmLine& o, const Config& config) {
  return PrintChecks(ss::Doctor(config), o, JsonDocument("Doctor"));
}

int Complete(const Args& words) {
  const std::string& prev = words.size() >= 2 ? words[words.size() - 2] : "";
  if (prev == "--sandbox") {
    for (const auto& n : KnownSandboxes()) std::cout << n << "\n";
  } else if (prev == "--profile") {
    for (const auto& n : Config::Load().ProfileNames()) std::cout << n << "\n";
  } else if (prev == "--backend") {
    std::cout << "auto\n";
    for (const auto& n : BackendNames()) std::cout << n << "\n";
  } else if (prev == "--deploy") {
    // A folder: nothing from here, so the shell offers paths where it can (zsh).
  } else {
    if (words.size() == 3 && words[0] == "image" && words[1] == "rm") {
      for (const auto& i : ListImages()) std::cout << i.id << "\n";
    }
    std::string out;
    VmCommands().Complete(words, out);
    std::cout << out;
  }
  return 0;
}

int Run(const VmLine& o) {
  if (o.help || o.command.empty()) return VmCommands().ShowHelp(o.help);
  const std::string& cmd = o.command;
  if (cmd.rfind("image ", 0) == 0) return Image(o);
  if (cmd == "setup") return Setup(o);
  if (cmd == "health-check") return HealthCheck(o, Config::Load());
  if (cmd == "doctor") return Doctor(o, Config::Load());
  Config config = Config::Load();
  VmLine with_profile = o;
  if (!o.profile.empty()) with_profile.sandbox = ProfileSandbox(config, o.profile, o.sandbox);
  if (cmd == "clean") {
    if (o.profile.empty()) {
      throw Error(kExitUsage, "usage: ss clean --profile NAME [--yes]", {},
                  {"to delete any sandbox: ss destroy --sandbox NAME"});
    }
    return Delete(with_profile, config);
  }
  if (cmd == "provision") return Provision(with_profile, config);
  if (cmd == "start") return Start(with_profile, config);
  if (cmd == "stop") return Stop(with_profile, config);
  if (cmd == "restart") return Restart(with_profile, config);
  if (cmd == "status") return Status(with_profile, config);
  if (cmd == "reset") return Reset(with_profile, config);
  if (cmd == "delete") return Delete(with_profile, config);
  if (cmd == "list") return List(o, config);
  return Backends(o, config);
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  return ss::RunTool("ss-vm", argc, argv, [](const ss::Args& args) {
    if (!args.empty() && args[0] == "--complete")
      return ss::Complete({args.begin() + 1, args.end()});
    // Internal: the supervisor of a QEMU machine (see qemu_supervisor.hpp).
    if (args.size() == 2 && args[0] == "--qemu-supervise") return ss::RunQemuSupervisor(args[1]);
    return ss::Run(ss::ParseVmLine(args));
  });
}
