#include "net_line.hpp"

#include "error.hpp"
#include "strings.hpp"
#include "tool.hpp"

namespace ss {

const CommandTable& NetCommands() {
  static const std::vector<std::string> policy = {
      "allow", "deny",  "mode",        "ls",           "log",
      "serve", "relay", "fence apply", "fence remove", "fence check"};
  static const CommandTable table({
      .prefix = "ss net ",
      .help_command = "ss net",
      .usage =
          "usage: ss-net allow RULE... [--sandbox NAME]\n"
          "       ss-net deny RULE... [--sandbox NAME]\n"
          "       ss-net mode allowlist|open|none [--sandbox NAME]\n"
          "       ss-net ls [--json] [--sandbox NAME]\n"
          "       ss-net log [-f] [--json] [--sandbox NAME]\n"
          "       ss-net ca\n"
          "       ss-net serve --sandbox NAME [--proxy ADDR:PORT]... [--transparent "
          "ADDR:PORT]...\n"
          "                    [--dns ADDR:PORT]... [--upstream-dns ADDR[:PORT]] [--policy "
          "FILE] [--log FILE]\n"
          "                    [--connections N]\n"
          "       ss-net fence apply --sandbox NAME --interface IF --gateway ADDR "
          "--proxy-port PORT\n"
          "                    --transparent-port PORT --dns-port PORT [--dhcp] [--connections N]\n"
          "       ss-net fence remove|check --sandbox NAME\n"
          "       ss-net relay --sandbox NAME --to proxy|dns",
      .about = "A sandbox's network: everything it sends outside goes through ss-net's proxy and "
               "resolver on\nthe host, which let through only what the sandbox's policy allows, "
               "and log every connection and\nlookup. Policy changes count for the next "
               "connection, without a restart.\n\nRules: example.com (that name), *.example.com "
               "(every name below it), example.com:443 (one\nport), 10.0.0.0/8 or "
               "10.1.2.3[:PORT] (addresses), [2001:db8::]/32 (IPv6). Deny rules win over\nallow "
               "rules. An allowed name never leads to an address on the host or its networks "
               "unless a rule\nnames that address.",
      .commands =
          {{.name = "allow",
            .args = "RULE...",
            .min_args = 1,
            .max_args = kAnyNumber,
            .help = "let the sandbox reach RULE (and drop the same rule from the deny list)"},
           {.name = "deny",
            .args = "RULE...",
            .min_args = 1,
            .max_args = kAnyNumber,
            .help = "refuse RULE even where an allow rule or mode open would let it through (and "
                    "drop the same rule from the allow list)",
            .summary = "refuse RULE even where an allow rule would let it through"},
           {.name = "mode",
            .args = "MODE",
            .min_args = 1,
            .max_args = 1,
            .help = "allowlist (only what the rules allow), open (everything but the deny rules "
                    "and the host's networks), none (nothing)",
            .summary = "allowlist, open or none"},
           {.name = "ls", .help = "the policy: its mode and rules"},
           {.name = "log", .help = "the log, one line per connection or lookup (-f: follow it)"},
           {.name = "ca",
            .help = "the certificate of the install's CA (PEM), made on first use: what a sandbox "
                    "trusts for hosts a secret is injected for (see ss-net(1))",
            .summary = "the certificate of the install's CA"},
           {.name = "serve",
            .help = "run the proxy and resolver (the backends start it; see ss-net(1))"},
           {.name = "fence apply",
            .help = "install the host's firewall rules around a sandbox's link that send its "
                    "traffic to ss-net and refuse the rest (see ss-net(1))",
            .summary = "install the firewall rules around a sandbox's link"},
           {.name = "fence remove", .help = "remove them"},
           {.name = "fence check", .help = "look for them (exit 1: none)"},
           {.name = "relay",
            .help = "join standard input and output to the sandbox's running ss-net, on loopback "
                    "(QEMU runs one per connection of the guest; see ss-net(1))",
            .summary = "join standard input and output to the sandbox's ss-net"}},
      .options = {{.name = "sandbox",
                   .kind = OptionSpec::kText,
                   .value = "NAME",
                   .help = "the sandbox (default: SS_SANDBOX, CLAUDE_SANDBOX, super-sandbox)",
                   .commands = policy},
                  {.name = "json",
                   .help = "ls: one JSON document; log: the JSON lines as they are",
                   .commands = {"ls", "log"}},
                  {.name = "follow",
                   .letter = 'f',
                   .help = "log: keep printing new lines",
                   .commands = {"log"}},
                  {.name = "proxy",
                   .kind = OptionSpec::kTexts,
                   .value = "ADDR:PORT",
                   .help = "answer proxy requests there (repeatable; port 0: any free one)",
                   .commands = {"serve"},
                   .section = "serve"},
                  {.name = "transparent",
                   .kind = OptionSpec::kTexts,
                   .value = "ADDR:PORT",
                   .help = "take connections the firewall redirected there (repeatable)",
                   .commands = {"serve"},
                   .section = "serve"},
                  {.name = "dns",
                   .kind = OptionSpec::kTexts,
                   .value = "ADDR:PORT",
                   .help = "answer lookups there, over UDP and TCP (repeatable)",
                   .commands = {"serve"},
                   .section = "serve"},
                  {.name = "upstream-dns",
                   .kind = OptionSpec::kText,
                   .value = "ADDR[:PORT]",
                   .help = "the resolver asked for allowed names (default: /etc/resolv.conf's)",
                   .commands = {"serve"},
                   .section = "serve"},
                  {.name = "policy",
                   .kind = OptionSpec::kText,
                   .value = "FILE",
                   .help = "the policy file (default: the sandbox's)",
                   .commands = {"serve"},
                   .section = "serve"},
                  {.name = "log",
                   .kind = OptionSpec::kText,
                   .value = "FILE",
                   .help = "the log file (default: the sandbox's)",
                   .commands = {"serve"},
                   .section = "serve"},
                  {.name = "interface",
                   .kind = OptionSpec::kText,
                   .value = "IF",
                   .help = "the host side of the sandbox's link",
                   .commands = {"fence apply"},
                   .section = "fence apply"},
                  {.name = "gateway",
                   .kind = OptionSpec::kText,
                   .value = "ADDR",
                   .help = "the host's IPv4 address on it, where ss-net listens",
                   .commands = {"fence apply"},
                   .section = "fence apply"},
                  {.name = "proxy-port",
                   .kind = OptionSpec::kText,
                   .value = "PORT",
                   .help = "ss-net's proxy port there",
                   .commands = {"fence apply"},
                   .section = "fence apply"},
                  {.name = "transparent-port",
                   .kind = OptionSpec::kText,
                   .value = "PORT",
                   .help = "ss-net's port for redirected connections there",
                   .commands = {"fence apply"},
                   .section = "fence apply"},
                  {.name = "dns-port",
                   .kind = OptionSpec::kText,
                   .value = "PORT",
                   .help = "ss-net's resolver port there",
                   .commands = {"fence apply"},
                   .section = "fence apply"},
                  {.name = "dhcp",
                   .help = "let the sandbox's DHCP requests reach the host",
                   .commands = {"fence apply"},
                   .section = "fence apply"},
                  {.name = "connections",
                   .kind = OptionSpec::kText,
                   .value = "N",
                   .help = "serve: the connections it holds for the sandbox at once; fence apply: "
                           "the sandbox's share of the host's connection tracking",
                   .commands = {"serve", "fence apply"}},
                  {.name = "to",
                   .kind = OptionSpec::kText,
                   .value = "proxy|dns",
                   .help = "the proxy, or the resolver (DNS over TCP)",
                   .commands = {"relay"},
                   .section = "relay"}},
  });
  return table;
}

NetLine ParseNetLine(const std::vector<std::string>& args) {
  ParsedLine line = NetCommands().Parse(args);
  NetLine o;
  o.help = line.help;
  if (o.help) return o;
  auto usage = [&](std::string why) {
    return UsageError(std::move(why),
                      line.command ? NetCommands().Spelled(*line.command) : "ss net");
  };
  if (!line.command) throw usage("a command is needed: allow, deny, mode, ls, log or serve");
  const std::string& name = line.command->name;
  o.verb = name.substr(0, name.find(' '));
  o.words = line.args;
  if (o.verb == "fence") o.words.insert(o.words.begin(), name.substr(6));
  o.sandbox = line.Text("sandbox");
  o.json = line.Flag("json");
  o.follow = line.Flag("follow");
  o.proxy = line.Texts("proxy");
  o.transparent = line.Texts("transparent");
  o.dns = line.Texts("dns");
  o.upstream_dns = line.Text("upstream-dns");
  o.policy = line.Text("policy");
  o.log = line.Text("log");
  o.to = line.Text("to");
  o.fence.interface = line.Text("interface");
  o.fence.gateway = line.Text("gateway");
  o.fence.dhcp = line.Flag("dhcp");
  for (const char* flag : {"proxy-port", "transparent-port", "dns-port"}) {
    if (!line.Given(flag)) continue;
    std::string text = line.Text(flag);
    auto port = ParseDecimal(text);
    if (!port || *port < 1 || *port > 65535) {
      throw usage(Cat("--", flag, ": not a port: ", Quoted(text)));
    }
    (std::string(flag) == "proxy-port" ? o.fence.proxy_port
     : std::string(flag) == "dns-port" ? o.fence.dns_port
                                       : o.fence.transparent_port) = static_cast<int>(*port);
  }
  if (line.Given("connections")) {
    std::string text = line.Text("connections");
    auto n = ParseDecimal(text);
    if (!n || *n < 1 || *n > 1048576) {
      throw usage(Cat("--connections: not a number from 1 to 1048576: ", Quoted(text)));
    }
    o.connections = o.fence.connections = static_cast<int>(*n);
  }
  bool needs_sandbox = o.verb == "fence" || o.verb == "serve" || o.verb == "relay";
  if (needs_sandbox && o.sandbox.empty()) throw usage(Cat(o.verb, " needs --sandbox NAME"));
  if (name == "fence apply" &&
      (o.fence.interface.empty() || o.fence.gateway.empty() || !o.fence.proxy_port ||
       !o.fence.transparent_port || !o.fence.dns_port)) {
    throw usage(
        "fence apply needs --interface, --gateway, --proxy-port, --transparent-port and "
        "--dns-port");
  }
  if (o.verb == "relay" && o.to != "proxy" && o.to != "dns") {
    throw usage("relay needs --to proxy or --to dns");
  }
  if (o.verb == "serve" && o.proxy.empty() && o.transparent.empty() && o.dns.empty()) {
    throw usage("serve needs at least one of --proxy, --transparent, --dns");
  }
  return o;
}

}  // namespace ss
