// The browser bridge: how the agent in a sandbox reaches the user's browser on the host.
//
// Three ways, in the order they are chosen:
//   socket    Claude in Chrome: the host's native messaging host listens on
//             /tmp/claude-mcp-browser-bridge-$USER/<pid>.sock; ss forwards it into the sandbox
//             as /tmp/claude-mcp-browser-bridge-sandbox/bridge.sock (directory 0700, socket 0600,
//             owned by the sandbox user: Claude Code refuses anything else). The name "bridge"
//             is not a PID, so the dead-PID cleanup of a native host started in the sandbox
//             leaves it alone. Each connection made there goes to the newest live host socket
//             found at that moment, so a restarted Claude on the host is picked up at once.
//   devtools  Chrome DevTools: a Chrome started with --remote-debugging-port answers
//             http://127.0.0.1:PORT/json/version (PORT: browser.cdp_port); ss forwards the
//             sandbox's 127.0.0.1:PORT to it (loopback on both ends), and chrome-devtools-mcp in
//             the sandbox, configured with --browserUrl http://127.0.0.1:PORT, drives it.
//   relay     Claude Code 2.1.92 and later send Claude in Chrome's tool calls through Anthropic's
//             relay (a claude.ai login with the extension's account), whatever ss forwards; the
//             socket then carries only identity probes. ss says so instead of claiming more.
//
// The checks return plain values (BrowserReport), for ss-tunnel, `ss status` and health checks;
// the messages are the spec's, built here and printed by the tools.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "json_out.hpp"
#include "ssh.hpp"

