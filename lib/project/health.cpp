#include "health.hpp"

#include <pwd.h>
#include <unistd.h>

#include <fstream>
#include <iomanip>
#include <sstream>

#include "backend.hpp"
#include "backend_factory.hpp"
#include "browser.hpp"
#include "config.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "project.hpp"
#include "resources.hpp"
#include "sandbox.hpp"
#include "size.hpp"
#include "ssh.hpp"
#include "strings.hpp"
#include "working_copy.hpp"

namespace ss {
namespace {

// The agent's own API: what the sandbox must reach, through its network policy.
constexpr const char* kNetworkUrl = "https://api.anthropic.com/";

std::string FirstLine(const std::string& text) {
  auto lines = SplitLines(std::string(Trim(text)));
  return lines.empty() ? "" : lines.front();
}

CheckResult Ok(std::string name, std::string detail) {
  return {std::move(name), CheckStatus::kOk, std::move(detail), ""};
}
CheckResult Failed(std::string name, std::string detail, std::string fix = "") {
  return {std::move(name), CheckStatus::kFailed, std::move(detail), std::move(fix)};
}
CheckResult Warning(std::string name, std::string detail, std::string fix = "") {
  return {std::move(name), CheckStatus::kWarning, std::move(detail), std::move(fix)};
}

// Runs argv in the sandbox; ok with its output, failed with its error.
CheckResult Remote(SshConnection& conn, std::string name, const std::vector<std::string>& argv,
                   const std::string& ok_detail, const std::string& fix) {
  try {
    ExecResult r = conn.Exec(argv);
    if (r.status == 0) {
      std::string out = FirstLine(r.out);
      return Ok(std::move(name), ok_detail.empty() ? out : ok_detail);
    }
    std::string why = FirstLine(r.err.empty() ? r.out : r.err);
    if (r.status == 127) why = Cat(argv[0], ": command not found");
    if (why.empty()) why = Cat(argv[0], " exited with status ", r.status);
    return Failed(std::move(name), why, fix);
  } catch (const Error& e) {
    return Failed(std::move(name), e.what(), fix);
  }
}

// The agent works without a browser: none on the host is a warning with the fix. A browser the
// host has that the sandbox cannot reach through the tunnel is a failure.
CheckResult BrowserThroughTunnel(SshConnection& conn, int port) {
  const std::string name = "browser bridge";
  CdpInfo host = DetectCdp(port);
  if (!host.available) {
    return Warning(name,
                   Cat("no browser on the host's port ", port,
                       " (the agent works without one, with no browser tools)"),
                   Cat("run 'claude --chrome' on ", HostWord(), ", or ", ChromeDebugScriptDisplay(),
                       " (Chrome DevTools on port ", port, ")"));
  }
  try {
    // The tunnel ss attach sets up: the sandbox's 127.0.0.1:PORT to the host's. When a session
    // already holds the port, its forward is what gets tested.
    conn.ForwardRemote("127.0.0.1", port, [port]() -> std::optional<SocketAddress> {
      SocketAddress a;
      a.host = "127.0.0.1";
      a.port = port;
      return a;
    });
  } catch (const Error& e) {
    Debug(Cat("health: forward of port ", port, " not made: ", e.what()));
  }
  std::string url = Cat("http://127.0.0.1:", port, "/json/version");
  try {
    ExecResult r = conn.Exec({"curl", "-sS", "-f", "-m", "5", url});
    if (r.status == 0) {
      std::string browser;
      try {
        browser = Json::parse(r.out).value("Browser", "");
      } catch (const Json::exception&) {
      }
      return Ok(name, Cat(browser.empty() ? "a browser" : browser, " answers on port ", port,
                          " through the tunnel"));
    }
    return Failed(
        name,
        Cat(host.browser.empty() ? "the browser" : host.browser, " answers on the host's port ",
            port, " but not through the tunnel (", FirstLine(r.err), ")"),
        Cat("see what holds port ", port, " in the sandbox: ss exec ss -tlnp"));
  } catch (const Error& e) {
    return Failed(name, e.what());
  }
}

CheckResult DiskSpace() {
  std::string path = SsHome();
  while (!path.empty() && path != "/" && !PathExists(path)) path = Dirname(path);
  int64_t free = path.empty() ? -1 : FreeBytes(path);
  if (free < 0) return Warning("disk space", Cat("cannot tell the free space of ", SsHome()));
  std::string detail = Cat(FormatSizeHuman(free), " free in ", path);
  if (free < 5 * kGiB)
    return Failed("disk space", detail, "free at least 5GB: sandboxes and images need it");
  return Ok("disk space", detail);
}

CheckResult HostProgram(const std::string& name, const std::vector<std::string>& candidates,
                        const std::string& why) {
  for (const auto& c : candidates) {
    std::optional<std::string> path =
        c[0] == '/' ? (PathExists(c) ? std::optional<std::string>(c) : std::nullopt)
                    : FindInPath(c);
    if (!path) continue;
    ProcessOptions o;
    o.timeout = std::chrono::seconds(10);
    o.unlisted = true;  // the user's own programs, looked for, never installed
    ProcessResult r = Run({*path, "--version"}, o);
    std::string version = r.ok() ? FirstLine(r.out) : "";
    return Ok(name, version.empty() ? *path : Cat(version, " (", *path, ")"));
  }
  return Warning(name, "not found", why);
}

CheckResult BridgeSocket() {
  const char* user = std::getenv("SUDO_USER");
  std::string name = user && *user ? user : "";
  if (name.empty()) {
    if (passwd* pw = ::getpwuid(::getuid())) name = pw->pw_name;
  }
  std::string dir = Cat("/tmp/claude-mcp-browser-bridge-", name);
  int sockets = 0;
  for (const auto& n : ListDir(dir)) {
    if (n.size() > 5 && n.substr(n.size() - 5) == ".sock") ++sockets;
  }
  if (sockets > 0) return Ok("bridge socket", Cat(sockets, " Claude in Chrome socket(s) in ", dir));
  return Warning(
      "bridge socket", Cat("no Claude in Chrome socket in ", dir),
      "open Chrome with the Claude extension; or use Chrome DevTools (browser.cdp_port)");
}

}  // namespace

const char* CheckStatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kWarning:
      return "warning";
    case CheckStatus::kFailed:
      return "FAILED";
  }
  return "?";
}

