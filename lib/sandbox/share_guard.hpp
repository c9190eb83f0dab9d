// The guard of a sandbox's shared folders (folder_guard.hpp), kept running on the host while
// the sandbox runs: `ss-project guard`, one process per sandbox, started with the sandbox and
// again whenever ss finds it gone (as its ss-net is, egress.hpp), stopped with the sandbox.
#pragma once

#include <time.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ss {

// Starts the guard of `sandbox` for `projects` (the projects folder, or empty) and `folders` (the
// other folders it shares read-write) unless it runs, and waits until it watches them all. Where
// the system cannot watch folders, says so once: the folders are then looked at only before and
// after each session.
// The repositories a guard finds there when it starts with the sandbox (`starting`: the sandbox
// has not run since its guard was stopped) are the user's, and recorded (ShareGuardKnown); one
// started again while the sandbox ran takes only those for the user's, unchanged.
void EnsureShareGuard(const std::string& sandbox, const std::string& projects,
                      const std::vector<std::string>& folders, bool starting);
// What the guard of `sandbox` that started with it knew (FolderGuard::Known), once it recorded
// it, and the record made.
std::optional<std::set<std::string>> ShareGuardKnown(const std::string& sandbox);
void ShareGuardRecordKnown(const std::string& sandbox, const std::set<std::string>& known);
// Whether it runs (a check of a pid, cheap enough for every command).
bool ShareGuardRunning(const std::string& sandbox);
void StopShareGuard(const std::string& sandbox);
// Its log: a line for each thing it set aside. Its path, its size now, and what was written after
// `from`.
std::string ShareGuardLogPath(const std::string& sandbox);
size_t ShareGuardLogSize(const std::string& sandbox);
std::vector<std::string> ShareGuardSaid(const std::string& sandbox, size_t from);
// Whether a line of it says what the guard could not do (set aside, put back, watch): where git
// must not run.
bool ShareGuardCouldNot(const std::string& line);
// How much of it a session's end has shown (0: none yet), and the mark moved on.
size_t ShareGuardShown(const std::string& sandbox);
void ShareGuardMarkShown(const std::string& sandbox, size_t upto);
// Up to when a session's end in host folder `folder` last named the files changed there that the
// host runs or obeys (nothing before the first): the next names what changed since, between
// sessions too (`ss exec`, a process left running, another session). And the mark moved on.
std::optional<struct timespec> ShareNamedUntil(const std::string& sandbox,
                                               const std::string& folder);
void ShareMarkNamed(const std::string& sandbox, const std::string& folder,
                    const struct timespec& until);

}  // namespace ss
