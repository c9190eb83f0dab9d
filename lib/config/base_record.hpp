// The base of a working copy: what each file of the host project was when the copy was last
// made from it (by a sync, or when the copy was created), recorded on the host, where the
// sandbox cannot touch it. `ss apply` is three-way against it: what only the agent changed is
// brought over, what only the user changed stays, what both changed differently is a conflict.
//
// The record lives in $SS_HOME/.ss/bases/SANDBOX/PROJECT (0600). The sandbox only says which
// paths the copy was made of; every digest is the host's own, read from the host's files without
// following a link. A path the sandbox leaves out is recorded absent, which can only turn a
// change into a conflict or leave a host file alone, never lose one. A file whose status changed
// while the copy was being made is recorded "unknown": any difference in it is a conflict.
//
// What the sandbox keeps of it, and how the two are kept together: apply_base.hpp.
#pragma once

#include <sys/stat.h>
#include <time.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ss {

// One version of one path.
struct Version {
  enum Kind { kAbsent, kFile, kSymlink, kOther, kUnknown };
  Kind kind = kAbsent;
  bool exec = false;   // a file has an executable bit (any of the three)
  std::string digest;  // sha256 of a file's data or a link's target
  // kUnknown equals nothing, kOther (a device, a fifo) nothing but itself unknown.
  bool operator==(const Version& o) const;
  bool operator!=(const Version& o) const { return !(*this == o); }
};

// What the host has at `path` (relative, checked by SafeComponents) below the open directory
// `root`, without following a link; `st` receives its status when it is there.
Version HostVersion(int root, const std::string& path, struct stat* st = nullptr);

// What apply does with one path, given its base, the host's and the copy's versions.
enum class Action {
  kSame,      // host and copy agree: nothing to do
  kTake,      // only the agent changed it: the copy's version goes to the host
  kKeepHost,  // only the user changed it (or made it, unseen by the agent): it stays
  kConflict,  // both changed it differently, or the base (or the copy's version) is unknown
};
Action Decide(const Version& base, const Version& host, const Version& copy);

class BaseRecord {
 public:
  // The record of `project` in `sandbox`; not recorded() when there is none or it is unreadable.
  static BaseRecord Load(const std::string& sandbox, const std::string& project);
  static std::string PathOf(const std::string& sandbox, const std::string& project);
  // Forgets every record of `sandbox` (all projects), or of `project` in every sandbox but
  // `except` (folders' own sandboxes, whose copy of the same name is a folder's).
  static void ForgetSandbox(const std::string& sandbox);
  static void ForgetProject(const std::string& project, const std::vector<std::string>& except);

  bool recorded() const { return recorded_; }
  const std::string& token() const { return token_; }
  // The base of `path`: kAbsent when recorded without it, kUnknown when nothing is recorded.
  Version At(const std::string& path) const;
  // Sets the base of `path`; `st`, when given, is the host file's status for that version (so
  // the next recording can keep its digest when the file did not change).
  void Set(const std::string& path, const Version& v, const struct stat* st = nullptr);
  void Save(const std::string& sandbox, const std::string& project) const;
  // After a sync copied `paths` from `host_dir`: their base is what the host has now (absent
  // when it has none), unknown when changed at or after `since`.
  void Refresh(const std::string& host_dir, const std::vector<std::string>& paths,
               const struct timespec& since);

  // A new record of `host_dir` for the paths the sandbox names, with a new token. Entries of
  // `previous` whose host file kept its status keep their digest; a file whose status changed
  // at or after `since` (while the copy was made) is recorded unknown, and so is a named path the
  // host does not have.
  static BaseRecord Make(const std::string& host_dir, const std::vector<std::string>& paths,
                         const struct timespec& since, const BaseRecord& previous);

 private:
  struct Entry {
    Version version;
    bool cached = false;  // the status below is the host file's for this version
    int64_t size = 0, mtime_ns = 0, ctime_ns = 0;
    uint64_t ino = 0;
  };
  // Records what the host has at `paths` (see Make and Refresh).
  void Look(const std::string& host_dir, const std::vector<std::string>& paths,
            const struct timespec& since, const BaseRecord& previous, bool named_absent_unknown);

  bool recorded_ = false;
  std::string token_;
  std::map<std::string, Entry> entries_;
};

// The moment a copy starts being made, on the clock file times come from (the kernel's coarse
// clock, which lags the precise one by up to a tick), less a margin: a file changed from then on
// has a status-change time at or after it.
struct timespec CopyStarts();

}  // namespace ss
