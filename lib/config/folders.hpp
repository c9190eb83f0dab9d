// Folders opened with `ss run DIR` (`ss .`): any folder of the host, with a sandbox of its own,
// so that no other folder or project is visible to the agent working there. The agent works at
// /workspace/NAME: the folder itself, shared read-write, or in copy mode (`ss run DIR --copy`)
// a working copy on the sandbox's disk, the folder shared with nothing (ss sends it) and changes
// brought back by `ss apply` and commits by `ss fetch` (working_copy.hpp, git_layer.hpp). A git
// repository opens in copy mode unless told otherwise (--no-copy): shared, its `.git` would be
// the sandbox's to write, and the host's git obeys what is there (hooks, core.fsmonitor). The
// folder is remembered with its sandbox:
//
//   $SS_HOME/.ss/folders.json   {"folders": {"/abs/path": {"name": "my-app",
//                                                          "sandbox": "my-app-3f2a",
//                                                          "mode": "shared" | "copy"}}}
//
// so the next `ss .` there goes straight to the running sandbox, as `ss PROJECT` does.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

struct Folder {
  std::string path;            // absolute, links resolved
  std::string name;            // in the sandbox: /workspace/NAME
  std::string sandbox;         // its own sandbox: NAME-XXXX (four hex digits of the path's digest)
  bool copy = false;           // copy mode
  bool first_use = false;      // recorded by this OpenFolder (its mode is the default one)
  std::string Target() const;  // /workspace/NAME
};

// What names a folder rather than a project or a command: ".", "..", "./x", "../x", "/x".
bool IsFolderWord(std::string_view word);

// The folder `dir`, resolved and checked as a shared folder is (shares.hpp), recorded on first
// use: in copy mode when it is a git repository (HoldsRepository), else read-write. Throws
// ss::Error 66 (missing, not a directory), 77 (not writable, holds ss's state).
Folder OpenFolder(const std::string& dir);
// A `.git` at the top of `dir` (a folder, or a file naming one elsewhere).
bool HoldsRepository(const std::string& dir);
// Records `folder` as it is now (its mode changed).
void RecordFolder(const Folder& folder);

// Every recorded folder.
std::vector<Folder> RecordedFolders();
// The folder whose own sandbox `sandbox` is: such a sandbox shares that folder and nothing else.
std::optional<Folder> FolderOfSandbox(const std::string& sandbox);
// The recorded folder that is `dir` or holds it (the deepest), without recording anything.
std::optional<Folder> FolderAt(const std::string& dir);

}  // namespace ss
