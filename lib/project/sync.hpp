// Keeping a working copy in step with its source, and bringing its changes back (see
// working_copy.hpp for the layout in the sandbox). Everything runs in the sandbox over one SSH
// connection with rsync, find, diff and tar; nothing is copied through the host but `apply`'s
// files.
//
// Nothing is lost: before `sync` deletes or overwrites a file of the copy that changed there
// since the last sync (or exists only there), it lists those files and refuses; with `force` it
// first saves exactly those files on the host (rescue.hpp) and says where. `apply` is three-way
// against the base each sync records (apply_base.hpp): it brings what only the agent changed,
// leaves what only the user changed, and lists what both changed as conflicts.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apply_base.hpp"
#include "crossing.hpp"
#include "exclude_rules.hpp"
#include "transfer.hpp"
#include "working_copy.hpp"

namespace ss {

class Sandbox;
class SshConnection;
class Config;

// One line of rsync's --out-format='%i %n' ("*deleting   a/b", ">f.st...... c").
struct ItemizedChange {
  std::string code;  // the 11 characters of %i ("*deleting" for deletions)
  std::string path;  // relative; directories end with '/'
  bool deleting() const { return code.rfind("*deleting", 0) == 0; }
  bool directory() const { return !path.empty() && path.back() == '/'; }
  // A file whose data changes: created, replaced or deleted (not only times or modes).
  bool content() const;
  // A file whose executable bit changes (comparisons see no other permission bit).
  bool mode() const;
  // Work of the copy's own: content() or mode().
  bool change() const { return content() || mode(); }
  bool created() const { return code.size() >= 3 && code.substr(2, 1) == "+"; }
};
std::vector<ItemizedChange> ParseItemized(std::string_view out);

// The arguments of find(1) that prune what `patterns` exclude, where find can say so exactly
// (a name pattern, or a directory name with a trailing '/'); the others prune nothing, which
// only makes the check below look at more files.
std::vector<std::string> FindPruneArgs(const std::vector<std::string>& patterns);

// Files of the copy a sync would delete or overwrite although they changed in the copy since the
// last sync: `changed` (paths relative to the copy) against rsync's plan.
std::vector<std::string> AtRisk(const std::vector<ItemizedChange>& plan,
                                const std::vector<std::string>& changed);

struct SyncOptions {
  bool force = false;
  bool dry_run = false;
};

struct SyncReport {
  std::vector<ItemizedChange> changes;  // what was (or, dry run, would be) done
  std::vector<std::string> at_risk;     // copy-only changes replaced (or that would be)
  std::string saved_to;                 // the archive on the host, when forced
  std::string snapshot;                 // always empty (forced syncs no longer take snapshots)
  bool created = false;                 // the copy was made (and filled) by this call
};

// Syncs the working copy of `source` from it (rsync -a --delete with the exclusion file). Throws
// ss::Error(1) listing the files at risk when they exist and `force` is not set.
SyncReport SyncWorkingCopy(Sandbox& sandbox, SshConnection& conn, const Config& config,
                           const CopySource& source, const SyncOptions& options);

// git-style --stat lines of a unified diff: " path | 3 ++-" and the summary line.
std::string DiffStat(std::string_view diff);

// What the copy changed since its base (see apply_base.hpp), as rsync sees it against the
// sandbox's copy of the base; without one (a copy made by an older ss), what changed in the copy
// since the last sync. Paths relative to the copy; deletions and changes of the executable bit
// included; paths sync.exclude or '.git' leave out are not (the host decides, whatever the
// sandbox's rsync lists).
// With `only`, just those paths are compared.
std::vector<std::string> UnappliedChanges(SshConnection& conn, const Config& config,
                                          const std::string& project,
                                          const std::vector<std::string>* only = nullptr);

// One path where the host project and the copy differ, and what apply does with it.
struct PlannedChange {
  std::string path;
  Action action = Action::kSame;
  Version base, host, copy;
  // 'A' made in the copy, 'D' deleted there, 'M' changed, 'C' a conflict.
  char Mark() const;
};

// The three-way view of a working copy: every difference between the host project and the copy,
// decided against the recorded base, with the copy's versions fetched (untrusted) for apply.
struct ApplyPlan {
  std::vector<PlannedChange> changes;
  // Names the sandbox sent that cannot be a path below the project, or that sync.exclude and
  // '.git' leave out.
  std::vector<Refusal> refused;
  ExcludeRules exclude;  // sync.exclude, read on the host
  ArchiveLimit limit;    // sync.max_size, and the sandbox's name for messages
  BaseRecord base;
  std::string host_dir;  // the host project (or folder)
  std::unique_ptr<ReceivedArchive> archive;
  std::vector<TarEntry> entries;
  size_t Count(Action a) const;
};
// `source` names the sandbox in messages. What the sandbox sends is bounded by sync.max_size
// (ss::Error 65 past it).
ApplyPlan PlanApply(SshConnection& conn, const Config& config, const std::string& sandbox,
                    const CopySource& copy, const std::string& source);

// A unified diff of the changes apply would bring and of the conflicts ("a/PATH" the host,
// "b/PATH" the copy), each conflict announced by a line "# conflict: PATH changed on the host
// and in the sandbox since the last sync", a change of the executable bit by "mode change OLD =>
// NEW PATH". Bounded by the plan's limit (ss::Error 65 past it).
// Made on the host, from the host project and the copy's files as they arrived (what apply would
// write), never by the sandbox's tools.
std::string PlanDiff(const ApplyPlan& plan);

// What apply does with conflicts: leave them (listed), keep the host's version, take the
// copy's, or merge text with git merge-file (conflict markers where both changed the same lines).
enum class Resolution { kNone, kOurs, kTheirs, kMerge };

struct ApplyReport {
  CrossingReport crossing;             // written (and deleted), refused
  std::vector<std::string> conflicts;  // left as they are on the host
  std::vector<std::string> merged;     // merged without a clash
  std::vector<std::string> marked;     // written with conflict markers
  bool base_advanced = true;           // the sandbox's copy of the base followed
};

// Brings the copy's changes of `plan` into `host_dir` through crossing.hpp (modes without setuid
// bits, times kept; links out of the project, device files and anything not asked for refused
// and listed); removes there what the copy deleted, never following a link. Nothing the user
// changed since the base is touched unless `resolution` says so. The base record follows what
// was applied. `source` names the sandbox in messages.
ApplyReport ApplyPlanned(SshConnection& conn, const std::string& sandbox,
                         const std::string& project, ApplyPlan& plan, const std::string& host_dir,
                         Resolution resolution, const std::string& source);

}  // namespace ss
