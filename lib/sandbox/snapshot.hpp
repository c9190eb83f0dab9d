// Snapshots of a sandbox: save points before risky work, restored with one command.
//
// Names: ^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$ (every backend accepts them as a snapshot name, an
// image tag or a file name). Without a name, the time in UTC: "snap-20260211-143005".
// "clean-baseline" is taken right after a sandbox's first provisioning.
//
// A snapshot holds the sandbox's own disk only: the projects folder shared from the host is never
// in one and a restore never touches it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend.hpp"
#include "timefmt.hpp"

namespace ss {

class Sandbox;
class Progress;
class SshConnection;

inline constexpr const char* kBaselineSnapshot = "clean-baseline";

// nullopt for a valid snapshot name, else what is wrong with it.
std::optional<std::string> SnapshotNameProblem(const std::string& name);
// Throws ss::Error(65) "invalid snapshot name 'x': ..." for an invalid name.
void ValidateSnapshotName(const std::string& name);
// "snap-YYYYMMDD-HHMMSS" (UTC) for `t`, with "-2", "-3" ... when `taken` already has it.
std::string DefaultSnapshotName(SystemTime t, const std::vector<Snapshot>& taken);

// The sandbox's snapshots, oldest first. Throws ss::Error(66) when the sandbox does not exist.
std::vector<Snapshot> ListSnapshots(Sandbox& sandbox);
// Takes `name` (validated; ss::Error(73) when it exists). Returns the snapshot taken.
Snapshot TakeSnapshot(Sandbox& sandbox, const std::string& name);
// Stops the sandbox when it runs, restores `name`, starts it and waits until SSH answers and
// provisioning is done. ss::Error(66) when there is no such snapshot.
std::unique_ptr<SshConnection> RestoreSnapshot(Sandbox& sandbox, const std::string& name,
                                               Progress& progress, std::chrono::seconds timeout);
// ss::Error(66) when there is no such snapshot.
void DeleteSnapshot(Sandbox& sandbox, const std::string& name);

}  // namespace ss
