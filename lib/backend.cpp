#include "backend.hpp"

#include <map>

#include "backend_lxd.hpp"
#include "config.hpp"
#include "error.hpp"
#include "strings.hpp"

namespace ss {

std::string StateName(SandboxState state) {
  switch (state) {
    case SandboxState::kNotExists:
      return "not-exists";
    case SandboxState::kStopped:
      return "stopped";
    case SandboxState::kStarting:
      return "starting";
    case SandboxState::kRunning:
      return "running";
    case SandboxState::kBroken:
      return "broken";
  }
  return "unknown";
}

std::vector<std::string> BackendNames() { return {"lxd"}; }

namespace {
std::map<std::string, std::function<std::unique_ptr<Backend>(const Config&)>>& Registry() {
  static std::map<std::string, std::function<std::unique_ptr<Backend>(const Config&)>> r;
  return r;
}
}  // namespace

void RegisterBackend(const std::string& kind,
                     std::function<std::unique_ptr<Backend>(const Config&)> factory) {
  Registry()[kind] = std::move(factory);
}

std::unique_ptr<Backend> MakeBackend(const std::string& kind, const Config& config) {
  if (auto it = Registry().find(kind); it != Registry().end()) return it->second(config);
  if (kind == "lxd") return std::make_unique<LxdBackend>(config.String("lxd.remote"));
  std::vector<std::string> names = BackendNames();
  throw Error(kExitUsage, Cat("unknown or unavailable backend '", kind, "'"), {},
              {Cat("use one of: ", Join(names, ", "))});
}

std::string ChooseBackend(const Config& config, std::string* reason) {
  std::vector<std::string> details;
  for (const auto& name : BackendNames()) {
    Probe probe = MakeBackend(name, config)->CheckHost();
    if (probe.usable) {
      if (reason) *reason = Cat(name, ": ", probe.reason);
      return name;
    }
    details.push_back(
        Cat("  ", name, ": ", probe.reason, probe.fix.empty() ? "" : Cat(" (", probe.fix, ")")));
  }
  throw Error(kExitUnavailable, "no sandbox backend can run on this machine", details,
              {"set one up: ss vm setup"});
}

}  // namespace ss
