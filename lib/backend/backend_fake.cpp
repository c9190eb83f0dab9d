#include "backend_fake.hpp"

#include <algorithm>

#include "error.hpp"
#include "strings.hpp"

namespace ss {

FakeBackend::Machine& FakeBackend::Get(const std::string& name) {
  auto it = machines.find(name);
  if (it == machines.end()) throw Error(kExitNoInput, Cat("no machine '", name, "'"));
  return it->second;
}

SandboxState FakeBackend::State(const std::string& name) {
  auto it = machines.find(name);
  return it == machines.end() ? SandboxState::kNotExists : it->second.state;
}

void FakeBackend::Create(const SandboxSpec& spec, Progress&) {
  if (machines.count(spec.name))
    throw Error(kExitCantCreate, Cat("machine '", spec.name, "' exists"));
  Machine m;
  m.spec = spec;
  m.resources = spec.resources;
  m.state = SandboxState::kRunning;
  m.starts = 1;
  machines[spec.name] = m;
}

void FakeBackend::Start(const std::string& name, const Resources& resources) {
  Machine& m = Get(name);
  m.resources = resources;
  m.state = SandboxState::kRunning;
  ++m.starts;
}

void FakeBackend::Stop(const std::string& name, std::chrono::seconds) {
  Get(name).state = SandboxState::kStopped;
}

void FakeBackend::Delete(const std::string& name) { machines.erase(name); }

SandboxStatus FakeBackend::Status(const std::string& name) {
  SandboxStatus s;
  s.state = State(name);
  if (s.state != SandboxState::kNotExists) s.limits = Get(name).resources;
  return s;
}

SshTarget FakeBackend::Ssh(const std::string& name) {
  Get(name);
  return target;
}

void FakeBackend::TakeSnapshot(const std::string& name, const std::string& snapshot) {
  Machine& m = Get(name);
  if (m.saved.count(snapshot))
    throw Error(kExitCantCreate, Cat("snapshot '", snapshot, "' exists"));
  m.snapshots.push_back({snapshot, std::chrono::system_clock::now()});
  m.saved[snapshot] = m.files;
}

// Like LXD: the disk comes back, the machine stays in the state it was in.
void FakeBackend::RestoreSnapshot(const std::string& name, const std::string& snapshot) {
  Machine& m = Get(name);
  auto it = m.saved.find(snapshot);
  if (it == m.saved.end()) throw Error(kExitNoInput, Cat("no snapshot '", snapshot, "'"));
  m.files = it->second;
}

void FakeBackend::DeleteSnapshot(const std::string& name, const std::string& snapshot) {
  Machine& m = Get(name);
  if (!m.saved.erase(snapshot)) throw Error(kExitNoInput, Cat("no snapshot '", snapshot, "'"));
  m.snapshots.erase(std::remove_if(m.snapshots.begin(), m.snapshots.end(),
                                   [&](const Snapshot& s) { return s.name == snapshot; }),
                    m.snapshots.end());
}

std::vector<Snapshot> FakeBackend::Snapshots(const std::string& name) {
  return Get(name).snapshots;
}

}  // namespace ss
