#include "browser.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <asio/steady_timer.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "box.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "http.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "remote_socket.hpp"
#include "resources.hpp"
#include "strings.hpp"

namespace ss {
namespace {

constexpr const char* kBridgeDirPrefix = "/tmp/claude-mcp-browser-bridge-";
constexpr const char* kProfileDisplay = "~/.super-sandbox/chrome-debug-profile";
constexpr auto kCdpRetry = std::chrono::seconds(2);

std::string Octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// Why a directory or socket of the host bridge is refused, or "" when it is fine: it must be
// the user's and closed to everyone else.
std::string OwnershipProblem(const struct stat& st, const BridgeUser& user) {
  if (st.st_uid != user.uid) {
    std::string owner = Cat("uid ", st.st_uid);
    if (passwd* pw = ::getpwuid(st.st_uid)) owner = pw->pw_name;
    return Cat("is owned by ", owner, ", not ", user.name);
  }
  if ((st.st_mode & 077) != 0) {
    return Cat("is readable or writable by others (mode ", Octal(st.st_mode), ")");
  }
  return "";
}

// Connects to a unix socket without blocking: whether something listens there.
bool Listening(const std::string& path) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) return false;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size());
  bool live = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 || errno == EAGAIN;
  ::close(fd);
  return live;
}

// Whether something accepts TCP connections on 127.0.0.1:port: a refused port answers in
// microseconds, so a session with no debugging Chrome never loads the HTTP library.
bool TcpListening(int port, std::chrono::milliseconds timeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return true;  // let the HTTP request say what is wrong
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool live = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (!live && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    live = ::poll(&p, 1, static_cast<int>(timeout.count())) == 1 &&
           ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  }
  ::close(fd);
  return live;
}

std::optional<bool> ChromeRunning() {
#ifdef __linux__
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return std::nullopt;
  bool found = false;
  while (dirent* e = ::readdir(d)) {
    if (std::atoi(e->d_name) <= 0) continue;
    auto comm = ReadFileIfExists(Cat("/proc/", e->d_name, "/comm"));
    if (!comm) continue;
    std::string name(Trim(*comm));
    if (name == "chrome" || name == "google-chrome" || name.rfind("chromium", 0) == 0) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
#else
  return std::nullopt;
#endif
}

std::vector<std::string> BothUnavailableBlock(int port) {
  std::vector<std::string> lines = {
      "Error: Browser integration unavailable",
      "",
      "Neither Claude in Chrome nor Chrome DevTools debugging is available.",
      "",
      "To enable browser automation:",
      "",
      "  Primary (Claude in Chrome):",
      "    1. Run 'claude --chrome' on host",
      "    2. Keep it running",
      "",
      "  Fallback (Chrome DevTools):",
      Cat("    1. Run ", ChromeDebugScriptDisplay())};
  std::vector<std::string> manual = ManualChromeCommand(port);
  for (size_t i = 0; i < manual.size(); ++i) {
    lines.push_back(Cat(i == 0 ? "    2. Or: " : "           ", manual[i]));
  }
  lines.insert(lines.end(), {"", "Then run 'ss' again."});
  return lines;
}

}  // namespace

BridgeUser HostBridgeUser() {
  BridgeUser u;
  u.uid = ::getuid();
  if (u.uid == 0) {
    if (const char* sudo = std::getenv("SUDO_UID"); sudo && *sudo) {
      u.uid = static_cast<uid_t>(std::strtoul(sudo, nullptr, 10));
    }
  }
  if (passwd* pw = ::getpwuid(u.uid)) {
    u.name = pw->pw_name;
    return u;
  }
  for (const char* var : {"USER", "USERNAME"}) {
    if (const char* v = std::getenv(var); v && *v) {
      u.name = v;
      return u;
    }
  }
  u.name = "default";
  return u;
}

std::string HostSocketDir() {
  if (const char* dir = std::getenv("SS_BROWSER_SOCKET_DIR"); dir && *dir) {
    std::string d = dir;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    return d;
  }
  return kBridgeDirPrefix + HostBridgeUser().name;
}

std::string RemoteBridgeSocket(const std::string& remote_user) {
  return Cat(kBridgeDirPrefix, remote_user, "/bridge.sock");
}

