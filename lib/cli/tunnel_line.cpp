#include "tunnel_line.hpp"

#include "error.hpp"
#include "strings.hpp"
#include "tool.hpp"

namespace ss {

const char* const kTunnelUsage =
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

TunnelLine ParseTunnelLine(const std::vector<std::string>& args) {
  TunnelLine o;
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

}  // namespace ss
