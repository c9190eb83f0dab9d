#include "egress.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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
  if (pid <= 0 || ::kill(pid, 0) != 0) return 0;
  auto cmdline = ReadFileIfExists(Cat("/proc/", pid, "/cmdline"));
  if (!cmdline) return 0;
  std::vector<std::string> argv = Split(*cmdline, '\0');
  bool ours = !argv.empty() && Basename(argv[0]) == "ss-net";
  bool for_it = false;
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    for_it = for_it || (argv[i] == "--sandbox" && argv[i + 1] == sandbox);
  }
  return ours && for_it ? pid : 0;
}

int PortOf(const nlohmann::json& ready, const char* key) {
  std::string where = ready.at(key).at(0).get<std::string>();
  auto port = ParseDecimal(where.substr(where.rfind(':') + 1));
  return port ? static_cast<int>(*port) : 0;
}

// Starts `ss-net serve` on the link's gateway (on the ports of `last`, when given) and waits for
// its first line; its ready document with "pid" added, or null when it did not come up.
nlohmann::json StartServer(const std::string& sandbox, const EgressLink& link,
                           const nlohmann::json& last) {
  auto at = [&](const char* key) {
    int port = last.is_null() ? 0 : PortOf(last, key);
    return Cat(link.gateway, ":", port);
  };
  AtomicWrite(ServeLog(sandbox), "", 0600);
  std::vector<std::string> argv = {Cat(ExecutableDir(), "/ss-net"),
                                   "serve",
                                   "--sandbox",
                                   sandbox,
                                   "--proxy",
                                   at("proxy"),
                                   "--transparent",
                                   at("transparent"),
                                   "--dns",
                                   at("dns")};
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

EgressState GetEgressState(const std::string& sandbox) {
  EgressState s;
  s.fenced = NetFenceInstalled(sandbox);
  s.pid = RunningPid(sandbox);
  return s;
}

EgressState EnsureEgress(const std::string& sandbox, const EgressLink& link) {
  WriteNetPolicy(sandbox);  // config.yaml's network may have changed since
  EgressState s;
  s.proxy = Cat("http://", link.gateway, ":", kSandboxProxyPort);
  s.pid = RunningPid(sandbox);
  if (s.pid && NetFenceInstalled(sandbox)) {
    s.fenced = true;
    return s;
  }
  if (s.pid) {  // running, but the fence is gone: start afresh, once the old one let go
    ::kill(s.pid, SIGTERM);
    for (int i = 0; i < 40 && ::kill(s.pid, 0) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
  MakeDirs(SandboxNetDir(sandbox), 0700);
  // The ports of the last run when there was one, so that the fence and the connection tracking
  // of flows already redirected there (a resolver's UDP "connection") stay right; any free ones
  // when those are taken.
  nlohmann::json last;
  if (auto text = ReadFileIfExists(ServeRecord(sandbox))) {
    last = nlohmann::json::parse(*text, nullptr, false).value("ready", nlohmann::json());
  }
  nlohmann::json ready = StartServer(sandbox, link, last);
  if (ready.is_null() && !last.is_null()) ready = StartServer(sandbox, link, nlohmann::json());
  if (ready.is_null()) {
    throw Error(kExitUnavailable,
                Cat("cannot start the network proxy of sandbox ", Quoted(sandbox)),
                SplitLines(Trim(ReadFileIfExists(ServeLog(sandbox)).value_or(""))),
                {Cat("its log: ", ServeLog(sandbox))});
  }
  pid_t pid = ready["pid"].get<int>();
  ready.erase("pid");
  AtomicWrite(
      ServeRecord(sandbox),
      nlohmann::json({{"pid", pid}, {"ready", ready}, {"sandbox_proxy", s.proxy}}).dump() + "\n",
      0600);
  NetFence fence{sandbox,
                 link.interface,
                 link.gateway,
                 PortOf(ready, "proxy"),
                 PortOf(ready, "transparent"),
                 PortOf(ready, "dns"),
                 link.dhcp};
  ApplyNetFence(fence);
  s.pid = pid;
  s.fenced = true;
  return s;
}

void StopEgress(const std::string& sandbox) {
  if (int pid = RunningPid(sandbox)) ::kill(pid, SIGTERM);
}

void RemoveEgress(const std::string& sandbox) {
  StopEgress(sandbox);
  RemoveNetFence(sandbox);
}

}  // namespace ss