SocketDiscovery DiscoverHostSockets(bool probe) {
  SocketDiscovery d;
  d.dir = HostSocketDir();
  BridgeUser user = HostBridgeUser();
  struct stat st;
  if (::lstat(d.dir.c_str(), &st) != 0) return d;
  d.dir_exists = true;
  if (S_ISLNK(st.st_mode)) {
    d.dir_problem = "is a symbolic link";
  } else if (!S_ISDIR(st.st_mode)) {
    d.dir_problem = "is not a directory";
  } else {
    d.dir_problem = OwnershipProblem(st, user);
  }
  if (!d.dir_problem.empty()) return d;
  DIR* dir = ::opendir(d.dir.c_str());
  if (dir == nullptr) {
    d.dir_problem = Cat("cannot be read (", std::strerror(errno), ")");
    return d;
  }
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".sock") != 0) continue;
    HostSocket s;
    s.path = Cat(d.dir, "/", name);
    struct stat sst;
    if (::lstat(s.path.c_str(), &sst) != 0) continue;
    s.mtime_ns = static_cast<int64_t>(sst.st_mtim.tv_sec) * 1000000000 + sst.st_mtim.tv_nsec;
    s.problem = S_ISSOCK(sst.st_mode) ? OwnershipProblem(sst, user) : "is not a socket";
    (s.problem.empty() ? d.usable : d.refused).push_back(std::move(s));
  }
  ::closedir(dir);
  std::sort(d.usable.begin(), d.usable.end(), [](const HostSocket& a, const HostSocket& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns > b.mtime_ns : a.path < b.path;
  });
  std::sort(d.refused.begin(), d.refused.end(),
            [](const HostSocket& a, const HostSocket& b) { return a.path < b.path; });
  if (probe) {
    for (const auto& s : d.usable) {
      if (Listening(s.path)) {
        d.live = s.path;
        break;
      }
      d.stale.push_back(s.path);
    }
  }
  return d;
}

std::vector<SocketAddress> HostSocketTargets() {
  std::vector<SocketAddress> out;
  for (const auto& s : DiscoverHostSockets(false).usable) {
    SocketAddress a;
    a.socket_path = s.path;
    out.push_back(std::move(a));
  }
  return out;
}

CdpInfo DetectCdp(int port, std::chrono::milliseconds timeout) {
  CdpInfo info;
  info.port = port;
  if (!TcpListening(port, std::min(timeout, std::chrono::milliseconds(500)))) {
    info.error = Cat("nothing listens on 127.0.0.1:", port);
    return info;
  }
  HttpRequest request;
  request.url = Cat("http://127.0.0.1:", port, "/json/version");
  request.timeout = timeout;
  request.connect_timeout = std::min(timeout, std::chrono::milliseconds(500));
  request.no_proxy = true;
  try {
    HttpResponse response = HttpFetch(request);
    if (response.status != 200) {
      info.error = Cat("http://127.0.0.1:", port, "/json/version answered ", response.status);
      return info;
    }
    Json doc = Json::parse(response.body);
    info.browser = doc.value("Browser", "");
    info.websocket_url = doc.value("webSocketDebuggerUrl", "");
    info.available = !info.websocket_url.empty();
    if (!info.available) info.error = Cat("port ", port, " is not a Chrome DevTools endpoint");
  } catch (const Error& e) {
    info.error = e.what();
  } catch (const Json::exception&) {
    info.error = Cat("port ", port, " is not a Chrome DevTools endpoint");
  }
  return info;
}

std::optional<AgentVersion> ParseAgentVersion(std::string_view output) {
  std::string_view s = output;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s[0]))) s.remove_prefix(1);
  if (!s.empty() && s[0] == 'v') s.remove_prefix(1);
  AgentVersion v;
  int* fields[3] = {&v.major, &v.minor, &v.patch};
  for (int i = 0; i < 3; ++i) {
    size_t n = 0;
    while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
    if (n == 0 || n > 9) return std::nullopt;
    *fields[i] = std::stoi(std::string(s.substr(0, n)));
    s.remove_prefix(n);
    if (i < 2) {
      if (s.empty() || s[0] != '.') return std::nullopt;
      s.remove_prefix(1);
    }
  }
  v.text = Cat(v.major, ".", v.minor, ".", v.patch);
  return v;
}

