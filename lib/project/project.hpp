// The project store: the folders in $SS_HOME/projects (~/super-sandbox/projects), each shared
// into every sandbox at /home/sandbox/projects/<name>, and their metadata (.ss/metadata.json).
//
// Safety, whatever runs at the same time or dies half-way:
// - A project appears whole or not at all. `Create` builds it in a hidden folder beside the
//   projects (".new-<name>.<random>") and renames it into place without replacing anything, so
//   of several creators of one name exactly one wins. `Delete` first renames the project to a
//   hidden ".del-<name>.<random>" and then removes that. What a killed run leaves behind is
//   hidden from `List` and removed by the next `Create`, `Delete` or `List`.
// - Nothing outside the projects folder is read, written or removed through a project: every
//   path below it is opened relative to its parent with O_NOFOLLOW, and removal never follows a
//   symbolic link. (The projects folder itself may be a link, to put projects on another disk.)
// - Metadata is replaced atomically (temporary file, fsync, rename) while holding an flock(2)
//   on the project's folder, which `Delete` takes too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "timefmt.hpp"

namespace ss {

struct ProjectMetadata {
  SystemTime created{};
  SystemTime last_accessed{};
  std::string github_repo;  // "owner/name"; empty when there is none
};

enum class MetadataState { kOk, kMissing, kCorrupt };

struct Project {
  std::string name;
  std::string path;  // absolute path on the host
  // For kMissing and kCorrupt: what a rebuild writes (valid fields kept, the rest estimated
  // from the folder and its git remote).
  ProjectMetadata metadata;
  MetadataState state = MetadataState::kOk;
  std::string problem;   // why the metadata is missing or corrupt, for a warning
  bool rebuilt = false;  // this call wrote fresh metadata in place of the missing or corrupt one
  // Create with `from`: what was left out (device nodes, fifos, sockets), relative paths.
  std::vector<std::string> not_imported;
};

struct CreateOptions {
  // Copy this folder or git clone (history and all) instead of writing the scaffold.
  std::string from;
  // A copy-mode project: made in the store's folder of those (CopyProjectsDir()), which no
  // sandbox shares.
  bool copy = false;
};

// Project names: ^[a-z][a-z0-9-]{1,49}$ without "--". nullopt for a valid name, else what is
// wrong with it ("'My-App' has an uppercase letter 'M'").
std::optional<std::string> ProjectNameProblem(std::string_view name);
bool IsValidProjectName(std::string_view name);
// Throws ss::Error(65) "invalid project name: use lowercase letters, numbers, and hyphens only"
// with the problem as a detail.
void ValidateProjectName(std::string_view name);

// metadata.json as the spec writes it: {"created", "lastAccessed", "githubRepo"} (githubRepo
// left out when empty), two-space indent, RFC 3339 UTC times.
std::string FormatMetadata(const ProjectMetadata& metadata);
// nullopt and `problem` set when the text is not valid metadata.
std::optional<ProjectMetadata> ParseMetadata(std::string_view text, std::string* problem = nullptr);

// "owner/name" from a GitHub remote URL (https, ssh or scp-like), else empty.
std::string GitHubRepoFromUrl(std::string_view url);

// The variables that would point git elsewhere than the folder it is run in (GIT_DIR...): unset
// for every git ss runs on the host.
std::vector<std::string> GitEnvToUnset();

class ProjectStore {
 public:
  // Projects live in ProjectsDir(), shared with sandboxes, and copy-mode projects in
  // CopyProjectsDir(), which no sandbox shares (working_copy.hpp); a name is in one of them.
  ProjectStore();
  explicit ProjectStore(std::string base_dir, std::string copy_dir = "");

  const std::string& base_dir() const { return base_dir_; }

  // Where the project is (or would be made without CreateOptions::copy): <base>/<name>, or
  // <copy base>/<name> for one there; throws ss::Error(65) for an invalid name.
  std::string ProjectPath(std::string_view name) const;
  // A valid name whose entry is a folder (a symbolic link does not count).
  bool Exists(std::string_view name) const;

  // The project, its metadata read; missing or corrupt metadata is rebuilt (`rebuilt` says
  // so). Throws the spec's not-found block (66).
  Project Get(std::string_view name);
  // The same without writing anything: nullopt when there is no such project. Like Get, throws
  // ss::Error(66) when the entry is a symbolic link or a file rather than a project folder.
  std::optional<Project> Find(std::string_view name) const;
  // Every project, most recently accessed first (then by name). Reads only: missing or corrupt
  // metadata is reported through `state`, not repaired. Entries that are not projects (a
  // symbolic link, a folder with an invalid name) are skipped with a line in `skipped`.
  std::vector<Project> List(std::vector<std::string>* skipped = nullptr);
  // Names of the folders that look like projects, sorted; no metadata is read.
  std::vector<std::string> Names() const;
  // Apparent sizes in bytes, in the order given (-1: unreadable), walked in parallel.
  std::vector<int64_t> Sizes(const std::vector<Project>& projects) const;

  // Creates the project: the scaffold (AGENTS.md, README.md, .gitignore, a git repository on
  // branch main with one commit) or a copy of `options.from`, and its metadata. All or
  // nothing. Throws the already-exists block (73), or ss::Error when git, cp or the disk fail.
  Project Create(std::string_view name, const CreateOptions& options = {});
  // Removes the project and everything in it (never a symbolic link's target); returns it as
  // it was. Throws the not-found block (66).
  Project Delete(std::string_view name);
  // Sets lastAccessed to now (rebuilding missing or corrupt metadata).
  Project Touch(std::string_view name);
  Project UpdateLastAccessed(std::string_view name) { return Touch(name); }
  // Records the GitHub repository ("owner/name").
  Project SetGitHubRepo(std::string_view name, std::string_view repo);

  // The spec's error blocks.
  Error NotFoundError(std::string_view name);
  Error AlreadyExistsError(std::string_view name) const;
  // "my-app-v2" for "my-app" (or -v3 ... when taken); "my-app-v3" for "my-app-v2".
  std::string SuggestFreeName(std::string_view name) const;

  // Removes the hidden folders of interrupted `Create` and `Delete` runs that no live process
  // holds. Returns how many were removed.
  int CollectGarbage() const;

 private:
  std::vector<std::string> Bases() const;
  const std::string& BaseOf(std::string_view name) const;  // where `name` is, else base_dir_
  static void NamesIn(int base_fd, std::vector<std::string>& names);
  void ListIn(const std::string& base_dir, std::vector<Project>& out,
              std::vector<std::string>* skipped, bool& garbage);
  static int CollectGarbageIn(const std::string& base_dir);

  std::string base_dir_;
  std::string copy_dir_;  // empty: a store of one folder
};

}  // namespace ss
