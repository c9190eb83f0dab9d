// Folders opened with `ss run DIR` (`ss .`): any folder of the host, shared read-write at
// /workspace/NAME with a sandbox of its own, so that no other folder or project is visible to
// the agent working there. The folder is remembered with its sandbox:
//
//   $SS_HOME/.ss/folders.json   {"folders": {"/abs/path": {"name": "my-app",
//                                                          "sandbox": "my-app-3f2a"}}}
//
// so the next `ss .` there goes straight to the running sandbox, as `ss PROJECT` does.
#pragma once

#include <string>

namespace ss {

struct Folder {
  std::string path;            // absolute, links resolved
  std::string name;            // in the sandbox: /workspace/NAME
  std::string sandbox;         // its own sandbox: NAME-XXXX (four hex digits of the path's digest)
  std::string Target() const;  // /workspace/NAME
};

// The folder `dir`, resolved and checked as a shared folder is (shares.hpp), recorded on first
// use. Throws ss::Error 66 (missing, not a directory), 77 (not writable, holds ss's state).
Folder OpenFolder(const std::string& dir);

}  // namespace ss
