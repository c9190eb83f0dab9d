#include "backend.hpp"

#include "error.hpp"
#include "json_out.hpp"
#include "strings.hpp"

namespace ss {

Json MountToJson(const Mount& m) {
  return {{"name", m.name}, {"source", m.source}, {"target", m.target}, {"read_only", m.read_only}};
}

Mount MountFromJson(const Json& j) {
  return {j.value("name", ""), j.value("source", ""), j.value("target", ""),
          j.value("read_only", false)};
}

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

void RequireSnapshot(Backend& backend, const std::string& name, const std::string& snapshot) {
  for (const auto& s : backend.Snapshots(name)) {
    if (s.name == snapshot) return;
  }
  throw Error(kExitNoInput, Cat("no snapshot '", snapshot, "' of '", name, "'"));
}

}  // namespace ss