bool UsesRelay(const AgentVersion& v) {
  return std::tie(v.major, v.minor, v.patch) >= std::make_tuple(2, 1, 92);
}

const char* BrowserModeName(BrowserMode mode) {
  switch (mode) {
    case BrowserMode::kSocket:
      return "socket";
    case BrowserMode::kDevTools:
      return "devtools";
    case BrowserMode::kNone:
      break;
  }
  return "none";
}

BrowserReport CheckBrowserHost(int cdp_port) {
  BrowserReport r;
  std::string home = HomeDir();
  r.integration = PathExists(home + "/.claude/chrome/chrome-native-host");
  r.claude_installed = r.integration || FindInPath("claude").has_value() ||
                       PathExists(home + "/.claude/local/claude");
  r.chrome_running = ChromeRunning();
  r.socket = DiscoverHostSockets(true);
  r.cdp = DetectCdp(cdp_port);
  r.mode = !r.socket.live.empty() ? BrowserMode::kSocket
           : r.cdp.available      ? BrowserMode::kDevTools
                                  : BrowserMode::kNone;
  if (!r.socket.dir_problem.empty()) {
    r.warnings.push_back(Cat("refusing ", r.socket.dir, ": it ", r.socket.dir_problem));
  }
  for (const auto& s : r.socket.refused) {
    r.warnings.push_back(Cat("refusing ", s.path, ": it ", s.problem));
  }
  r.checks.push_back({"claude", r.claude_installed,
                      r.claude_installed ? "Claude Code is installed on the host"
                                         : "Claude Code is not installed on the host"});
  r.checks.push_back({"integration", r.integration,
                      Cat(DisplayPath(home + "/.claude/chrome/chrome-native-host"),
                          r.integration ? " exists" : " is missing (run 'claude --chrome')")});
  std::string socket_detail;
  if (!r.socket.live.empty()) {
    socket_detail = Cat(r.socket.live, " accepts connections");
  } else if (!r.socket.dir_exists) {
    socket_detail = Cat(r.socket.dir, " does not exist");
  } else if (!r.socket.dir_problem.empty()) {
    socket_detail = Cat(r.socket.dir, " is refused: it ", r.socket.dir_problem);
  } else if (!r.socket.stale.empty()) {
    socket_detail = Cat("no live socket in ", r.socket.dir, " (", r.socket.stale.size(),
                        r.socket.stale.size() == 1 ? " stale one)" : " stale ones)");
  } else {
    socket_detail = Cat("no usable socket in ", r.socket.dir);
  }
  r.checks.push_back({"socket", !r.socket.live.empty(), socket_detail});
  if (r.chrome_running) {
    r.checks.push_back({"chrome", *r.chrome_running,
                        *r.chrome_running ? "Chrome is running" : "Chrome is not running"});
  }
  r.checks.push_back({"devtools", r.cdp.available,
                      r.cdp.available ? Cat("port ", cdp_port, ": ", r.cdp.browser)
                                      : Cat("port ", cdp_port, ": ", r.cdp.error)});
  return r;
}

