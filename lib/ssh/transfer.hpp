// Files in and out of a sandbox over SSH: `ss push LOCAL REMOTE`, `ss pull REMOTE LOCAL`.
//
// Like cp -r: when the destination is an existing directory (or ends with '/'), the source goes
// inside it under its own name; otherwise the destination is the copy's name. Files keep their
// mode and modification time; an existing file is replaced (written beside it, then renamed
// over it), directories are merged into an existing one. Relative remote paths are relative to
// `remote_base` (the project's directory in the sandbox).
//
// What comes out of the sandbox crosses as a tar archive through crossing.hpp: a pull writes
// only the file or tree asked for, beneath the destination's existing parent, without setuid
// bits, device files or links that lead out of it (those are refused and listed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crossing.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "tar_index.hpp"

namespace ss {

class SshConnection;

struct TransferResult {
  std::string destination;  // the path written
  bool directory = false;
  int64_t bytes = 0;             // bytes sent (a tar stream for directories), or file data pulled
  std::vector<Refusal> refused;  // pull: entries not written
};

// The most a sandbox may send the host in one crossing (sync.max_size): bytes in the stream, and
// the size of the files it holds, holes of sparse files included. `source` names the sandbox
// ("sandbox 'box'").
struct ArchiveLimit {
  int64_t bytes = -1;  // negative: none
  std::string source;
};

// The error when a sandbox sends more than `limit`: 65, nothing written, how to raise it.
Error TooLarge(const ArchiveLimit& limit, std::string_view what);

// What a tar run in the sandbox writes to its stdout, kept in a private temporary file under
// SpoolDir() and indexed (untrusted; tar_index.hpp). `input` is the command's stdin. Throws
// TooLarge when the stream, or the files it holds, pass `limit`.
class ReceivedArchive {
 public:
  ReceivedArchive(SshConnection& conn, const std::vector<std::string>& tar_argv,
                  const std::optional<std::string>& input = std::nullopt, ArchiveLimit limit = {});
  ReceivedArchive(const ReceivedArchive&) = delete;
  int status() const { return status_; }               // tar's exit status
  const std::string& error() const { return error_; }  // what it said on stderr
  // The entries; throws ss::Error(255) naming `source` when the archive is malformed.
  const std::vector<TarEntry>& Index(const std::string& source);
  int fd() const { return fd_.get(); }

 private:
  TempDir tmp_;
  Fd fd_;
  int status_ = 0;
  std::string error_;
  std::optional<std::vector<TarEntry>> entries_;
  ArchiveLimit limit_;
};

// "/abs" stays; "rel" becomes remote_base + "/rel"; "" or "." is remote_base itself.
std::string RemotePath(const std::string& path, const std::string& remote_base);

TransferResult Push(SshConnection& conn, const std::string& local, const std::string& remote);
// The contents of the local directory `local` merged into the sandbox's directory `remote`
// (made when missing), without Push's "inside it under its own name". Returns the bytes sent.
int64_t PushTree(SshConnection& conn, const std::string& local, const std::string& remote);
// `limit.source` names the sandbox in messages ("sandbox 'box'").
TransferResult Pull(SshConnection& conn, const std::string& remote, const std::string& local,
                    const ArchiveLimit& limit);

}  // namespace ss
