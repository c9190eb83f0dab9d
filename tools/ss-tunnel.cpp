// ss-tunnel: forwards over SSH with ssh(1)'s -L / -R grammar (unix sockets included), to a sandbox
// or any SSH server, and the browser bridge (Claude in Chrome's socket, Chrome DevTools).
#include <signal.h>
#include <unistd.h>

#include <asio/signal_set.hpp>
#include <iostream>

#include "browser.hpp"
#include "config.hpp"
#include "error.hpp"
#include "forward_spec.hpp"
#include "json_out.hpp"
#include "output.hpp"
#include "sandbox.hpp"
#include "ssh.hpp"
#include "strings.hpp"
#include "tool.hpp"
#include "tunnel.hpp"
#include "tunnel_line.hpp"

namespace ss {
namespace {

int Check(const TunnelLine& o) {
  if (!o.forwards.empty() || o.browser || !o.dest.empty() || o.no_shell) {
    throw Error(kExitUsage, "--check takes no forwards and no destination");
  }
  int port = static_cast<int>(Config::Load().Int("browser.cdp_port"));
  BrowserReport report = CheckBrowserHost(port);
  // The messages tell the user to run start-chrome-debug.sh: it is there.
  try {
    WriteChromeDebugScript(port);
  } catch (const Error& e) {
    report.warnings.push_back(e.what());
  }
  if (o.json) {
    PrintJson(BrowserReportJson(report));
  } else {
    for (const auto& w : report.warnings) Warn(w);
    for (const auto& c : report.checks) {
      std::cout << (c.ok ? "ok    " : "no    ") << c.name << ": " << c.detail << "\n";
    }
    std::cout << "\n";
    for (const auto& line : CheckMessages(report)) std::cout << line << "\n";
  }
  return report.mode == BrowserMode::kNone ? kExitFailure : 0;
}

int Run(const TunnelLine& o) {
  if (o.help) {
    std::cout << kTunnelUsage;
    return 0;
  }
  if (o.check) return Check(o);
  if (o.dest.empty()) {
    std::cerr << kTunnelUsage;
    return kExitUsage;
  }
  if (!o.no_shell && !StdinIsTty()) {
    throw Error(kExitUsage, "no terminal for a shell", {},
                {"use -N to forward only, or run ss-tunnel from a terminal"});
  }
  Destination dest = ResolveDestination(o.dest, o.dest_flags);
  SshConnection conn(dest.endpoint, dest.options);
  std::unique_ptr<Tunnel> tunnel = Tunnel::Open(conn, o.forwards);
  std::unique_ptr<BrowserBridge> browser;
  if (o.browser) {
    BrowserSetupOptions bo;
    bo.cdp_port = static_cast<int>(Config::Load().Int("browser.cdp_port"));
    bo.remote_user = dest.endpoint.user;
    bo.configure_mcp = !dest.sandbox.empty();
    browser = BrowserBridge::Start(conn, bo);
    for (const auto& w : browser->warnings()) Warn(w);
  }
  if (o.json) {
    for (const auto& f : tunnel->forwards()) PrintJsonLine(f.ToJson());
    if (browser) {
      for (const auto& line : browser->ForwardsJson()) PrintJsonLine(line);
      PrintJsonLine(browser->ToJson());
    }
  } else {
    for (const auto& line : tunnel->AllocatedMessages()) Note(line);
    if (browser) std::cerr << browser->Message() << std::flush;
  }
  if (browser && browser->mode() == BrowserMode::kNone && o.forwards.empty() && o.no_shell) {
    throw Error(kExitUnavailable, "no browser integration to forward", {},
                {"run 'ss-tunnel --check' to see why"});
  }

  std::string broken;
  tunnel->OnBroken([&](const std::string& why) {
    broken = why;
    conn.Stop();
  });
  if (!o.no_shell) return conn.RunInteractive({});

  asio::signal_set signals(conn.io_context(), SIGINT, SIGTERM, SIGHUP);
  signals.async_wait([&](const asio::error_code& ec, int) {
    if (!ec) conn.Stop();
  });
  conn.Run();
  signals.cancel();
  if (!broken.empty()) throw Error(kExitRemote, broken);
  return 0;
}

int Complete(const Args& words) {
  const std::string prev = words.size() >= 2 ? words[words.size() - 2] : "";
  if (prev == "-i" || prev == "--known-hosts" || prev == "-p" || prev == "-L" || prev == "-R") {
    return 0;  // a file, a port or a forward: nothing to offer
  }
  for (const auto& n : KnownSandboxes()) std::cout << n << "\n";
  for (const char* f : {"-L", "-R", "--browser", "-N", "-i", "-p", "--known-hosts", "--json",
                        "--check", "--help"}) {
    std::cout << f << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  return ss::RunTool("ss-tunnel", argc, argv, [](const ss::Args& args) {
    if (!args.empty() && args[0] == "--complete")
      return ss::Complete({args.begin() + 1, args.end()});
    return ss::Run(ss::ParseTunnelLine(args));
  });
}