bool AnyFailed(const std::vector<CheckResult>& checks) {
  for (const auto& c : checks) {
    if (c.status == CheckStatus::kFailed) return true;
  }
  return false;
}

std::string FormatChecks(const std::vector<CheckResult>& checks) {
  size_t width = 0;
  for (const auto& c : checks) width = std::max(width, c.name.size());
  std::string out;
  for (const auto& c : checks) {
    std::string status = CheckStatusName(c.status);
    out += Cat(c.name, std::string(width + 2 - c.name.size(), ' '), status,
               std::string(9 - status.size(), ' '), c.detail, "\n");
    if (!c.fix.empty() && c.status != CheckStatus::kOk) {
      out += Cat(std::string(width + 11, ' '), "fix: ", c.fix, "\n");
    }
  }
  return out;
}

Json ChecksJson(const std::vector<CheckResult>& checks) {
  Json items = Json::array();
  for (const auto& c : checks) {
    Json j = {{"name", c.name},
              {"ok", c.status != CheckStatus::kFailed},
              {"status", c.status == CheckStatus::kFailed ? "failed" : CheckStatusName(c.status)},
              {"detail", c.detail}};
    j["fix"] = c.fix.empty() ? Json() : Json(c.fix);
    items.push_back(j);
  }
  return items;
}

std::vector<CheckResult> HealthCheck(Sandbox& sandbox, const Config& config) {
  std::vector<CheckResult> checks;
  std::unique_ptr<SshConnection> conn;
  SandboxState state = sandbox.State();
  if (state != SandboxState::kRunning) {
    checks.push_back(Failed("ssh", Cat("sandbox '", sandbox.name(), "' is ", StateName(state)),
                            "start it: ss start"));
  } else {
    try {
      SshOptions o = sandbox.Options();
      o.tcp_timeout = std::chrono::seconds(5);
      conn = std::make_unique<SshConnection>(sandbox.Endpoint(), o);
      ExecResult r = conn->Exec({"true"});
      if (r.status != 0) throw Error(kExitRemote, Cat("`true` exited with status ", r.status));
      const SshEndpoint& e = conn->endpoint();
      checks.push_back(Ok("ssh", Cat(e.user, "@", e.host, ":", e.port, ", host key pinned")));
    } catch (const Error& e) {
      conn.reset();
      checks.push_back(Failed("ssh", e.what(), "see: ss status; ss doctor"));
    }
  }
  const std::vector<std::string> names = {"network",           "docker",       "claude",
                                          "project directory", "source mount", "browser bridge"};
  if (!conn) {
    for (const auto& n : names) checks.push_back(Failed(n, "not checked: no SSH connection"));
    return checks;
  }
  checks.push_back(
      Remote(*conn, "network", {"curl", "-sS", "-o", "/dev/null", "-m", "10", "-I", kNetworkUrl},
             Cat(kNetworkUrl, " answers (the agent's API)"),
             "if the policy refuses it: ss net allow api.anthropic.com; see: ss net log"));
  checks.push_back(Remote(*conn, "docker", ScriptArgv("sh", "health-docker.sh", {"120"}), "",
                          "start it: ss exec sudo systemctl start docker"));
  checks.push_back(Remote(*conn, "claude", {"claude", "--version"}, "",
                          "reinstall it: npm install -g @anthropic-ai/claude-code"));
  checks.push_back(Remote(*conn, "project directory",
                          ScriptArgv("sh", "health-project-dir.sh", {"/home/sandbox/projects"}), "",
                          "check the sandbox's projects folder: ss exec ls -ld projects"));
  std::vector<std::string> source = ScriptArgv("sh", "health-source-mount.sh");
  if (sandbox.shares().projects) source.push_back(kProjectsTarget);
  for (const auto& m : sandbox.shares().mounts) source.push_back(m.target);
  source.push_back("--");
  for (const auto& c : CopySourcesIn(config, sandbox.name())) source.push_back(c.name);
  checks.push_back(
      Remote(*conn, "source mount", source, "",
             Cat("restart the sandbox (ss stop; ss start), or recreate it: ss reset")));
  checks.push_back(BrowserThroughTunnel(*conn, static_cast<int>(config.Int("browser.cdp_port"))));
  return checks;
}

