// The sandbox's side of a working copy's base (base_record.hpp has the host's record).
//
// A copy of the base stays in the sandbox (~/.ss/bases/PROJECT), for what the sandbox compares
// locally (which files the agent changed) and for merges; a file taken from it is used only when
// its digest matches the record. A token shared by the record and the sandbox
// (~/.ss/sync/PROJECT.base) tells when the sandbox no longer has the copy the record describes
// (a snapshot restored, a sandbox reset): the record is then not used.
#pragma once

#include <time.h>

#include <string>
#include <vector>

#include "base_record.hpp"

namespace ss {

class SshConnection;

// In the sandbox: the copy of the base, and the token naming the record it goes with.
std::string BaseDir(const std::string& project);    // /home/sandbox/.ss/bases/NAME
std::string BaseToken(const std::string& project);  // /home/sandbox/.ss/sync/NAME.base

// After the copy was made from its source: brings the sandbox's copy of the base up to date
// (rsync from the source), records the base on the host for the paths it holds and writes the
// token in the sandbox. `since` is when the copy started being made. Throws ss::Error(70+) when
// the sandbox cannot.
void RecordBase(SshConnection& conn, const std::string& sandbox, const std::string& project,
                const std::string& host_dir, const struct timespec& since);

// The record to apply against: the saved one when the sandbox still holds its token, else one
// that is not recorded() (every difference a conflict).
BaseRecord CurrentBase(SshConnection& conn, const std::string& sandbox, const std::string& project);

// Makes the sandbox's copy of the base hold `from`'s version of `paths` (those `from` no longer
// has are removed from it): the copy's after apply brought them to the host or the user chose
// between the two, the source's after a sync. False when the sandbox could not (its disk full,
// say).
bool AdvanceSandboxBase(SshConnection& conn, const std::string& project,
                        const std::vector<std::string>& paths, const std::string& from);

}  // namespace ss
