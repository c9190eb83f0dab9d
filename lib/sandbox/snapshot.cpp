#include "snapshot.hpp"

#include <algorithm>
#include <ctime>

#include "error.hpp"
#include "output.hpp"
#include "sandbox.hpp"
#include "strings.hpp"

namespace ss {
namespace {

bool Has(const std::vector<Snapshot>& snapshots, const std::string& name) {
  return std::any_of(snapshots.begin(), snapshots.end(),
                     [&](const Snapshot& s) { return s.name == name; });
}

std::vector<Snapshot> RequireSnapshot(Sandbox& sandbox, const std::string& name) {
  ValidateSnapshotName(name);
  std::vector<Snapshot> snapshots = ListSnapshots(sandbox);
  if (!Has(snapshots, name)) {
    std::vector<std::string> names;
    for (const auto& s : snapshots) names.push_back(s.name);
    throw Error(kExitNoInput, Cat("sandbox '", sandbox.name(), "' has no snapshot '", name, "'"),
                {},
                {names.empty() ? Cat("take one: ss snapshot ", name)
                               : Cat("snapshots: ", Join(names, ", "))});
  }
  return snapshots;
}

}  // namespace

std::optional<std::string> SnapshotNameProblem(const std::string& name) {
  if (name.empty()) return "it is empty";
  if (name.size() > 63) return "it is longer than 63 characters";
  if (!NameOf(name, "A-Za-z0-9", "A-Za-z0-9._-", 63)) {
    return "use letters, digits, '.', '_' and '-', starting with a letter or digit";
  }
  return std::nullopt;
}

void ValidateSnapshotName(const std::string& name) {
  if (auto problem = SnapshotNameProblem(name)) {
    throw Error(kExitDataErr, Cat("invalid snapshot name '", name, "': ", *problem));
  }
}

std::string DefaultSnapshotName(SystemTime t, const std::vector<Snapshot>& taken) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "snap-%Y%m%d-%H%M%S", &tm);
  std::string name = buf;
  for (int n = 2; Has(taken, name); ++n) name = Cat(buf, "-", n);
  return name;
}

std::vector<Snapshot> ListSnapshots(Sandbox& sandbox) {
  if (sandbox.State() == SandboxState::kNotExists) {
    throw Error(kExitNoInput, Cat("sandbox '", sandbox.name(), "' does not exist"), {},
                {"create it: ss start"});
  }
  return sandbox.backend().Snapshots(sandbox.name());
}

Snapshot TakeSnapshot(Sandbox& sandbox, const std::string& name) {
  ValidateSnapshotName(name);
  std::vector<Snapshot> snapshots = ListSnapshots(sandbox);
  if (Has(snapshots, name)) {
    throw Error(kExitCantCreate,
                Cat("sandbox '", sandbox.name(), "' already has a snapshot '", name, "'"), {},
                {Cat("pick another name, or delete it first: ss snapshot delete ", name)});
  }
  sandbox.TakeSnapshot(name);
  for (const auto& s : sandbox.backend().Snapshots(sandbox.name())) {
    if (s.name == name) return s;
  }
  return Snapshot{name, std::chrono::system_clock::now()};
}

std::unique_ptr<SshConnection> RestoreSnapshot(Sandbox& sandbox, const std::string& name,
                                               Progress& progress, std::chrono::seconds timeout) {
  RequireSnapshot(sandbox, name);
  if (sandbox.State() != SandboxState::kStopped) {
    progress.Step("stopping the sandbox");
    sandbox.Stop(std::chrono::seconds(15));
  }
  progress.Step(Cat("restoring snapshot '", name, "'"));
  sandbox.backend().RestoreSnapshot(sandbox.name(), name);
  progress.Step("starting the sandbox");
  return sandbox.EnsureRunning(progress, timeout);
}

void DeleteSnapshot(Sandbox& sandbox, const std::string& name) {
  RequireSnapshot(sandbox, name);
  sandbox.backend().DeleteSnapshot(sandbox.name(), name);
}

}  // namespace ss
