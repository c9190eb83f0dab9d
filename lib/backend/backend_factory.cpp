#include "backend_factory.hpp"

#include <cstdlib>
#include <map>

#include "backend_docker.hpp"
#include "backend_lima.hpp"
#include "backend_lume.hpp"
#include "backend_lxd.hpp"
#include "backend_qemu.hpp"
#include "config.hpp"
#include "error.hpp"
#include "paths.hpp"
#include "strings.hpp"

namespace ss {

namespace {

// Lume drives Apple's Virtualization.framework: elsewhere only a server that stands in for one
// (SS_LUME_URL) can answer.
bool LumeAvailable() {
#ifdef __APPLE__
  return true;
#else
  return std::getenv("SS_LUME_URL") != nullptr;
#endif
}

}  // namespace

std::vector<std::string> BackendNames() {
  std::vector<std::string> names{"qemu", "lxd", "docker", "podman", "lima"};
  if (LumeAvailable()) names.push_back("lume");
  return names;
}

std::vector<std::string> AutoBackendNames() {
#ifdef __APPLE__
  // A Mac's own virtual machines first (Lume, then Lima), then Docker Desktop's.
  return {"lume", "lima", "docker"};
#else
  // Lima runs on Linux too (with QEMU), but is never chosen there: ss cannot fence its network,
  // and every backend before it can.
  return {"qemu", "lxd", "docker", "podman"};
#endif
}

namespace {

std::map<std::string, BackendFactory>& Registry() {
  static std::map<std::string, BackendFactory> r = {
      {"qemu", [](const Config&) { return std::make_unique<QemuBackend>(StateDir()); }},
      {"lxd", [](const Config& c) { return std::make_unique<LxdBackend>(c.String("lxd.remote")); }},
      {"docker", [](const Config&) { return std::make_unique<ContainerBackend>("docker"); }},
      {"podman", [](const Config&) { return std::make_unique<ContainerBackend>("podman"); }},
      {"lima", [](const Config&) { return std::make_unique<LimaBackend>(); }},
  };
  if (LumeAvailable()) {
    r.emplace("lume", [](const Config&) {
      return std::make_unique<LumeBackend>(LumeUrl(), StateDir() + "/lume");
    });
  }
  return r;
}

}  // namespace

void RegisterBackend(const std::string& kind, BackendFactory factory) {
  Registry()[kind] = std::move(factory);
}

std::unique_ptr<Backend> MakeBackend(const std::string& kind, const Config& config) {
  if (auto it = Registry().find(kind); it != Registry().end()) return it->second(config);
  std::string hint = Cat("use one of: auto, ", Join(BackendNames(), ", "));
  if (kind == "lume") throw Error(kExitUnavailable, "Lume runs on macOS only", {}, {hint});
  throw Error(kExitUsage, Cat("unknown or unavailable backend '", kind, "'"), {}, {hint});
}

BackendChoice ChooseBackend(const std::vector<std::string>& names,
                            const std::function<Probe(const std::string&)>& probe) {
  BackendChoice choice;
  std::vector<std::string> passed_over;
  for (const auto& name : names) {
    Probe p = probe(name);
    choice.probes.emplace_back(name, p);
    if (p.usable && !p.degraded) {
      choice.name = name;
      choice.reason = Cat(name, ": ", p.reason);
      if (!passed_over.empty())
        choice.reason += Cat(" (passed over: ", Join(passed_over, "; "), ")");
      return choice;
    }
    passed_over.push_back(Cat(name, ": ", p.reason));
  }
  // Nothing strong works: a backend that runs poorly is still better than none.
  for (const auto& [name, p] : choice.probes) {
    if (p.usable) {
      choice.name = name;
      std::vector<std::string> others;
      for (const auto& [other, q] : choice.probes) {
        if (other != name) others.push_back(Cat(other, ": ", q.reason));
      }
      choice.reason =
          Cat(name, ": ", p.reason, ", the only backend that runs here (", Join(others, "; "), ")");
      return choice;
    }
  }
  std::vector<std::string> details;
  for (const auto& [name, p] : choice.probes) {
    details.push_back(Cat("  ", name, ": ", p.reason, p.fix.empty() ? "" : Cat(" (", p.fix, ")")));
  }
  throw Error(kExitUnavailable, "no sandbox backend can run on this machine", details,
              {"set one up: ss vm setup --backend lxd (or qemu, docker, podman)"});
}

BackendChoice ChooseBackend(const Config& config) {
  return ChooseBackend(AutoBackendNames(), [&](const std::string& name) {
    try {
      return MakeBackend(name, config)->CheckHost();
    } catch (const Error& e) {
      Probe p;
      p.reason = e.what();
      return p;
    }
  });
}

}  // namespace ss