// The egress policy new sandboxes get (config.yaml's network), and whether this host can fence
// them: nftables, and root (directly, or through the rule ss vm setup gives the engine's group).
CheckResult EgressCheck(const Config& config) {
  std::string mode = config.String("network.mode");
  std::vector<std::string> presets = config.List("network.presets");
  std::string policy = Cat("new sandboxes: ", mode);
  if (mode != "none") {
    policy += Cat(" (", presets.empty() ? "no presets" : Join(presets, ", "), "; ",
                  config.List("network.allow").size(), " more allowed, ",
                  config.List("network.deny").size(), " denied)");
  }
  if (!FindInPath("nft")) {
    return Warning("egress", Cat(policy, "; nftables is not installed, so none can be fenced"),
                   "install it: sudo ss vm setup");
  }
  if (::geteuid() != 0 && !PathExists("/etc/sudoers.d/ss-net-docker") &&
      !PathExists("/etc/sudoers.d/ss-net-lxd")) {
    return Warning(
        "egress", Cat(policy, "; fencing a sandbox needs root"),
        "let your group fence its sandboxes: sudo ss vm setup --backend docker (or lxd)");
  }
  return Ok("egress", Cat(policy, "; fenced on the host (nftables, ss-net)"));
}

std::vector<CheckResult> MacChecks(const platform::MacHost& mac) {
  std::vector<CheckResult> checks;
  if (!mac.is_macos) return checks;
  int major = std::atoi(mac.version.c_str());
  if (major >= 13) {
    checks.push_back(Ok("macos", Cat("macOS ", mac.version)));
  } else {
    checks.push_back(
        Failed("macos",
               Cat("macOS ", mac.version.empty() ? "of an unknown version" : mac.version,
                   ": Lume and Lima's vz machines need macOS 13 (Ventura) or later"),
               "update macOS (System Settings > General > Software Update)"));
  }
  if (mac.apple_silicon) {
    checks.push_back(Ok("apple silicon", "Apple Silicon (arm64)"));
  } else {
    checks.push_back(Warning("apple silicon",
                             "an Intel Mac: Lume runs on Apple Silicon only (Lima and Docker "
                             "still do)",
                             "use --backend lima or --backend docker"));
  }
  if (mac.virtualization) {
    checks.push_back(
        Ok("virtualization.framework", "Virtualization.framework can run virtual machines"));
  } else {
    checks.push_back(Failed("virtualization.framework",
                            "this Mac cannot run virtual machines (kern.hv_support is 0): a Mac "
                            "that is itself a virtual machine usually cannot",
                            "run ss on the Mac itself, or use --backend docker"));
  }
  return checks;
}

std::vector<CheckResult> Doctor(const Config& config) {
  std::vector<CheckResult> checks;
  checks.push_back(Ok("virtualization", DetectAccel().reason));
  for (auto& c : MacChecks(platform::Mac())) checks.push_back(std::move(c));
  std::vector<CheckResult> backends;
  bool any = false;
  for (const auto& name : BackendNames()) {
    Probe p;
    try {
      p = MakeBackend(name, config)->CheckHost();
    } catch (const Error& e) {
      p.reason = e.what();
    }
    any = any || p.usable;
    backends.push_back(p.usable ? Ok(Cat("backend ", name), p.reason)
                                : Warning(Cat("backend ", name), p.reason, p.fix));
  }
  for (auto& b : backends) {
    if (!any) b.status = CheckStatus::kFailed;
    checks.push_back(b);
  }
  checks.push_back(DiskSpace());
  checks.push_back(EgressCheck(config));
  checks.push_back(HostProgram("claude code", {"claude"},
                               "install it on the host for Claude in Chrome: "
                               "npm install -g @anthropic-ai/claude-code"));
  checks.push_back(
      HostProgram("chrome",
                  {"google-chrome", "google-chrome-stable", "chromium", "chromium-browser",
                   "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome"},
                  "install Google Chrome (or Chromium) for the browser bridge"));
  checks.push_back(BridgeSocket());
  return checks;
}

}  // namespace ss
