#include "tar_index.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "digest.hpp"
#include "error.hpp"
#include "strings.hpp"

namespace ss {
namespace {

constexpr int64_t kBlock = 512;
// Extended headers and long names beyond this are not what tar writes for a project's files.
constexpr int64_t kMaxMeta = 1 << 20;

struct Bad {
  int64_t offset;
  std::string why;
};

// A header's numeric field: octal digits (leading spaces, ending at a space or NUL), or GNU's
// base-256 for large values (first byte 0x80). Negative and overflowing values are refused.
std::optional<int64_t> Number(std::string_view field) {
  if (field.empty()) return std::nullopt;
  auto first = static_cast<unsigned char>(field[0]);
  if (first == 0x80) {
    uint64_t v = 0;
    for (size_t i = 1; i < field.size(); ++i) {
      if (v >> 55) return std::nullopt;
      v = (v << 8) | static_cast<unsigned char>(field[i]);
    }
    if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  size_t i = 0;
  while (i < field.size() && field[i] == ' ') ++i;
  int64_t v = 0;
  size_t digits = 0;
  for (; i < field.size() && field[i] >= '0' && field[i] <= '7'; ++i, ++digits) {
    if (v > (INT64_MAX >> 3)) return std::nullopt;
    v = v * 8 + (field[i] - '0');
  }
  if (digits == 0) return std::nullopt;
  for (; i < field.size(); ++i) {
    if (field[i] != ' ' && field[i] != '\0') return std::nullopt;
  }
  return v;
}

// A NUL-terminated string field (it may fill the field, then it has no NUL).
std::string Text(const char* field, size_t size) {
  return std::string(field, strnlen(field, size));
}

// A pax time: seconds, optionally a '.' and up to nine digits of fraction (more are cut).
std::optional<struct timespec> PaxTime(std::string_view s) {
  auto dot = s.find('.');
  auto sec = ParseDecimal(s.substr(0, dot));
  if (!sec) return std::nullopt;
  struct timespec t {};
  t.tv_sec = static_cast<time_t>(*sec);
  if (dot != std::string_view::npos) {
    std::string_view frac = s.substr(dot + 1);
    if (frac.empty()) return std::nullopt;
    long ns = 0;
    for (size_t i = 0; i < 9; ++i) {
      char c = i < frac.size() ? frac[i] : '0';
      if (c < '0' || c > '9') return std::nullopt;
      ns = ns * 10 + (c - '0');
    }
    for (size_t i = 9; i < frac.size(); ++i) {
      if (frac[i] < '0' || frac[i] > '9') return std::nullopt;
    }
    t.tv_nsec = ns;
  }
  return t;
}

struct Pax {
  std::optional<std::string> path, link;
  std::optional<int64_t> size;
  std::optional<struct timespec> mtime;
  // GNU's sparse records: format 1.0 (major, minor, name, realsize) is read; any other record
  // of theirs (the 0.x forms) makes the entry refused.
  std::optional<int64_t> sparse_major, sparse_minor, sparse_size;
  std::optional<std::string> sparse_name;
  bool sparse_other = false;
  bool sparse() const {
    return sparse_major || sparse_minor || sparse_size || sparse_name || sparse_other;
  }
};

// "LEN key=value\n" records; LEN counts the whole record.
std::optional<std::string> ParsePax(std::string_view data, Pax& pax) {
  while (!data.empty()) {
    auto space = data.find(' ');
    if (space == std::string_view::npos) return "a pax record without a length";
    auto len = ParseDecimal(data.substr(0, space));
    if (!len || *len <= static_cast<int64_t>(space) + 1 ||
        *len > static_cast<int64_t>(data.size()) || data[*len - 1] != '\n') {
      return "a pax record whose length is wrong";
    }
    std::string_view record = data.substr(space + 1, *len - space - 2);
    data.remove_prefix(*len);
    auto eq = record.find('=');
    if (eq == std::string_view::npos) return "a pax record without '='";
    std::string_view key = record.substr(0, eq), value = record.substr(eq + 1);
    if (key == "path") {
      pax.path = std::string(value);
    } else if (key == "linkpath") {
      pax.link = std::string(value);
    } else if (key == "size") {
      pax.size = ParseDecimal(value);
      if (!pax.size) return "a pax size that is not a number";
    } else if (key == "mtime") {
      pax.mtime = PaxTime(value);
      if (!pax.mtime) return "a pax mtime that is not a time";
    } else if (key == "GNU.sparse.major" || key == "GNU.sparse.minor" ||
               key == "GNU.sparse.realsize") {
      auto v = ParseDecimal(value);
      if (!v) return "a pax sparse record that is not a number";
      (key == "GNU.sparse.major"   ? pax.sparse_major
       : key == "GNU.sparse.minor" ? pax.sparse_minor
                                   : pax.sparse_size) = v;
    } else if (key == "GNU.sparse.name") {
      pax.sparse_name = std::string(value);
    } else if (key.rfind("GNU.sparse.", 0) == 0) {
      pax.sparse_other = true;
    }
  }
  return std::nullopt;
}

class Reader {
 public:
  Reader(int fd, int64_t size) : fd_(fd), size_(size) {}

  // Reads `n` bytes at `offset`; false when the file ends first.
  bool Read(int64_t offset, char* out, int64_t n) const {
    if (offset < 0 || n < 0 || offset > size_ || n > size_ - offset) return false;
    while (n > 0) {
      ssize_t got = ::pread(fd_, out, static_cast<size_t>(n), offset);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      out += got;
      offset += got;
      n -= got;
    }
    return true;
  }
  int64_t size() const { return size_; }

 private:
  int fd_;
  int64_t size_;
};

int64_t Padded(int64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

// The map at the start of a sparse 1.0 entry's data (`stored` bytes from `data`): decimal lines,
// the number of extents then an offset and a length for each, padded to a block; the extents'
// data follows, one after the other. Every extent must lie inside the file, after the previous
// one, and their lengths must add up to what the entry stores after its map.
std::optional<std::string> SparseMap(const Reader& in, int64_t data, int64_t stored,
                                     int64_t real_size, TarEntry& e) {
  std::string text(static_cast<size_t>(std::min(stored, kMaxMeta)), '\0');
  if (!in.Read(data, text.data(), static_cast<int64_t>(text.size()))) {
    return "the archive ends inside a sparse map";
  }
  size_t at = 0;
  auto next = [&]() -> std::optional<int64_t> {
    auto nl = text.find('\n', at);
    if (nl == std::string::npos) return std::nullopt;
    auto v = ParseDecimal(std::string_view(text).substr(at, nl - at));
    at = nl + 1;
    return v;
  };
  auto count = next();
  if (!count || *count > kMaxMeta / 4) return "a sparse map whose size is wrong";
  int64_t end = 0, sum = 0;
  for (int64_t i = 0; i < *count; ++i) {
    auto offset = next();
    auto length = next();
    if (!offset || !length || *offset < end || *length > real_size - *offset) {
      return "a sparse map that is not in order or not inside the file";
    }
    end = *offset + *length;
    sum += *length;
    e.extents.push_back({*offset, *length, 0});
  }
  int64_t map = Padded(static_cast<int64_t>(at));
  if (map > stored || sum != stored - map) return "a sparse map that does not match its data";
  int64_t pos = data + map;
  for (auto& x : e.extents) {
    x.data_offset = pos;
    pos += x.length;
  }
  e.sparse = true;
  return std::nullopt;
}

std::vector<TarEntry> Index(const Reader& in) {
  std::vector<TarEntry> entries;
  Pax pending;
  std::optional<std::string> long_name, long_link;
  int64_t at = 0;
  char h[kBlock];
  for (;;) {
    if (!in.Read(at, h, kBlock)) {
      if (at == in.size() && !entries.empty()) break;  // some tars omit the end blocks
      throw Bad{at, "the archive ends inside a header"};
    }
    if (std::all_of(h, h + kBlock, [](char c) { return c == 0; })) break;
    auto sum = Number(std::string_view(h + 148, 8));
    unsigned long unsigned_sum = 0;
    long signed_sum = 0;
    for (int i = 0; i < kBlock; ++i) {
      char c = (i >= 148 && i < 156) ? ' ' : h[i];
      unsigned_sum += static_cast<unsigned char>(c);
      signed_sum += static_cast<signed char>(c);
    }
    if (!sum || (*sum != static_cast<int64_t>(unsigned_sum) && *sum != signed_sum)) {
      throw Bad{at, "a header's checksum is wrong"};
    }
    std::string_view magic(h + 257, 8);
    bool posix = magic.substr(0, 6) == std::string_view("ustar\0", 6);
    bool gnu = magic == std::string_view("ustar  \0", 8);
    if (!posix && !gnu) throw Bad{at, "a header is not ustar"};
    auto size = Number(std::string_view(h + 124, 12));
    auto mode = Number(std::string_view(h + 100, 8));
    auto mtime = Number(std::string_view(h + 136, 12));
    if (!size || !mode || !mtime) throw Bad{at, "a header's size, mode or time is not a number"};
    char flag = h[156];
    int64_t data = at + kBlock;
    if (flag == 'x' || flag == 'g' || flag == 'L' || flag == 'K') {
      if (*size > kMaxMeta) throw Bad{at, "an extended header is too long"};
      std::string meta(static_cast<size_t>(*size), '\0');
      if (!in.Read(data, meta.data(), *size)) throw Bad{at, "the archive ends inside a header"};
      if (flag == 'x') {
        if (auto why = ParsePax(meta, pending)) throw Bad{at, *why};
      } else if (flag == 'L' || flag == 'K') {
        meta.resize(strnlen(meta.data(), meta.size()));
        (flag == 'L' ? long_name : long_link) = meta;
      }  // 'g': global records say nothing ss uses
      at = data + Padded(*size);
      continue;
    }
    TarEntry e;
    e.typeflag = flag;
    switch (flag) {
      case '0':
      case '\0':
      case '7':
        e.type = TarEntry::kFile;
        break;
      case '5':
        e.type = TarEntry::kDirectory;
        break;
      case '2':
        e.type = TarEntry::kSymlink;
        break;
      case '1':
        e.type = TarEntry::kHardLink;
        break;
      default:
        e.type = TarEntry::kOther;
        break;
    }
    bool sparse = pending.sparse();
    if (flag == 'S' || (sparse && (pending.sparse_other || pending.sparse_major != 1 ||
                                   pending.sparse_minor != 0 || !pending.sparse_name ||
                                   !pending.sparse_size || e.type != TarEntry::kFile))) {
      throw Bad{at, "a sparse file in a form other than GNU's 1.0"};
    }
    std::string name = Text(h, 100);
    if (posix) {
      std::string prefix = Text(h + 345, 155);
      if (!prefix.empty()) name = Cat(prefix, "/", name);
    }
    e.path = sparse         ? *pending.sparse_name
             : pending.path ? *pending.path
             : long_name    ? *long_name
                            : name;
    e.link = pending.link ? *pending.link : long_link ? *long_link : Text(h + 157, 100);
    e.size = pending.size ? *pending.size : *size;
    e.mode = static_cast<uint32_t>(*mode & 07777);
    e.mtime = pending.mtime ? *pending.mtime : timespec{static_cast<time_t>(*mtime), 0};
    e.data_offset = data;
    // Only a regular file's data follows its header (a hard link's size says nothing).
    int64_t stored = (e.type == TarEntry::kFile || e.type == TarEntry::kOther) ? e.size : 0;
    if (stored > in.size() - data) throw Bad{at, Cat("'", e.path, "' is longer than the archive")};
    if (e.type != TarEntry::kFile) e.size = 0;
    e.stored = stored;
    if (sparse) {
      if (auto why = SparseMap(in, data, stored, *pending.sparse_size, e)) throw Bad{at, *why};
      e.size = *pending.sparse_size;
    }
    at = data + Padded(stored);
    entries.push_back(std::move(e));
    pending = Pax{};
    long_name.reset();
    long_link.reset();
  }
  return entries;
}

}  // namespace

void ForEachRun(const TarEntry& e, const std::function<void(int64_t, int64_t, int64_t)>& chunk,
                const std::function<void(int64_t, int64_t)>& hole) {
  if (!e.sparse) {
    if (e.size > 0) chunk(0, e.data_offset, e.size);
    return;
  }
  int64_t at = 0;
  for (const auto& x : e.extents) {
    if (x.offset > at) hole(at, x.offset - at);
    if (x.length > 0) chunk(x.offset, x.data_offset, x.length);
    at = x.offset + x.length;
  }
  if (e.size > at) hole(at, e.size - at);
}

std::string EntrySha256Hex(int fd, const TarEntry& e, const std::string& what) {
  Sha256Stream digest;
  ForEachRun(
      e, [&](int64_t, int64_t from, int64_t n) { digest.UpdateFd(fd, from, n, what); },
      [&](int64_t, int64_t n) { digest.UpdateZeros(n); });
  return digest.Hex();
}

std::vector<TarEntry> IndexTar(int fd, const std::string& source) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw Error(kExitIoErr, Cat("cannot read the archive from ", source, ": ", strerror(errno)));
  }
  try {
    return Index(Reader(fd, st.st_size));
  } catch (const Bad& bad) {
    throw Error(kExitRemote,
                Cat(source, " sent a malformed archive (at byte ", bad.offset, ": ", bad.why, ")"),
                {}, {"nothing was written on the host; the sandbox's tar may have been replaced"});
  }
}

}  // namespace ss
