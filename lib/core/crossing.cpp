#include "crossing.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "error.hpp"
#include "fd.hpp"
#include "future_tree.hpp"
#include "platform.hpp"
#include "strings.hpp"

namespace ss {
namespace {

mode_t CurrentUmask() {
  mode_t m = ::umask(0);
  ::umask(m);
  return m;
}

struct Owner {
  bool chown = false;  // root writes for the destination's owner
  uid_t uid = 0;
  gid_t gid = 0;
};

std::string JoinParts(const std::vector<std::string>& parts, size_t n) {
  std::string out;
  for (size_t i = 0; i < n && i < parts.size(); ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

// The directory made of the first `n` parts, beneath `root`, opened without following a link;
// missing ones are made when `create`. An invalid Fd and `why` when a part is not a directory.
Fd OpenDir(int root, const std::vector<std::string>& parts, size_t n, bool create, mode_t umask,
           const Owner& owner, std::string* why) {
  Fd cur(::fcntl(root, F_DUPFD_CLOEXEC, 0));
  for (size_t i = 0; i < n; ++i) {
    const char* name = parts[i].c_str();
    int fd = ::openat(cur.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(cur.get(), name, 0777 & ~umask) == 0 && owner.chown) {
        (void)::fchownat(cur.get(), name, owner.uid, owner.gid, AT_SYMLINK_NOFOLLOW);
      }
      fd = ::openat(cur.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      int err = errno;
      if (why) {
        *why = err == ELOOP || err == ENOTDIR
                   ? Cat("'", JoinParts(parts, i + 1),
                         "' on the host is a symbolic link or not a directory")
                   : Cat("'", JoinParts(parts, i + 1), "': ", std::strerror(err));
      }
      return Fd();
    }
    cur = Fd(fd);
  }
  return cur;
}

std::string Describe(const TarEntry& e) {
  switch (e.typeflag) {
    case '3':
      return "a character device";
    case '4':
      return "a block device";
    case '6':
      return "a fifo";
    default:
      return Cat("an entry of type ", Quoted(std::string(1, e.typeflag)));
  }
}

void CopyData(int from, int64_t offset, int64_t n, int to, const std::string& what) {
  int64_t in = offset;
  bool plain = false;
  while (n > 0) {
    ssize_t c;
    if (!plain) {
      c = platform::CopyRange(from, &in, to, static_cast<size_t>(n));
      if (c < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
        plain = true;
        continue;
      }
    } else {
      char buf[1 << 16];
      c = ::pread(from, buf, static_cast<size_t>(std::min<int64_t>(n, sizeof buf)), in);
      if (c > 0) {
        for (ssize_t done = 0; done < c;) {
          ssize_t w = ::write(to, buf + done, static_cast<size_t>(c - done));
          if (w < 0 && errno == EINTR) continue;
          if (w < 0)
            throw Error(kExitIoErr, Cat("cannot write ", what, ": ", std::strerror(errno)));
          done += w;
        }
        in += c;
      }
    }
    if (c < 0 && errno == EINTR) continue;
    if (c < 0) throw Error(kExitIoErr, Cat("cannot write ", what, ": ", std::strerror(errno)));
    if (c == 0) throw Error(kExitIoErr, Cat("cannot write ", what, ": the archive ended early"));
    n -= c;
  }
}

// The data of the file entry `e` into `to` (an empty file): each run of data where it belongs,
// the holes left as holes.
void WriteEntry(int archive, const TarEntry& e, int to, const std::string& what) {
  if (!e.sparse) return CopyData(archive, e.data_offset, e.size, to, what);
  ForEachRun(
      e,
      [&](int64_t at, int64_t from, int64_t n) {
        if (::lseek(to, at, SEEK_SET) < 0) {
          throw Error(kExitIoErr, Cat("cannot write ", what, ": ", std::strerror(errno)));
        }
        CopyData(archive, from, n, to, what);
      },
      [](int64_t, int64_t) {});
  if (::ftruncate(to, e.size) != 0) {
    throw Error(kExitIoErr, Cat("cannot write ", what, ": ", std::strerror(errno)));
  }
}

Fd OpenRoot(const std::string& dest) {
  Fd root(::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok()) {
    throw Error(errno == ENOENT ? kExitNoInput : kExitIoErr,
                Cat("cannot write into ", dest, ": ", std::strerror(errno)));
  }
  return root;
}

class Writer {
 public:
  Writer(int archive, const std::string& dest, const CrossingOptions& options)
      : archive_(archive),
        dest_(dest),
        options_(options),
        umask_(CurrentUmask()),
        root_(OpenRoot(dest)),
        exclude_(options.exclude ? *options.exclude : no_rules_),
        future_(root_.get(), static_cast<size_t>(std::max(0, options.scope_depth)),
                options.scope_depth ? "what was pulled" : "the project") {
    struct stat st {};
    if (::geteuid() == 0 && ::fstat(root_.get(), &st) == 0) owner_ = {true, st.st_uid, st.st_gid};
  }

  // The path `e` is written at (renamed), or nullopt when it is refused for what it is or where
  // it goes (links are checked once every entry is known: Write).
  std::optional<std::vector<std::string>> Admit(const TarEntry& e, size_t index) {
    index_ = index;
    auto safe = SafeComponents(e.path);
    if (!safe) return Refuse(e, "an absolute name or one with '..'"), std::nullopt;
    std::vector<std::string> parts = *safe;
    if (parts.empty()) return std::nullopt;  // "./": the destination itself
    if (options_.only && !options_.only->count(JoinParts(parts, parts.size()))) {
      return Refuse(e, "not one of the files asked for"), std::nullopt;
    }
    if (options_.rename_from) {
      if (parts[0] != *options_.rename_from) {
        return Refuse(e, "not below what was asked for"), std::nullopt;
      }
      parts[0] = *options_.rename_to;
    }
    if (auto why = exclude_.Why(parts, e.type == TarEntry::kDirectory)) {
      return Refuse(e, *why), std::nullopt;
    }
    if (e.type == TarEntry::kOther) return Refuse(e, Describe(e)), std::nullopt;
    if (e.type == TarEntry::kHardLink) {
      return Refuse(e, Cat("a hard link to ", Quoted(e.link))), std::nullopt;
    }
    future_.Add(parts,
                e.type == TarEntry::kDirectory ? FutureTree::Kind::kDirectory
                : e.type == TarEntry::kSymlink ? FutureTree::Kind::kSymlink
                                               : FutureTree::Kind::kFile,
                e.link);
    return parts;
  }

  void Write(const TarEntry& e, const std::vector<std::string>& parts, size_t index) {
    index_ = index;
    if (e.type == TarEntry::kSymlink) {
      if (auto why = future_.LinkRefusal(parts, e.link)) {
        return Refuse(e, Cat("a symbolic link to ", Quoted(e.link), ", ", *why));
      }
    }
    std::string why;
    Fd parent = OpenDir(root_.get(), parts, parts.size() - 1, true, umask_, owner_, &why);
    if (!parent.ok()) return Refuse(e, why);
    const std::string& name = parts.back();
    std::string rel = JoinParts(parts, parts.size());
    struct stat there {};
    bool exists = ::fstatat(parent.get(), name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0;
    if (e.type == TarEntry::kDirectory) {
      if (exists && !S_ISDIR(there.st_mode)) {
        return Refuse(e, "on the host it is a file or a symbolic link, not a directory");
      }
      if (!exists) {
        mode_t mode = options_.exec_bit_only ? 0777 : ((e.mode & 0777) | 0700);
        if (::mkdirat(parent.get(), name.c_str(), mode & ~umask_) != 0) {
          Fail(rel);
        }
        if (owner_.chown) Chown(parent.get(), name);
      }
      dirs_.push_back({parts, e.mtime});
      report_.written.push_back(rel);
      return;
    }
    if (exists && S_ISDIR(there.st_mode)) return Refuse(e, "on the host it is a directory");
    std::string tmp = Cat(".ss-crossing.", ::getpid(), ".", ++serial_);
    if (e.type == TarEntry::kSymlink) {
      if (::symlinkat(e.link.c_str(), parent.get(), tmp.c_str()) != 0) Fail(rel);
      if (owner_.chown) Chown(parent.get(), tmp);
      struct timespec times[2] = {{0, UTIME_OMIT}, e.mtime};
      (void)::utimensat(parent.get(), tmp.c_str(), times, AT_SYMLINK_NOFOLLOW);
    } else {
      Fd out(::openat(parent.get(), tmp.c_str(),
                      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!out.ok()) Fail(rel);
      try {
        WriteEntry(archive_, e, out.get(), Cat(dest_, "/", rel));
        struct timespec times[2] = {{0, UTIME_OMIT}, e.mtime};
        if (::fchmod(out.get(), Mode(e, exists ? &there : nullptr)) != 0 ||
            (owner_.chown && ::fchown(out.get(), owner_.uid, owner_.gid) != 0) ||
            ::futimens(out.get(), times) != 0) {
          Fail(rel);
        }
      } catch (...) {
        ::unlinkat(parent.get(), tmp.c_str(), 0);
        throw;
      }
      report_.bytes += e.sparse ? e.stored : e.size;
    }
    if (::renameat(parent.get(), tmp.c_str(), parent.get(), name.c_str()) != 0) {
      int err = errno;
      ::unlinkat(parent.get(), tmp.c_str(), 0);
      errno = err;
      Fail(rel);
    }
    report_.written.push_back(rel);
  }

  // Directories get their times last: writing into them changed them.
  CrossingReport Finish() {
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
      Fd dir = OpenDir(root_.get(), it->parts, it->parts.size(), false, umask_, owner_, nullptr);
      struct timespec times[2] = {{0, UTIME_OMIT}, it->mtime};
      if (dir.ok()) (void)::futimens(dir.get(), times);
    }
    // Refusals in the order of the stream, whichever pass made them.
    std::stable_sort(refused_.begin(), refused_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& r : refused_) report_.refused.push_back(std::move(r.second));
    return std::move(report_);
  }

 private:
  struct Dir {
    std::vector<std::string> parts;
    struct timespec mtime;
  };

  // A file's permission bits on the host (see CrossingOptions::exec_bit_only); `there` is what
  // the host has at its name.
  mode_t Mode(const TarEntry& e, const struct stat* there) const {
    if (!options_.exec_bit_only) return e.mode & 0777 & ~umask_;
    // A new file: what the umask allows, narrowed (never widened) by the sandbox's read and
    // write bits, so that a file the agent kept private stays so; the owner may always read and
    // write it.
    mode_t mode = there && S_ISREG(there->st_mode) ? there->st_mode & 0777
                                                   : 0666 & ~umask_ & ((e.mode & 0666) | 0600);
    if (e.mode & 0111) return mode | ((mode & 0444) >> 2);
    return mode & ~static_cast<mode_t>(0111);
  }

  void Refuse(const TarEntry& e, std::string why) {
    refused_.push_back({index_, {e.path, std::move(why)}});
  }
  [[noreturn]] void Fail(const std::string& rel) {
    throw Error(kExitIoErr, Cat("cannot write ", dest_, "/", rel, ": ", std::strerror(errno)));
  }
  void Chown(int dir, const std::string& name) {
    (void)::fchownat(dir, name.c_str(), owner_.uid, owner_.gid, AT_SYMLINK_NOFOLLOW);
  }

  int archive_;
  std::string dest_;
  const CrossingOptions& options_;
  mode_t umask_;
  Fd root_;
  Owner owner_;
  unsigned serial_ = 0;
  ExcludeRules no_rules_;
  const ExcludeRules& exclude_;
  FutureTree future_;
  std::vector<Dir> dirs_;
  size_t index_ = 0;  // of the entry at hand, in the stream
  std::vector<std::pair<size_t, Refusal>> refused_;
  CrossingReport report_;
};

}  // namespace

std::optional<std::vector<std::string>> SafeComponents(const std::string& path) {
  if (path.empty() || path[0] == '/' || path.find('\0') != std::string::npos) return std::nullopt;
  std::vector<std::string> parts;
  for (auto& c : Split(path, '/')) {
    if (c.empty() || c == ".") continue;
    if (c == "..") return std::nullopt;
    parts.push_back(std::move(c));
  }
  return parts;
}

CrossingReport CrossInto(int archive_fd, const std::vector<TarEntry>& entries,
                         const std::string& dest, const CrossingOptions& options) {
  Writer w(archive_fd, dest, options);
  // Every entry is known before any link is judged: a link arriving later in the stream may be
  // on another one's way.
  std::vector<std::pair<size_t, std::vector<std::string>>> admitted;
  std::set<std::string> names;
  for (size_t i = 0; i < entries.size(); ++i) {
    auto parts = w.Admit(entries[i], i);
    if (!parts) continue;
    // A name given twice would be written twice, the first write staying where the second is
    // refused: what was shown (the last) is not what would land. The archives ss asks for name
    // each path once, so the sandbox's is refused whole.
    if (!names.insert(JoinParts(*parts, parts->size())).second) {
      throw Error(kExitRemote,
                  Cat("the sandbox's archive gives ", Quoted(Printable(entries[i].path)),
                      " more than once; nothing was written"));
    }
    admitted.emplace_back(i, std::move(*parts));
  }
  for (const auto& [i, parts] : admitted) w.Write(entries[i], parts, i);
  return w.Finish();
}

Fd OpenParentBeneath(int root, const std::vector<std::string>& parts) {
  if (parts.empty()) return Fd();
  return OpenDir(root, parts, parts.size() - 1, false, 0, {}, nullptr);
}

bool RemoveBeneath(const std::string& dest, const std::string& path) {
  auto parts = SafeComponents(path);
  if (!parts || parts->empty()) return false;
  Fd root(::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok()) return false;
  Fd parent = OpenDir(root.get(), *parts, parts->size() - 1, false, 0, {}, nullptr);
  if (!parent.ok()) return false;
  struct stat st {};
  const char* name = parts->back().c_str();
  if (::fstatat(parent.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode)) {
    return false;
  }
  if (::unlinkat(parent.get(), name, 0) != 0) {
    if (errno == ENOENT) return false;
    throw Error(kExitIoErr, Cat("cannot delete ", dest, "/", path, ": ", std::strerror(errno)));
  }
  return true;
}

}  // namespace ss
