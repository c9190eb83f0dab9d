// Reading an archive the sandbox made. The sandbox is hostile by assumption: its `tar` may be
// replaced, so nothing in the stream is trusted. The reader knows ustar with pax extended headers
// (what GNU tar writes with --format=posix) and GNU's long-name records, checks every header's
// checksum, bounds every number and every length against the file, and indexes the entries
// without reading their data. Sparse files in GNU's pax format 1.0 (what `tar --sparse
// --format=posix` writes) are indexed by their extents, so that a file of holes stays small in
// the stream and on the host; the older sparse forms are refused. What the entries may do on the
// host is crossing.hpp's concern.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ss {

struct TarEntry {
  enum Type { kFile, kDirectory, kSymlink, kHardLink, kOther };
  // A run of a sparse file's data: `length` bytes at `offset` in the file, stored at
  // `data_offset` in the archive. Between and after the extents the file reads as zeros.
  struct Extent {
    int64_t offset = 0, length = 0, data_offset = 0;
  };
  std::string path;  // as the archive names it (a pax "path" record wins over the header)
  Type type = kOther;
  char typeflag = 0;  // the header's own flag, for the message about a kOther
  uint32_t mode = 0;  // the permission bits as sent (07777), never applied as they are
  int64_t size = 0;   // the file's size (kFile), holes of a sparse file included
  struct timespec mtime {};
  std::string link;         // a symlink's or hard link's target
  int64_t data_offset = 0;  // where the data starts in the archive file (not sparse)
  bool sparse = false;      // the data is in `extents`, in order, not at data_offset
  std::vector<Extent> extents;
  int64_t stored = 0;  // data bytes the archive holds for it
};

// Indexes the archive in the file `fd` (read with pread; the offset is not used). Throws
// ss::Error(255) naming `source` ("the sandbox 'box'") and the byte where the archive stops
// making sense: a bad checksum, an unknown header magic, a number out of range, an entry longer
// than the file, a malformed pax record, a sparse file in a form other than 1.0 or whose map is
// wrong.
std::vector<TarEntry> IndexTar(int fd, const std::string& source);

// Calls `chunk(file_offset, archive_offset, length)` for each run of data of the file entry `e`
// in order, and `hole(file_offset, length)` for each run of zeros between them (and after the
// last, up to its size).
void ForEachRun(const TarEntry& e, const std::function<void(int64_t, int64_t, int64_t)>& chunk,
                const std::function<void(int64_t, int64_t)>& hole);

// The sha256 (hex) of the data of the file entry `e` of the archive in `fd`, holes read as zeros.
std::string EntrySha256Hex(int fd, const TarEntry& e, const std::string& what);

}  // namespace ss
