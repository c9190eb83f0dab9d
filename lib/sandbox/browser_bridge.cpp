// The bridge on a connection (browser.hpp): the forwards that carry the browser into a sandbox
// for one session, and what it reports.
#include <fcntl.h>
#include <netinet/in.h>
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

#include "browser.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "remote_socket.hpp"
#include "strings.hpp"
namespace ss {
namespace {

constexpr auto kCdpRetry = std::chrono::seconds(2);

}  // namespace

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