namespace ss {

inline constexpr const char* kSandboxBridgeSocket =
    "/tmp/claude-mcp-browser-bridge-sandbox/bridge.sock";

// The user whose Claude Code sockets are looked for: the user running ss (under sudo, the user
// who ran sudo), by passwd entry as Claude Code names it, else $USER.
struct BridgeUser {
  std::string name;
  uid_t uid = 0;
};
BridgeUser HostBridgeUser();
// /tmp/claude-mcp-browser-bridge-<user>, or $SS_BROWSER_SOCKET_DIR when set.
std::string HostSocketDir();
// /tmp/claude-mcp-browser-bridge-<user>/bridge.sock on the far side of an SSH connection.
std::string RemoteBridgeSocket(const std::string& remote_user);

struct HostSocket {
  std::string path;
  int64_t mtime_ns = 0;
  std::string problem;  // why it is refused (owner, mode), empty when usable
};

struct SocketDiscovery {
  std::string dir;
  bool dir_exists = false;
  std::string dir_problem;         // the directory is refused (symlink, owner, mode)
  std::vector<HostSocket> usable;  // passed the owner and mode checks, newest first
  std::vector<HostSocket> refused;
  std::vector<std::string> stale;  // usable but nobody listens (when probed)
  std::string live;                // the newest one that accepted a connection (when probed)
};

// Looks for host sockets. With `probe`, connects to the usable ones, newest first, until one
// accepts (`live`); the others it tried are `stale`.
SocketDiscovery DiscoverHostSockets(bool probe);
// The usable sockets for one forwarded connection, newest first (no probe: the connection
// itself is the test). Refused ones are skipped silently.
std::vector<SocketAddress> HostSocketTargets();

struct CdpInfo {
  int port = 0;
  bool available = false;
  std::string browser;  // "Chrome/156.0.8078.108"
  std::string websocket_url;
  std::string error;  // why not available
};
// GET http://127.0.0.1:PORT/json/version, never through a proxy.
CdpInfo DetectCdp(int port, std::chrono::milliseconds timeout = std::chrono::milliseconds(1500));

// Claude Code's version from `claude --version` output ("2.1.332 (Claude Code)").
struct AgentVersion {
  int major = 0, minor = 0, patch = 0;
  std::string text;  // "2.1.332"
};
std::optional<AgentVersion> ParseAgentVersion(std::string_view version_output);
// From 2.1.92 on, Claude in Chrome goes through Anthropic's relay.
bool UsesRelay(const AgentVersion& v);

enum class BrowserMode { kSocket, kDevTools, kNone };
const char* BrowserModeName(BrowserMode mode);  // "socket", "devtools", "none"

struct BrowserCheck {
  std::string name;  // "claude", "integration", "socket", "chrome", "devtools"
  bool ok = false;
  std::string detail;
};

// Everything ss can tell about the host side, without a sandbox.
struct BrowserReport {
  bool claude_installed = false;       // `claude` on PATH, or the native host wrapper exists
  bool integration = false;            // ~/.claude/chrome/chrome-native-host exists
  std::optional<bool> chrome_running;  // nullopt where ss cannot tell
  SocketDiscovery socket;              // probed
  CdpInfo cdp;
  BrowserMode mode = BrowserMode::kNone;  // socket first, then devtools
  std::vector<BrowserCheck> checks;
  std::vector<std::string> warnings;  // refused directories and sockets, in the one shape
};
BrowserReport CheckBrowserHost(int cdp_port);
Json BrowserReportJson(const BrowserReport& report);

// ---- messages (the spec's words; "your Mac" becomes "the host" elsewhere) ----

std::string HostWord();  // "your Mac" on macOS, else "the host"
// ~/super-sandbox/start-chrome-debug.sh (under $SS_HOME), as shown to the user.
std::string ChromeDebugScriptDisplay();
// The command to start Chrome with debugging by hand: the lines of a shell command (each but the
// last ends with " \\"), without indentation.
std::vector<std::string> ManualChromeCommand(int port);

std::string ConnectedLine(BrowserMode mode);  // "Browser: Connected (Claude in Chrome)"
std::vector<std::string> DevToolsNote();      // "  Note: Using fallback mode. ..."
std::string UnavailableBox();                 // "Browser Integration Unavailable"
std::string DevToolsFirstUseBox();            // "Chrome DevTools Fallback Active"
std::vector<std::string> RelayLines(const AgentVersion& v, BrowserMode mode);
// The "Browser Errors" of the spec, for ss-tunnel's checks: the primary method's problem and
// the fallback's outcome, in order.
std::vector<std::string> CheckMessages(const BrowserReport& report);
// One line for `ss status`.
std::string StatusSummary(const BrowserReport& report, const std::optional<AgentVersion>& agent);

// Writes $SS_HOME/start-chrome-debug.sh (0755) when it is missing or differs. Returns its path.
std::string WriteChromeDebugScript(int port);

// ---- the bridge on a connection ----

struct BrowserSetupOptions {
  int cdp_port = 9222;
  std::string remote_user = "sandbox";  // names the sandbox-side socket directory
  std::string python = "python3";
  // Point the far side's chrome-devtools-mcp at the forwarded port when it does not (sandboxes;
  // elsewhere ss only warns).
  bool configure_mcp = true;
};

// The browser forwards of one SSH connection. They ride the connection: they serve while its
// loop runs and end with it (or with this object).
class BrowserBridge {
 public:
  // Looks at the host, sets up what is available (the socket forward if a live host socket
  // exists, the DevTools forward if Chrome answers on the port), asks the far side for its
  // Claude Code version and makes sure chrome-devtools-mcp points at the forwarded port. Never
  // throws for a missing browser: mode() is kNone then.
  static std::unique_ptr<BrowserBridge> Start(SshConnection& conn,
                                              const BrowserSetupOptions& options);
  ~BrowserBridge();
  BrowserBridge(const BrowserBridge&) = delete;
  BrowserBridge& operator=(const BrowserBridge&) = delete;

  BrowserMode mode() const;
  const BrowserReport& report() const;
  const std::optional<AgentVersion>& agent() const;
  // What to show before the session (the spec's lines and boxes), ending with a newline.
  std::string Message() const;
  // Problems that did not stop the bridge (refused sockets, a port taken in the sandbox).
  const std::vector<std::string>& warnings() const;
  Json ToJson() const;
  // The forwards, as ss-tunnel's --json lines.
  std::vector<Json> ForwardsJson() const;
  // Connections the socket forward carried so far.
  uint64_t socket_connections() const;

  struct State;

 private:
  explicit BrowserBridge(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace ss
