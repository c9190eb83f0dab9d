#include "egress.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "config.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "net_fence.hpp"
#include "net_store.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "sandbox.hpp"
#include "strings.hpp"

namespace ss {
namespace {

std::string ServeLog(const std::string& sandbox) { return SandboxNetDir(sandbox) + "/serve.log"; }
std::string ServeRecord(const std::string& sandbox) {
  return SandboxNetDir(sandbox) + "/serve.json";
}

// The pid of the sandbox's running ss-net: recorded, alive, and still ss-net for this sandbox.
int RunningPid(const std::string& sandbox) {
  auto text = ReadFileIfExists(ServeRecord(sandbox));
  if (!text) return 0;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("pid") || !j["pid"].is_number_integer()) return 0;
  int pid = j["pid"].get<int>();
  return IsSandboxDaemon(pid, {"ss-net"}, sandbox) ? pid : 0;
}

int PortOf(const nlohmann::json& ready, const char* key) {
  if (!ready.contains(key) || !ready[key].is_array() || ready[key].empty()) return 0;
  std::string where = ready[key][0].get<std::string>();
  auto port = ParseDecimal(where.substr(where.rfind(':') + 1));
  return port ? static_cast<int>(*port) : 0;
}

nlohmann::json ReadRecord(const std::string& sandbox) {
  auto text = ReadFileIfExists(ServeRecord(sandbox));
  if (!text) return nlohmann::json();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  return j.is_object() ? j : nlohmann::json();
}

// The sandbox's network.connections (config.yaml).
int SandboxConnections(const std::string& sandbox) {
  Json v = Config::Load().SandboxValue(sandbox, "network.connections");
  return v.is_number_integer() ? static_cast<int>(v.get<int64_t>()) : 0;
}

// Whether the record is of an ss-net on loopback for a link the backend fences itself (records
// without "interface" were written for nftables fences).
bool OnLoopback(const nlohmann::json& record) {
  return record.is_object() && record.contains("interface") && record["interface"] == "";
}

// Starts `ss-net serve` on the link's gateway (on the ports of `last`, when given) and waits for
// its first line; its ready document with "pid" added, or null when it did not come up.
nlohmann::json StartServer(const std::string& sandbox, const EgressLink& link,
                           const nlohmann::json& last, int connections) {
  // A link the backend fences itself reaches ss-net only through the backend's relays, which
  // connect to loopback; nothing is redirected to it, so it takes no transparent connections.
  bool loopback = link.interface.empty();
  auto at = [&](const char* key) {
    int port = last.is_null() ? 0 : PortOf(last, key);
    return Cat(loopback ? "127.0.0.1" : link.gateway, ":", port);
  };
  AtomicWrite(ServeLog(sandbox), "", 0600);
  std::vector<std::string> argv = {
      Cat(ExecutableDir(), "/ss-net"), "serve", "--sandbox", sandbox, "--proxy", at("proxy")};
  if (!loopback) argv.insert(argv.end(), {"--transparent", at("transparent")});
  argv.insert(argv.end(), {"--dns", at("dns")});
  // Of the sandbox's connections (its share of the host's connection tracking), ss-net serves
  // half at once: the other half stays for lookups and for connections that have closed but are
  // still tracked.
  argv.insert(argv.end(), {"--connections", std::to_string(std::max(1, connections / 2))});
  if (const char* upstream = std::getenv("SS_NET_UPSTREAM_DNS"); upstream && *upstream) {
    argv.insert(argv.end(), {"--upstream-dns", upstream});
  }
  ProcessOptions o;
  o.new_session = true;
  o.unlisted = true;
  // It runs for as long as the sandbox: of the user's variables it keeps only those an injected
  // secret is read from (config.yaml), none of the others.
  o.only_env = DaemonEnvNames();
  Json injections = Config::Load().SecretInjections(sandbox);
  for (const auto& [name, spec] : injections.items()) {
    if (spec.contains("from") && spec["from"].contains("env")) {
      o.only_env->push_back(spec["from"]["env"].get<std::string>());
    }
  }
  pid_t pid = Spawn(argv, ServeLog(sandbox), o);
  for (int i = 0; i < 100; ++i) {
    std::string log = ReadFileIfExists(ServeLog(sandbox)).value_or("");
    for (const std::string& line : SplitLines(log)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.value("kind", "") == "NetServer") {
        j["pid"] = pid;
        return j;
      }
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return nlohmann::json();  // it gave up
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGTERM);
  return nlohmann::json();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> SandboxProxyEnv(const std::string& sandbox) {
  auto text = ReadFileIfExists(ServeRecord(sandbox));
  if (!text) return {};
  auto j = nlohmann::json::parse(*text, nullptr, false);
  std::string url = j.is_object() ? j.value("sandbox_proxy", "") : "";
  if (url.empty()) return {};
  // Loopback and the private ranges are not sent to the proxy (a web server the agent runs, the
  // sandbox's own containers); the fence decides about them as about any other address.
  const std::string local =
      "localhost,127.0.0.1,::1,.local,169.254.0.0/16,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16";
  return {{"HTTP_PROXY", url},        {"HTTPS_PROXY", url}, {"http_proxy", url},
          {"https_proxy", url},       {"NO_PROXY", local},  {"no_proxy", local},
          {"NODE_USE_ENV_PROXY", "1"}};
}

bool EgressServerGone(const std::string& sandbox) {
  return PathExists(ServeRecord(sandbox)) && RunningPid(sandbox) == 0;
}

std::optional<int> EgressLoopbackPort(const std::string& sandbox, EgressService service) {
  nlohmann::json record = ReadRecord(sandbox);
  if (!OnLoopback(record) || !RunningPid(sandbox)) return std::nullopt;
  const char* key = service == EgressService::kProxy ? "proxy" : "dns";
  nlohmann::json ready = record.value("ready", nlohmann::json::object());
  if (!ready.is_object() || !ready.contains(key) || !ready[key].is_array() || ready[key].empty() ||
      !ready[key][0].is_string() || !ready[key][0].get<std::string>().starts_with("127.0.0.1:")) {
    return std::nullopt;
  }
  int port = PortOf(ready, key);
  if (port <= 0 || port > 65535) return std::nullopt;
  return port;
}

EgressState GetEgressState(const std::string& sandbox) {
  EgressState s;
  // A fence was only ever installed after the record was written: without one, nothing to ask
  // nft (or sudo) about.
  nlohmann::json record = ReadRecord(sandbox);
  if (OnLoopback(record)) {
    s.fenced = true;
    s.fence = "backend";
  } else if (!record.is_null()) {
    s.fenced = NetFenceInstalled(sandbox);
    if (s.fenced) s.fence = "nftables";
  }
  s.pid = RunningPid(sandbox);
  return s;
}

EgressState EnsureEgress(const std::string& sandbox, const EgressLink& link) {
  WriteNetPolicy(sandbox);  // config.yaml's network may have changed since
  EgressState s;
  s.proxy = Cat("http://", link.gateway, ":", kSandboxProxyPort);
  s.pid = RunningPid(sandbox);
  bool loopback = link.interface.empty();
  s.fence = loopback ? "backend" : "nftables";
  // The running ss-net is kept when it listens where this link needs it.
  if (s.pid && (loopback ? OnLoopback(ReadRecord(sandbox))
                         : !OnLoopback(ReadRecord(sandbox)) && NetFenceInstalled(sandbox))) {
    s.fenced = true;
    return s;
  }
  if (s.pid) StopEgress(sandbox);  // running, but the fence is gone: start afresh
  MakeDirs(SandboxNetDir(sandbox), 0700);
  // The ports of the last run when there was one, so that the fence and the connection tracking
  // of flows already redirected there (a resolver's UDP "connection") stay right; any free ones
  // when those are taken.
  nlohmann::json last;
  if (auto text = ReadFileIfExists(ServeRecord(sandbox))) {
    last = nlohmann::json::parse(*text, nullptr, false).value("ready", nlohmann::json());
  }
  int connections = SandboxConnections(sandbox);
  nlohmann::json ready = StartServer(sandbox, link, last, connections);
  // Any free ports when those are taken, a few times: the resolver's TCP side takes the port its
  // UDP side was given, which a TCP listener may already hold (on loopback, more likely).
  for (int i = 0; ready.is_null() && i < 3; ++i) {
    ready = StartServer(sandbox, link, nlohmann::json(), connections);
  }
  if (ready.is_null()) {
    throw Error(kExitUnavailable,
                Cat("cannot start the network proxy of sandbox ", Quoted(sandbox)),
                SplitLines(Trim(ReadFileIfExists(ServeLog(sandbox)).value_or(""))),
                {Cat("its log: ", ServeLog(sandbox))});
  }
  pid_t pid = ready["pid"].get<int>();
  ready.erase("pid");
  nlohmann::json record = {{"pid", pid}, {"ready", ready}, {"sandbox_proxy", s.proxy}};
  if (loopback) record["interface"] = "";
  AtomicWrite(ServeRecord(sandbox), record.dump() + "\n", 0600);
  s.pid = pid;
  s.fenced = true;
  if (loopback) return s;  // the backend's own fence holds the link
  NetFence fence{sandbox,
                 link.interface,
                 link.gateway,
                 PortOf(ready, "proxy"),
                 PortOf(ready, "transparent"),
                 PortOf(ready, "dns"),
                 link.dhcp,
                 ConntrackShare(connections)};
  ApplyNetFence(fence);
  return s;
}

void StopEgress(const std::string& sandbox) {
  int pid = RunningPid(sandbox);
  if (!pid) return;
  // Gone before this returns: its ports are free for the next one, and it never outlives the
  // machine it served. It lets go at once on SIGTERM; one that does not is killed.
  ::kill(pid, SIGTERM);
  // Killed only if it is still the sandbox's ss-net (its number is not another's by now).
  if (!WaitProcessGone(pid, std::chrono::seconds(5)) && RunningPid(sandbox) == pid) {
    ::kill(pid, SIGKILL);
    WaitProcessGone(pid, std::chrono::seconds(5));
  }
}

void RemoveEgress(const std::string& sandbox) {
  nlohmann::json record = ReadRecord(sandbox);
  StopEgress(sandbox);
  // Only a sandbox that had a fence installed has rules to remove (its record is written first);
  // a link the backend fenced itself never had any. Its user may have no right to touch
  // nftables at all (QEMU runs without root).
  if (!record.is_null() && !OnLoopback(record)) RemoveNetFence(sandbox);
}

}  // namespace ss