Json BrowserReportJson(const BrowserReport& r) {
  Json doc = JsonDocument("BrowserCheck");
  doc["mode"] = BrowserModeName(r.mode);
  doc["claude_installed"] = r.claude_installed;
  doc["integration"] = r.integration;
  doc["chrome_running"] = r.chrome_running ? Json(*r.chrome_running) : Json();
  Json socket;
  socket["dir"] = r.socket.dir;
  socket["dir_exists"] = r.socket.dir_exists;
  socket["dir_problem"] = r.socket.dir_problem.empty() ? Json() : Json(r.socket.dir_problem);
  socket["live"] = r.socket.live.empty() ? Json() : Json(r.socket.live);
  socket["usable"] = Json::array();
  for (const auto& s : r.socket.usable) socket["usable"].push_back(s.path);
  socket["stale"] = r.socket.stale;
  socket["refused"] = Json::array();
  for (const auto& s : r.socket.refused) {
    socket["refused"].push_back({{"path", s.path}, {"problem", s.problem}});
  }
  doc["socket"] = socket;
  doc["devtools"] = {{"port", r.cdp.port},
                     {"available", r.cdp.available},
                     {"browser", r.cdp.browser.empty() ? Json() : Json(r.cdp.browser)},
                     {"error", r.cdp.error.empty() ? Json() : Json(r.cdp.error)}};
  doc["checks"] = Json::array();
  for (const auto& c : r.checks) {
    doc["checks"].push_back({{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
  }
  doc["warnings"] = r.warnings;
  return doc;
}

// ---- messages ----

std::string HostWord() {
#ifdef __APPLE__
  return "your Mac";
#else
  return "the host";
#endif
}

std::string ChromeDebugScriptDisplay() { return DisplayPath(SsHome() + "/start-chrome-debug.sh"); }

std::vector<std::string> ManualChromeCommand(int port) {
  std::string chrome;
#ifdef __APPLE__
  chrome = "/Applications/Google\\ Chrome.app/Contents/MacOS/Google\\ Chrome";
#else
  chrome = "google-chrome";
  for (const char* name :
       {"google-chrome", "google-chrome-stable", "chromium", "chromium-browser"}) {
    if (FindInPath(name)) {
      chrome = name;
      break;
    }
  }
#endif
  return {Cat(chrome, " \\"), Cat("--remote-debugging-port=", port, " \\"),
          "--user-data-dir=\"$HOME/.super-sandbox/chrome-debug-profile\""};
}

std::string ConnectedLine(BrowserMode mode) {
  if (mode == BrowserMode::kSocket) return "Browser: Connected (Claude in Chrome)";
  if (mode == BrowserMode::kDevTools) return "Browser: Connected (Chrome DevTools)";
  return "Browser: Not available";
}

std::vector<std::string> DevToolsNote() {
  return {"  Note: Using fallback mode. For seamless experience,",
          Cat("  run 'claude --chrome' on ", HostWord(), ".")};
}

std::string UnavailableBox() {
  return Box({"Browser Integration Unavailable", "",
              "Neither browser automation method is available.", "", "Option 1 (Recommended):",
              Cat("  Run 'claude --chrome' on ", HostWord(), " and keep it running"), "",
              "Option 2 (DevTools Fallback):", Cat("  Run '", ChromeDebugScriptDisplay(), "'"),
              "  Note: This uses a separate Chrome profile", "", "Then run 'ss <project>' again."},
             71);
}

std::string DevToolsFirstUseBox() {
  return Box({"Chrome DevTools Fallback Active", "", "Connected to Chrome debug port.", "",
              "Note: This uses a separate Chrome profile at:", Cat("  ", kProfileDisplay), "",
              "You may need to log into websites in this browser window.",
              "Your sessions will persist between runs."},
             71);
}

std::vector<std::string> RelayLines(const AgentVersion& v, BrowserMode mode) {
  if (!UsesRelay(v)) return {};
  if (mode == BrowserMode::kSocket) {
    return {Cat("  Relay: Claude Code ", v.text,
                " in the sandbox sends Claude in Chrome's commands through Anthropic's"),
            "  relay (log in with /login, the extension's account); the socket serves its "
            "identity checks only."};
  }
  return {Cat("  Relay: Claude Code ", v.text,
              " in the sandbox can also reach Claude in Chrome through Anthropic's"),
          "  relay (log in with /login, the extension's account)."};
}

std::vector<std::string> CheckMessages(const BrowserReport& r) {
  std::vector<std::string> out;
  if (r.mode == BrowserMode::kSocket) {
    out.push_back(ConnectedLine(BrowserMode::kSocket));
    return out;
  }
  enum { kNotInstalled, kNoIntegration, kChromeNotRunning, kNotFound } primary;
  if (!r.claude_installed) {
    primary = kNotInstalled;
    out = {"Error: Claude Code is not installed",
           "",
           "Super-Sandbox requires Claude Code on the host for browser integration.",
           "",
           "Install it:",
           "  npm install -g @anthropic-ai/claude-code",
           "",
           "Then run 'ss' again."};
  } else if (!r.integration) {
    primary = kNoIntegration;
    out = {"Error: Claude Code Chrome integration not found",
           "",
           "Run this command on your host (not in the sandbox):",
           "  claude --chrome",
           "",
           "This sets up the browser bridge. Then run 'ss' again."};
  } else if (r.chrome_running && !*r.chrome_running && !r.cdp.available) {
    primary = kChromeNotRunning;
    out = {"Error: Chrome is not running",
           "",
           "Start Chrome and try again.",
           "",
           "For browser automation, either:",
           "  • Run 'claude --chrome' on host, or",
           Cat("  • Run '", ChromeDebugScriptDisplay(), "'")};
  } else {
    primary = kNotFound;
    out = {"Warning: Claude in Chrome socket not found"};
  }
  out.push_back("");
  if (r.cdp.available) {
    out.insert(out.end(), {"Checking for Chrome DevTools fallback...",
                           Cat("Found Chrome with remote debugging on port ", r.cdp.port, "."),
                           "Using Chrome DevTools MCP for browser automation."});
    return out;
  }
  if (primary == kChromeNotRunning) {
    out.pop_back();
    return out;
  }
  if (primary == kNotFound) {
    out.push_back("Checking for Chrome DevTools fallback...");
    out.insert(out.end(), {"Error: No browser integration available", "",
                           Cat("Option 1 (Recommended): Run 'claude --chrome' on host"),
                           "Option 2 (Fallback): Start Chrome with debugging:",
                           Cat("  ", ChromeDebugScriptDisplay()), "", "Then run 'ss' again."});
    return out;
  }
  std::vector<std::string> both = BothUnavailableBlock(r.cdp.port);
  out.insert(out.end(), both.begin(), both.end());
  return out;
}

std::string StatusSummary(const BrowserReport& r, const std::optional<AgentVersion>& agent) {
  std::string s;
  if (r.mode == BrowserMode::kSocket) {
    s = "connected (Claude in Chrome)";
  } else if (r.mode == BrowserMode::kDevTools) {
    s = Cat("connected (Chrome DevTools, port ", r.cdp.port, ")");
  } else {
    s = Cat("not available (run 'claude --chrome' on ", HostWord(), ", or ",
            ChromeDebugScriptDisplay(), ")");
  }
  if (agent && UsesRelay(*agent)) {
    s += Cat("; Claude Code ", agent->text,
             " in the sandbox reaches Claude in Chrome through Anthropic's relay");
  }
  return s;
}

std::string WriteChromeDebugScript(int port) {
  std::string path = SsHome() + "/start-chrome-debug.sh";
  std::string text = RenderTemplate(RequireResource("lib/templates/start-chrome-debug.sh"),
                                    {{"cdp_port", std::to_string(port)}});
  if (ReadFileIfExists(path) != text) {
    MakeDirs(SsHome());
    AtomicWrite(path, text, 0755);
  }
  return path;
}

// ---- the bridge on a connection ----

struct BrowserBridge::State {
  State(SshConnection& c, BrowserSetupOptions o)
      : conn(c), options(std::move(o)), retry(c.io_context()) {}

  SshConnection& conn;
  BrowserSetupOptions options;
  BrowserReport report;
  std::optional<AgentVersion> agent;
  std::unique_ptr<RemoteSocketForward> socket;
  std::string socket_path;
  int cdp_forward = -1;
  bool cdp_standby = false;
  asio::steady_timer retry;
  bool first_devtools_use = false;
  bool unavailable_box = false;  // no browser, and the box was not shown in the last day
  std::vector<std::string> warnings;
  BrowserMode mode = BrowserMode::kNone;

  void TryCdp() {
    int port = options.cdp_port;
    try {
      SocketAddress target;
      target.host = "127.0.0.1";
      target.port = port;
      ForwardInfo f = conn.ForwardRemote("127.0.0.1", port, [target] { return target; });
      cdp_forward = f.id;
      if (cdp_standby) Debug(Cat("browser: took over port ", port, " in the sandbox"));
      cdp_standby = false;
    } catch (const Error& e) {
      if (e.code() != kExitUnavailable) {
        if (!cdp_standby) warnings.push_back(Cat("cannot forward port ", port, ": ", e.what()));
        cdp_standby = false;
        return;
      }
      if (!cdp_standby) {
        warnings.push_back(Cat("port ", port,
                               " in the sandbox is taken (another ss session forwards it?); ss "
                               "takes it over when it is free"));
      }
      cdp_standby = true;
      retry.expires_after(kCdpRetry);
      retry.async_wait([this](const asio::error_code& ec) {
        if (ec) return;
        try {
          TryCdp();
        } catch (const std::exception& e) {
          Debug(Cat("browser: ", e.what()));
        }
      });
    }
  }
};

BrowserBridge::BrowserBridge(std::unique_ptr<State> state) : state_(std::move(state)) {}

BrowserBridge::~BrowserBridge() { state_->retry.cancel(); }

std::unique_ptr<BrowserBridge> BrowserBridge::Start(SshConnection& conn,
                                                    const BrowserSetupOptions& options) {
  auto st = std::make_unique<State>(conn, options);
  State& s = *st;
  s.report = CheckBrowserHost(options.cdp_port);
  s.warnings = s.report.warnings;
  try {
    WriteChromeDebugScript(options.cdp_port);
  } catch (const Error& e) {
    s.warnings.push_back(e.what());
  }

  // The far side's Claude Code version and its chrome-devtools-mcp entry, asked for while the
  // forwards are set up.
  bool version_done = false, config_done = !s.report.cdp.available;
  std::string config_text;
  conn.ExecAsync({"claude", "--version"}, {}, [&](ExecResult r, std::string error) {
    if (error.empty() && r.status == 0) s.agent = ParseAgentVersion(r.out);
    version_done = true;
  });
  if (!config_done) {
    ExecOptions home;
    home.cwd = "~";
    conn.ExecAsync({"cat", ".claude.json"}, home, [&](ExecResult r, std::string) {
      if (r.status == 0) config_text = std::move(r.out);
      config_done = true;
    });
  }

  if (!s.report.socket.live.empty()) {
    s.socket_path = RemoteBridgeSocket(options.remote_user);
    RemoteSocketOptions ro;
    ro.make_dir = true;
    ro.python = options.python;
    try {
      s.socket = RemoteSocketForward::Start(conn, s.socket_path, ro, HostSocketTargets);
    } catch (const Error& e) {
      if (e.code() != kExitRemote) throw;
      std::string why =
          e.details().empty() ? std::string(e.what()) : std::string(Trim(e.details()[0]));
      s.warnings.push_back(Cat("cannot forward Claude in Chrome's socket: ", why));
    }
  }
  if (s.report.cdp.available) s.TryCdp();
  conn.RunUntil([&] { return version_done && config_done; });

  if (s.socket) {
    s.mode = BrowserMode::kSocket;
  } else if (s.cdp_forward >= 0 || s.cdp_standby) {
    s.mode = BrowserMode::kDevTools;
  }
  if (s.report.cdp.available) {
    // chrome-devtools-mcp must point at the forwarded port (browser.cdp_port may have changed
    // since the sandbox was provisioned).
    std::string url = Cat("http://127.0.0.1:", options.cdp_port);
    bool configured = false;
    try {
      Json doc = Json::parse(config_text);
      const Json& args = doc.at("mcpServers").at("chrome-devtools").at("args");
      for (size_t i = 0; i < args.size(); ++i) {
        std::string a = args[i].get<std::string>();
        if (a == Cat("--browserUrl=", url) ||
            ((a == "--browserUrl" || a == "-u") && i + 1 < args.size() && args[i + 1] == url)) {
          configured = true;
        }
      }
    } catch (const std::exception&) {
    }
    if (!configured && options.configure_mcp) {
      conn.Exec({"claude", "mcp", "remove", "-s", "user", "chrome-devtools"});
      ExecResult add = conn.Exec({"claude", "mcp", "add", "-s", "user", "chrome-devtools", "--",
                                  "chrome-devtools-mcp", "--browserUrl", url});
      if (add.status != 0) {
        s.warnings.push_back(Cat("cannot configure chrome-devtools-mcp in the sandbox: ",
                                 Trim(add.err.empty() ? add.out : add.err)));
      }
    } else if (!configured) {
      s.warnings.push_back(
          Cat("chrome-devtools-mcp is not configured with --browserUrl ", url, " on the far side"));
    }
  }
  if (s.mode == BrowserMode::kNone) {
    // The box at most once a day; the sessions in between say it in one line (ss status, why).
    std::string stamp = StateDir() + "/browser-unavailable-shown";
    struct stat st;
    s.unavailable_box =
        ::stat(stamp.c_str(), &st) != 0 || std::time(nullptr) - st.st_mtime >= 24 * 60 * 60;
    if (s.unavailable_box) {
      try {
        MakeDirs(StateDir(), 0700);
        AtomicWrite(stamp, "", 0644);
      } catch (const Error& e) {
        Debug(e.what());
      }
    }
  }
  if (s.mode == BrowserMode::kDevTools) {
    std::string marker = StateDir() + "/browser-devtools-seen";
    if (!PathExists(marker)) {
      s.first_devtools_use = true;
      try {
        MakeDirs(StateDir(), 0700);
        AtomicWrite(marker, "", 0644);
      } catch (const Error& e) {
        Debug(e.what());
      }
    }
  }
  return std::unique_ptr<BrowserBridge>(new BrowserBridge(std::move(st)));
}

BrowserMode BrowserBridge::mode() const { return state_->mode; }
const BrowserReport& BrowserBridge::report() const { return state_->report; }
const std::optional<AgentVersion>& BrowserBridge::agent() const { return state_->agent; }
const std::vector<std::string>& BrowserBridge::warnings() const { return state_->warnings; }

uint64_t BrowserBridge::socket_connections() const {
  return state_->socket ? state_->socket->total_connections() : 0;
}

std::string BrowserBridge::Message() const {
  const State& s = *state_;
  std::string out;
  if (s.mode == BrowserMode::kNone) {
    out += s.unavailable_box ? UnavailableBox()
                             : Cat(ConnectedLine(s.mode), " (ss status says why)\n");
  } else {
    if (s.first_devtools_use && s.mode == BrowserMode::kDevTools) out += DevToolsFirstUseBox();
    out += ConnectedLine(s.mode) + "\n";
    if (s.mode == BrowserMode::kDevTools) {
      for (const auto& line : DevToolsNote()) out += line + "\n";
    }
  }
  if (s.agent) {
    for (const auto& line : RelayLines(*s.agent, s.mode)) out += line + "\n";
  }
  return out;
}

Json BrowserBridge::ToJson() const {
  const State& s = *state_;
  Json doc = JsonDocument("BrowserBridge");
  doc["mode"] = BrowserModeName(s.mode);
  doc["host_socket"] = s.report.socket.live.empty() ? Json() : Json(s.report.socket.live);
  doc["remote_socket"] = s.socket ? Json(s.socket_path) : Json();
  doc["remote_socket_shared"] = s.socket ? Json(s.socket->shared()) : Json();
  doc["devtools"] = {
      {"port", s.options.cdp_port},
      {"available", s.report.cdp.available},
      {"browser", s.report.cdp.browser.empty() ? Json() : Json(s.report.cdp.browser)},
      {"forwarded", s.cdp_forward >= 0},
      {"standby", s.cdp_standby}};
  doc["agent_version"] = s.agent ? Json(s.agent->text) : Json();
  doc["relay"] = s.agent ? Json(UsesRelay(*s.agent)) : Json();
  doc["warnings"] = s.warnings;
  return doc;
}

std::vector<Json> BrowserBridge::ForwardsJson() const {
  const State& s = *state_;
  std::vector<Json> out;
  if (s.socket) {
    Json f = JsonDocument("TunnelForward");
    f["direction"] = "remote";
    f["purpose"] = "browser-socket";
    f["listen"] = {{"path", s.socket_path}};
    f["target"] = {{"discover", s.report.socket.dir}};
    f["state"] = s.socket->shared() ? "shared" : "listening";
    out.push_back(std::move(f));
  }
  if (s.cdp_forward >= 0 || s.cdp_standby) {
    Json f = JsonDocument("TunnelForward");
    f["direction"] = "remote";
    f["purpose"] = "browser-devtools";
    f["listen"] = {{"host", "127.0.0.1"}, {"port", s.options.cdp_port}};
    f["target"] = {{"host", "127.0.0.1"}, {"port", s.options.cdp_port}};
    f["state"] = s.cdp_standby ? "standby" : "listening";
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ss
