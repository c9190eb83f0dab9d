// What the host has (browser.hpp): its bridge sockets, Chrome's debugging port, the agent's
// version, and the report built from them.
#include "browser.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "http.hpp"
#include "net.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "process.hpp"
#include "strings.hpp"

namespace ss {
namespace {

constexpr const char* kBridgeDirPrefix = "/tmp/claude-mcp-browser-bridge-";

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
  Fd fd(platform::Socket(AF_UNIX, SOCK_STREAM, /*nonblock=*/true));
  if (!fd.ok()) return false;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size());
  return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 || errno == EAGAIN;
}

std::optional<bool> ChromeRunning() {
  auto pids = platform::Processes();
  if (pids.empty()) return std::nullopt;
  for (pid_t pid : pids) {
    auto p = platform::Process(pid);
    if (!p) continue;
    const std::string& name = p->name;
    if (name == "chrome" || name == "google-chrome" || name.rfind("chromium", 0) == 0 ||
        name == "Google Chrome") {
      return true;
    }
  }
  return false;
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
    s.mtime_ns = platform::ModifiedNs(sst);
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
  // A refused port answers in microseconds, so a session with no debugging Chrome never loads
  // the HTTP library.
  if (!TcpPortOpen("127.0.0.1", port, std::min(timeout, std::chrono::milliseconds(500)))) {
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

}  // namespace ss
