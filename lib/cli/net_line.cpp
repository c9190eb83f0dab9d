#include "net_line.hpp"

#include "error.hpp"
#include "strings.hpp"
#include "tool.hpp"

namespace ss {

const char* const kNetUsage =
    R"(usage: ss-net allow RULE... [--sandbox NAME]
       ss-net deny RULE... [--sandbox NAME]
       ss-net mode allowlist|open|none [--sandbox NAME]
       ss-net ls [--json] [--sandbox NAME]
       ss-net log [-f] [--json] [--sandbox NAME]
       ss-net ca
       ss-net serve --sandbox NAME [--proxy ADDR:PORT]... [--transparent ADDR:PORT]...
                    [--dns ADDR:PORT]... [--upstream-dns ADDR[:PORT]] [--policy FILE] [--log FILE]
       ss-net fence apply --sandbox NAME --interface IF --gateway ADDR --proxy-port PORT
                    --transparent-port PORT --dns-port PORT [--dhcp]
       ss-net fence remove|check --sandbox NAME
       ss-net relay --sandbox NAME --to proxy|dns

A sandbox's network: everything it sends outside goes through ss-net's proxy and resolver on
the host, which let through only what the sandbox's policy allows, and log every connection and
lookup. Policy changes count for the next connection, without a restart.

Rules: example.com (that name), *.example.com (every name below it), example.com:443 (one
port), 10.0.0.0/8 or 10.1.2.3[:PORT] (addresses), [2001:db8::]/32 (IPv6). Deny rules win over
allow rules. An allowed name never leads to an address on the host or its networks unless a rule
names that address.

Commands:
  allow RULE...         let the sandbox reach RULE (and drop the same rule from the deny list)
  deny RULE...          refuse RULE even where an allow rule or mode open would let it through
                        (and drop the same rule from the allow list)
  mode MODE             allowlist (only what the rules allow), open (everything but the deny
                        rules and the host's networks), none (nothing)
  ls                    the policy: its mode and rules
  log                   the log, one line per connection or lookup (-f: follow it)
  ca                    the certificate of the install's CA (PEM), made on first use: what a
                        sandbox trusts for hosts a secret is injected for (see ss-net(1))
  serve                 run the proxy and resolver (the backends start it; see ss-net(1))
  fence apply|remove|check
                        install, remove or look for (exit 1: none) the host's firewall rules
                        around a sandbox's link that send its traffic to ss-net and refuse the
                        rest (see ss-net(1))
  relay                 join standard input and output to the sandbox's running ss-net, on
                        loopback (QEMU runs one per connection of the guest; see ss-net(1))

Options:
  --sandbox NAME        the sandbox (default: SS_SANDBOX, CLAUDE_SANDBOX, super-sandbox)
  --json                ls: one JSON document; log: the JSON lines as they are
  -f, --follow          log: keep printing new lines
  -h, --help            show this help

serve:
  --proxy ADDR:PORT     answer proxy requests there (repeatable; port 0: any free one)
  --transparent ADDR:PORT
                        take connections the firewall redirected there (repeatable)
  --dns ADDR:PORT       answer lookups there, over UDP and TCP (repeatable)
  --upstream-dns ADDR[:PORT]
                        the resolver asked for allowed names (default: /etc/resolv.conf's)
  --policy FILE         the policy file (default: the sandbox's)
  --log FILE            the log file (default: the sandbox's)

fence:
  --interface IF        the host side of the sandbox's link
  --gateway ADDR        the host's IPv4 address on it, where ss-net listens
  --proxy-port PORT, --transparent-port PORT, --dns-port PORT
                        ss-net's ports there
  --dhcp                let the sandbox's DHCP requests reach the host

relay:
  --to proxy|dns        the proxy, or the resolver (DNS over TCP)
)";

NetLine ParseNetLine(const std::vector<std::string>& args) {
  NetLine o;
  auto usage = [](std::string why) { return UsageError(std::move(why), "ss net"); };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw usage(Cat(a, " needs a value"));
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--sandbox") {
      o.sandbox = value();
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "-f" || a == "--follow") {
      o.follow = true;
    } else if (a == "--proxy") {
      o.proxy.push_back(value());
    } else if (a == "--transparent") {
      o.transparent.push_back(value());
    } else if (a == "--dns") {
      o.dns.push_back(value());
    } else if (a == "--upstream-dns") {
      o.upstream_dns = value();
    } else if (a == "--policy") {
      o.policy = value();
    } else if (a == "--log") {
      o.log = value();
    } else if (a == "--interface") {
      o.fence.interface = value();
    } else if (a == "--gateway") {
      o.fence.gateway = value();
    } else if (a == "--proxy-port" || a == "--transparent-port" || a == "--dns-port") {
      std::string text = value();
      auto port = ParseDecimal(text);
      if (!port || *port < 1 || *port > 65535) throw usage(Cat(a, ": not a port: ", Quoted(text)));
      (a == "--proxy-port" ? o.fence.proxy_port
       : a == "--dns-port" ? o.fence.dns_port
                           : o.fence.transparent_port) = static_cast<int>(*port);
    } else if (a == "--dhcp") {
      o.fence.dhcp = true;
    } else if (a == "--to") {
      o.to = value();
    } else if (a.size() > 1 && a[0] == '-') {
      throw usage(Cat("unknown option ", Quoted(a)));
    } else if (o.verb.empty()) {
      o.verb = a;
    } else {
      o.words.push_back(a);
    }
  }
  if (o.help) return o;
  static const std::vector<std::string> kVerbs = {"allow", "deny",  "mode", "ls",   "log",
                                                  "serve", "fence", "ca",   "relay"};
  if (o.verb.empty()) throw usage("a command is needed: allow, deny, mode, ls, log or serve");
  bool fencing = o.verb == "fence";
  bool fence_flags = !o.fence.interface.empty() || !o.fence.gateway.empty() || o.fence.proxy_port ||
                     o.fence.transparent_port || o.fence.dns_port || o.fence.dhcp;
  if (fencing) {
    if (o.words.size() != 1 ||
        (o.words[0] != "apply" && o.words[0] != "remove" && o.words[0] != "check")) {
      throw usage("fence needs apply, remove or check");
    }
    if (o.sandbox.empty()) throw usage("fence needs --sandbox NAME");
    if (o.words[0] == "apply" &&
        (o.fence.interface.empty() || o.fence.gateway.empty() || !o.fence.proxy_port ||
         !o.fence.transparent_port || !o.fence.dns_port)) {
      throw usage(
          "fence apply needs --interface, --gateway, --proxy-port, --transparent-port "
          "and --dns-port");
    }
    if (o.words[0] != "apply" && fence_flags) {
      throw usage(Cat("fence ", o.words[0], " takes --sandbox only"));
    }
  } else if (fence_flags) {
    throw usage(
        "--interface, --gateway, --proxy-port, --transparent-port, --dns-port and --dhcp "
        "are for fence apply");
  }
  if (std::find(kVerbs.begin(), kVerbs.end(), o.verb) == kVerbs.end()) {
    throw usage(Cat("unknown command ", Quoted(o.verb)));
  }
  bool serving = o.verb == "serve";
  if (!serving && (!o.proxy.empty() || !o.transparent.empty() || !o.dns.empty() ||
                   !o.upstream_dns.empty() || !o.policy.empty() || !o.log.empty())) {
    throw usage("--proxy, --transparent, --dns, --upstream-dns, --policy and --log are for serve");
  }
  if (o.json && o.verb != "ls" && o.verb != "log") throw usage("--json is for ls and log");
  if (o.follow && o.verb != "log") throw usage("--follow is for log");
  if ((o.verb == "allow" || o.verb == "deny") && o.words.empty()) {
    throw usage(Cat(o.verb, " needs at least one rule"));
  }
  if (o.verb == "mode" && o.words.size() != 1)
    throw usage("mode needs one of allowlist, open, none");
  if (o.verb == "ca" && (!o.sandbox.empty() || o.json || o.follow)) {
    throw usage("ca takes no options");
  }
  if (!fencing && (o.verb == "ls" || o.verb == "log" || o.verb == "ca" || serving) &&
      !o.words.empty()) {
    throw usage(Cat("unexpected argument ", Quoted(o.words[0])));
  }
  if (serving && o.sandbox.empty()) throw usage("serve needs --sandbox NAME");
  if (o.verb == "relay") {
    if (o.sandbox.empty()) throw usage("relay needs --sandbox NAME");
    if (o.to != "proxy" && o.to != "dns") throw usage("relay needs --to proxy or --to dns");
    if (!o.words.empty()) throw usage(Cat("unexpected argument ", Quoted(o.words[0])));
  } else if (!o.to.empty()) {
    throw usage("--to is for relay");
  }
  if (serving && o.proxy.empty() && o.transparent.empty() && o.dns.empty()) {
    throw usage("serve needs at least one of --proxy, --transparent, --dns");
  }
  return o;
}

}  // namespace ss
