// Reading an archive the sandbox made. The sandbox is hostile by assumption: its `tar` may be
// replaced, so nothing in the stream is trusted. The reader knows ustar with pax extended headers
// (what GNU tar writes with --format=posix) and GNU's long-name records, checks every header's
// checksum, bounds every number and every length against the file, and indexes the entries
// without reading their data. What the entries may do on the host is crossing.hpp's concern.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ss {

struct TarEntry {
  enum Type { kFile, kDirectory, kSymlink, kHardLink, kOther };
  std::string path;  // as the archive names it (a pax "path" record wins over the header)
  Type type = kOther;
  char typeflag = 0;  // the header's own flag, for the message about a kOther
  uint32_t mode = 0;  // the permission bits as sent (07777), never applied as they are
  int64_t size = 0;   // data bytes (kFile)
  struct timespec mtime {};
  std::string link;         // a symlink's or hard link's target
  int64_t data_offset = 0;  // where the data starts in the archive file
};

// Indexes the archive in the file `fd` (read with pread; the offset is not used). Throws
// ss::Error(255) naming `source` ("the sandbox 'box'") and the byte where the archive stops
// making sense: a bad checksum, an unknown header magic, a number out of range, an entry longer
// than the file, a malformed pax record, a sparse file.
std::vector<TarEntry> IndexTar(int fd, const std::string& source);

}  // namespace ss
