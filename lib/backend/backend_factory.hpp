// Which backend a sandbox gets: the engines this build knows, each made from config.yaml, and
// what `auto` picks among them. The one place that knows every concrete backend.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend.hpp"

namespace ss {

class Config;

// The backend called `kind` ("lxd", "docker", ...). Throws ss::Error(64) for an unknown kind.
std::unique_ptr<Backend> MakeBackend(const std::string& kind, const Config& config);
// Makes `kind` known to MakeBackend, or replaces it (tests register the in-memory fake this way).
using BackendFactory = std::function<std::unique_ptr<Backend>(const Config&)>;
void RegisterBackend(const std::string& kind, BackendFactory factory);
// The backends this build knows: qemu, lxd, docker, podman, lima, and lume on macOS (elsewhere
// only with SS_LUME_URL, a server that stands in for Lume).
std::vector<std::string> BackendNames();
// Those `auto` chooses from, in preference order: qemu, lxd, docker, podman (on macOS: lume,
// lima, docker).
std::vector<std::string> AutoBackendNames();

// What `auto` decides: the strongest isolation that works here. QEMU with hardware acceleration,
// then LXD (its daemon answering), Docker, Podman, and QEMU without acceleration last.
struct BackendChoice {
  std::string name;
  std::string reason;                                 // why this one, in words
  std::vector<std::pair<std::string, Probe>> probes;  // every backend's probe, in order
};
// `probe` answers for one backend (tests pass their own). Throws ss::Error(69) listing why each
// one cannot run when none can.
BackendChoice ChooseBackend(const std::vector<std::string>& names,
                            const std::function<Probe(const std::string&)>& probe);
BackendChoice ChooseBackend(const Config& config);

}  // namespace ss
