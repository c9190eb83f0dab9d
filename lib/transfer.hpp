// Files in and out of a sandbox over SSH: `ss push LOCAL REMOTE`, `ss pull REMOTE LOCAL`.
//
// Like cp -r: when the destination is an existing directory (or ends with '/'), the source goes
// inside it under its own name; otherwise the destination is the copy's name. Files keep their
// mode and modification time; an existing file is replaced (written beside it, then renamed
// over it), directories are merged into an existing one. Relative remote paths are relative to
// `remote_base` (the project's directory in the sandbox).
#pragma once

#include <cstdint>
#include <string>

namespace ss {

class SshConnection;

struct TransferResult {
  std::string destination;  // the path written
  bool directory = false;
  int64_t bytes = 0;  // bytes sent (a tar stream for directories)
};

// "/abs" stays; "rel" becomes remote_base + "/rel"; "" or "." is remote_base itself.
std::string RemotePath(const std::string& path, const std::string& remote_base);

TransferResult Push(SshConnection& conn, const std::string& local, const std::string& remote);
TransferResult Pull(SshConnection& conn, const std::string& remote, const std::string& local);

}  // namespace ss
