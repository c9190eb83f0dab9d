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

namespace ss {
namespace {

constexpr const char* kUsage =
    R"(usage: ss-tunnel [-L SPEC]... [-R SPEC]... [--browser] [-N] [-i KEY] [-p PORT] [OPTIONS] DEST
       ss-tunnel --check [--json]

Forwards over SSH, in ssh(1)'s grammar, to DEST: a sandbox by name, or user@host. Without -N a
shell opens there and the forwards last as long as it does; with -N they last until the
connection is lost or ss-tunnel is interrupted (SIGINT, SIGTERM, SIGHUP).

Forwards (repeatable; all must be set up, or ss-tunnel fails):
  -L SPEC               listen here, connect from DEST: [bind_address:]port:host:hostport,
                        [bind_address:]port:remote_socket, local_socket:host:hostport,
                        local_socket:remote_socket
  -R SPEC               listen on DEST, connect from here: [bind_address:]port:host:hostport,
                        [bind_address:]port:local_socket, remote_socket:host:hostport,
                        remote_socket:local_socket
  --browser             the browser bridge: Claude in Chrome's socket, else Chrome DevTools on
                        browser.cdp_port; says which, and whether Claude Code uses the relay

Options:
  -N                    no shell: forward only
  -i KEY                private key for user@host (default: ~/.ssh/id_ed25519, id_ecdsa, id_rsa)
  -p PORT               SSH port of user@host (default 22)
  --known-hosts FILE    known_hosts for user@host (default: ~/.ssh/known_hosts and
                        /etc/ssh/ssh_known_hosts); a host key not in it is refused
  --json                one status line (JSON) per forward on stdout
  --check               check the browser integration on this host and exit (1: none)
  -h, --help            show this help
)";

struct Options {
  std::vector<ForwardSpec> forwards;
  bool browser = false;
  bool no_shell = false;
  DestinationFlags dest_flags;
  bool json = false;
  bool check = false;
  bool help = false;
  std::string dest;
};

Options ParseArgs(const Args& args) {
  Options o;
  auto usage = [](std::string why) { return UsageError(std::move(why), "ss tunnel"); };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    // ssh's short options take their value attached or as the next word.
    auto value = [&](const std::string& flag) -> std::string {
      if (a.size() > flag.size() && a.rfind(flag, 0) == 0 && flag.size() == 2) {
        return a.substr(2);
      }
      if (a.size() > flag.size() + 1 && a.rfind(flag + "=", 0) == 0) {
        return a.substr(flag.size() + 1);
      }
      if (i + 1 >= args.size()) throw usage(Cat(flag, " needs a value"));
      return args[++i];
    };
    auto is = [&](const std::string& flag) {
      return a == flag || (flag.size() == 2 && a.size() > 2 && a.rfind(flag, 0) == 0) ||
             (flag.size() > 2 && a.rfind(flag + "=", 0) == 0);
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "-N") {
      o.no_shell = true;
    } else if (a == "--browser") {
      o.browser = true;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--check") {
      o.check = true;
    } else if (is("-L")) {
      o.forwards.push_back(ParseForwardSpec(value("-L"), ForwardDirection::kLocal));
    } else if (is("-R")) {
      o.forwards.push_back(ParseForwardSpec(value("-R"), ForwardDirection::kRemote));
    } else if (is("-i")) {
      o.dest_flags.identity = value("-i");
    } else if (is("-p")) {
      std::string v = value("-p");
      if (v.empty() || v.size() > 5 || v.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(v) == 0 || std::stoi(v) > 65535) {
        throw usage(Cat("bad port '", v, "'"));
      }
      o.dest_flags.port = std::stoi(v);
    } else if (is("--known-hosts")) {
      o.dest_flags.known_hosts = value("--known-hosts");
    } else if (a.size() > 1 && a[0] == '-') {
      throw usage(Cat("unknown option '", a, "'"));
    } else if (o.dest.empty()) {
      o.dest = a;
    } else {
      throw Error(kExitUsage, Cat("unexpected argument '", a, "'"), {},
                  {"ss-tunnel runs no remote command: use -N to forward only, or ss exec"});
    }
  }
  return o;
}

int Check(const Options& o) {
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

int Run(const Options& o) {
  if (o.help) {
    std::cout << kUsage;
    return 0;
  }
  if (o.check) return Check(o);
  if (o.dest.empty()) {
    std::cerr << kUsage;
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
    return ss::Run(ss::ParseArgs(args));
  });
}
