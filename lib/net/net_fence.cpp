#include "net_fence.hpp"

#include <unistd.h>

#include <algorithm>

#include "digest.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "net_policy.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "sandbox_name.hpp"
#include "strings.hpp"

namespace ss {
namespace {

constexpr const char* kTable = "inet ss";

std::string Chain(const std::string& sandbox, std::string_view hook) {
  return Cat("sandbox-", sandbox, "-", hook);
}

void CheckPort(int port, std::string_view what) {
  if (port < 1 || port > 65535) {
    throw Error(kExitDataErr, Cat("the fence needs ss-net's ", what, " port, not ", port));
  }
}

}  // namespace

std::string SandboxBridgeName(const std::string& sandbox) {
  return Cat("ssn-", Sha256Hex(sandbox).substr(0, 10));
}

int ConntrackShare(int wanted) {
  if (wanted <= 0) return wanted;
  auto text = ReadFileIfExists("/proc/sys/net/netfilter/nf_conntrack_max");
  auto max = text ? ParseDecimal(Trim(*text)) : std::nullopt;
  if (!max || *max <= 0) return wanted;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(wanted, *max / 4)));
}

std::string NetFenceScript(const NetFence& f) {
  ValidateSandboxName(f.sandbox);
  if (f.interface.empty() || f.interface.size() > 15 ||
      !OnlyChars(f.interface,
                 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")) {
    throw Error(kExitDataErr, Cat("not a network interface name: ", Quoted(f.interface)));
  }
  auto gateway = ParseIpAddress(f.gateway);
  if (!gateway || gateway->family != 4) {
    throw Error(kExitDataErr, Cat("not an IPv4 address: ", Quoted(f.gateway)));
  }
  CheckPort(f.proxy_port, "proxy");
  CheckPort(f.transparent_port, "transparent proxy");
  CheckPort(f.dns_port, "resolver");
  if (f.connections < 0) {
    throw Error(kExitDataErr,
                Cat("the fence needs a connection share of 0 or more, not ", f.connections));
  }
  const std::string in = Cat("iifname \"", f.interface, "\"");
  const std::string out = Cat("oifname \"", f.interface, "\"");
  const std::string g = gateway->ToString();
  const std::string pre = Chain(f.sandbox, "pre"), input = Chain(f.sandbox, "in"),
                    forward = Chain(f.sandbox, "fwd");
  std::string s =
      Cat("table ", kTable, " {\n", "  chain ", pre,
          " { type nat hook prerouting priority dstnat - 5; policy accept; }\n", "  chain ", input,
          " { type filter hook input priority filter - 5; policy accept; }\n", "  chain ", forward,
          " { type filter hook forward priority filter - 5; policy accept; }\n", "}\n");
  for (const std::string& chain : {pre, input, forward})
    s += Cat("flush chain ", kTable, " ", chain, "\n");
  auto rule = [&](const std::string& chain, const std::string& text) {
    s += Cat("add rule ", kTable, " ", chain, " ", text, "\n");
  };
  // Where the sandbox's traffic is sent.
  rule(pre, Cat(in, " ip daddr ", g, " tcp dport ", kSandboxProxyPort, " dnat ip to ", g, ":",
                f.proxy_port));
  rule(pre, Cat(in, " meta l4proto { tcp, udp } th dport 53 dnat ip to ", g, ":", f.dns_port));
  rule(pre, Cat(in, " tcp dport { 80, 443 } dnat ip to ", g, ":", f.transparent_port));
  // What of it reaches the host: replies, and the flows sent to ss-net above; nothing else.
  rule(input, Cat(in, " ct state established,related accept"));
  // Only the flows accepted below are ever tracked (a packet refused here leaves no entry): a
  // new one over the sandbox's share is dropped before it is, counted, and logged at most once
  // a second (the kernel's log is the host's, not the sandbox's to fill).
  if (f.connections > 0) {
    const std::string over = Cat(in, " ct state new ct count over ", f.connections);
    rule(input, Cat(over, " limit rate 1/second burst 1 packets log prefix \"ss: sandbox ",
                    f.sandbox, " is over its ", f.connections, " connections: \" level warn"));
    rule(input, Cat(over, " counter drop"));
  }
  rule(input, Cat(in, " ct status dnat ip daddr ", g, " tcp dport { ", f.proxy_port, ", ",
                  f.transparent_port, ", ", f.dns_port, " } accept"));
  rule(input, Cat(in, " ct status dnat ip daddr ", g, " udp dport ", f.dns_port, " accept"));
  if (f.dhcp) rule(input, Cat(in, " udp sport 68 udp dport 67 accept"));
  rule(input, Cat(in, " meta l4proto tcp reject with tcp reset"));
  rule(input, Cat(in, " reject with icmpx admin-prohibited"));
  // Nothing is routed through the host, either way, but replies to what the host opened.
  rule(forward, Cat(out, " ct state established,related accept"));
  rule(forward, Cat(in, " meta l4proto tcp reject with tcp reset"));
  rule(forward, Cat(in, " reject with icmpx admin-prohibited"));
  rule(forward, Cat(out, " drop"));
  return s;
}

std::vector<std::string> StaleFenceChains(std::string_view ruleset, const std::string& interface,
                                          const std::string& sandbox) {
  // The sandbox a chain of ss's is for: "sandbox-NAME-HOOK".
  auto owner = [](std::string_view chain) -> std::string {
    if (!chain.starts_with("sandbox-")) return "";
    chain.remove_prefix(8);
    for (std::string_view hook : {"-pre", "-in", "-fwd"}) {
      if (chain.ends_with(hook)) return std::string(chain.substr(0, chain.size() - hook.size()));
    }
    return "";
  };
  std::vector<std::pair<std::string, std::string>> chains;  // chain, its sandbox
  std::vector<std::string> stale;                           // sandboxes
  const std::string in = Cat("iifname \"", interface, "\""),
                    out = Cat("oifname \"", interface, "\"");
  std::string current;
  for (const std::string& raw : SplitLines(std::string(ruleset))) {
    std::string_view line = Trim(raw);
    if (line.starts_with("chain ") && line.ends_with("{")) {
      std::string_view name = Trim(line.substr(6, line.size() - 7));
      current = owner(name);
      if (!current.empty()) chains.emplace_back(std::string(name), current);
      continue;
    }
    if (current.empty() || current == sandbox) continue;
    if (line.find(in) != std::string_view::npos || line.find(out) != std::string_view::npos) {
      if (std::find(stale.begin(), stale.end(), current) == stale.end()) stale.push_back(current);
    }
  }
  std::vector<std::string> result;
  for (const auto& [chain, owner_name] : chains) {
    if (std::find(stale.begin(), stale.end(), owner_name) != stale.end()) result.push_back(chain);
  }
  return result;
}

namespace {

// Not root: the same through `sudo -n ss-net fence …`, which ss vm setup allows the engine's
// group (host_setup.cpp). Its status and stderr, as nft's would be.
ProcessResult ThroughSudo(std::vector<std::string> args) {
  std::vector<std::string> argv = {"sudo", "-n", Cat(ExecutableDir(), "/ss-net"), "fence"};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = Run(argv);
  if (!r.ok() && r.err.find("password is required") != std::string::npos) {
    throw Error(kExitNoPerm, "fencing a sandbox's network needs root, and sudo asks for a password",
                {}, {"let your group do it: sudo ss vm setup --backend docker"});
  }
  return r;
}

bool Root() { return ::geteuid() == 0; }

// Every change to ss's table is made under this host-wide lock: the table is shared by every
// sandbox, and its removal with the last sandbox's chains must not take a chain another ss
// has just added (nft cannot delete a table only when it is empty). A holder that never lets go
// (stopped, hung) makes the next change fail with exit 75 after a minute; no sandbox starts
// unfenced meanwhile.
FileLock LockFences() {
  return FileLock("/run/ss-net-fence.lock", FileLock::kExclusive, std::chrono::minutes(1),
                  "the network fence (/run/ss-net-fence.lock)");
}

}  // namespace

void ApplyNetFence(const NetFence& fence) {
  NetFenceScript(fence);  // refuses what cannot be written, before anything runs
  if (!Root()) {
    std::vector<std::string> args = {"apply",
                                     "--sandbox",
                                     fence.sandbox,
                                     "--interface",
                                     fence.interface,
                                     "--gateway",
                                     fence.gateway,
                                     "--proxy-port",
                                     std::to_string(fence.proxy_port),
                                     "--transparent-port",
                                     std::to_string(fence.transparent_port),
                                     "--dns-port",
                                     std::to_string(fence.dns_port)};
    if (fence.dhcp) args.push_back("--dhcp");
    if (fence.connections > 0) {
      args.insert(args.end(), {"--connections", std::to_string(fence.connections)});
    }
    ProcessResult r = ThroughSudo(args);
    if (!r.ok()) {
      throw Error(kExitUnavailable,
                  Cat("cannot fence the network of sandbox ", Quoted(fence.sandbox)),
                  SplitLines(Trim(r.err)));
    }
    return;
  }
  std::string script = NetFenceScript(fence);
  FileLock lock = LockFences();
  if (ProcessResult table = Run({"nft", "list", "table", "inet", "ss"}); table.ok()) {
    std::string removal;
    for (const std::string& chain : StaleFenceChains(table.out, fence.interface, fence.sandbox)) {
      Warn(Cat("removed the stale network fence chain ", chain, " on ", fence.interface,
               " (left by a sandbox that is gone)"));
      removal += Cat("delete chain ", kTable, " ", chain, "\n");
    }
    script = removal + script;
  }
  ProcessOptions o;
  o.input = script;
  ProcessResult r = Run({"nft", "-f", "-"}, o);
  if (!r.ok()) {
    throw Error(kExitUnavailable,
                Cat("cannot fence the network of sandbox ", Quoted(fence.sandbox)),
                SplitLines(Trim(r.err)), {"nftables must be usable by ss: run it as root"});
  }
}

bool NetFenceInstalled(const std::string& sandbox) {
  ValidateSandboxName(sandbox);
  if (!Root()) return ThroughSudo({"check", "--sandbox", sandbox}).ok();
  return Run({"nft", "list", "chain", "inet", "ss", Chain(sandbox, "in")}).ok();
}

void RemoveNetFence(const std::string& sandbox) {
  ValidateSandboxName(sandbox);
  if (!Root()) {
    ProcessResult r = ThroughSudo({"remove", "--sandbox", sandbox});
    if (!r.ok()) {
      throw Error(kExitUnavailable,
                  Cat("cannot remove the network fence of sandbox ", Quoted(sandbox)),
                  SplitLines(Trim(r.err)));
    }
    return;
  }
  FileLock lock = LockFences();
  std::string script;
  for (const char* hook : {"pre", "in", "fwd"}) {
    if (Run({"nft", "list", "chain", "inet", "ss", Chain(sandbox, hook)}).ok()) {
      script += Cat("delete chain ", kTable, " ", Chain(sandbox, hook), "\n");
    }
  }
  if (script.empty()) return;
  ProcessOptions o;
  o.input = script;
  ProcessResult r = Run({"nft", "-f", "-"}, o);
  if (!r.ok()) {
    throw Error(kExitUnavailable,
                Cat("cannot remove the network fence of sandbox ", Quoted(sandbox)),
                SplitLines(Trim(r.err)));
  }
  // With the last sandbox's chains gone, ss's table goes too.
  ProcessResult table = Run({"nft", "list", "table", "inet", "ss"});
  if (table.ok() && table.out.find("chain ") == std::string::npos) {
    Run({"nft", "delete", "table", "inet", "ss"});
  }
}

}  // namespace ss
