#include "base_record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "crossing.hpp"
#include "digest.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "strings.hpp"

namespace ss {
namespace {

constexpr const char* kHeader = "ss-base 1 ";

int64_t Nanos(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

char KindLetter(Version::Kind k) {
  switch (k) {
    case Version::kFile:
      return 'f';
    case Version::kSymlink:
      return 'l';
    case Version::kOther:
      return 'o';
    default:
      return 'u';
  }
}

std::string BasesDir() { return StateDir() + "/bases"; }

}  // namespace

bool Version::operator==(const Version& o) const {
  if (kind == kUnknown || o.kind == kUnknown || kind == kOther || o.kind == kOther) return false;
  if (kind != o.kind) return false;
  if (kind == kAbsent) return true;
  return digest == o.digest && (kind != kFile || exec == o.exec);
}

Version HostVersion(int root, const std::string& path, struct stat* out) {
  Version v;
  auto parts = SafeComponents(path);
  if (!parts || parts->empty()) {
    v.kind = Version::kOther;
    return v;
  }
  Fd parent = OpenParentBeneath(root, *parts);
  if (!parent.ok()) {
    // Nothing is there as ss sees it: a folder is missing, or a link or a file stands where a
    // folder should be (never looked through; writing there is refused by the crossing).
    v.kind =
        errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? Version::kAbsent : Version::kOther;
    return v;
  }
  const char* name = parts->back().c_str();
  struct stat st {};
  if (::fstatat(parent.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    v.kind = errno == ENOENT ? Version::kAbsent : Version::kOther;
    return v;
  }
  if (S_ISLNK(st.st_mode)) {
    std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
    ssize_t n = ::readlinkat(parent.get(), name, target.data(), target.size());
    if (n < 0 || static_cast<size_t>(n) >= target.size()) {
      v.kind = Version::kOther;  // changed while it was read
      return v;
    }
    target.resize(static_cast<size_t>(n));
    v.kind = Version::kSymlink;
    v.digest = Sha256Hex(target);
  } else if (S_ISREG(st.st_mode)) {
    Fd fd(::openat(parent.get(), name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat again {};
    if (!fd.ok() || ::fstat(fd.get(), &again) != 0 || !S_ISREG(again.st_mode) ||
        again.st_ino != st.st_ino) {
      v.kind = Version::kOther;
      return v;
    }
    v.kind = Version::kFile;
    v.exec = (st.st_mode & 0111) != 0;  // any x bit, as rsync --executability sees it
    v.digest = Sha256FdHex(fd.get(), 0, -1, Cat("'", path, "' on the host"));
  } else {
    v.kind = Version::kOther;
  }
  if (out) *out = st;
  return v;
}

Action Decide(const Version& base, const Version& host, const Version& copy) {
  if (host == copy) return Action::kSame;
  if (base.kind == Version::kUnknown || copy.kind == Version::kUnknown) return Action::kConflict;
  if (base == host) return Action::kTake;
  if (base == copy) return Action::kKeepHost;
  return Action::kConflict;
}

std::string BaseRecord::PathOf(const std::string& sandbox, const std::string& project) {
  return Cat(BasesDir(), "/", sandbox, "/", project);
}

void BaseRecord::ForgetSandbox(const std::string& sandbox) {
  std::string dir = Cat(BasesDir(), "/", sandbox);
  if (PathExists(dir)) RemoveTree(dir);
}

void BaseRecord::ForgetProject(const std::string& project, const std::vector<std::string>& except) {
  for (const auto& sandbox : ListDir(BasesDir())) {
    if (std::find(except.begin(), except.end(), sandbox) != except.end()) continue;
    std::string path = PathOf(sandbox, project);
    if (PathExists(path)) ::unlink(path.c_str());
  }
}

BaseRecord BaseRecord::Load(const std::string& sandbox, const std::string& project) {
  BaseRecord r;
  auto text = ReadFileIfExists(PathOf(sandbox, project));
  if (!text || text->rfind(kHeader, 0) != 0) return r;
  size_t eol = text->find('\n');
  if (eol == std::string::npos) return r;
  r.token_ = text->substr(std::string(kHeader).size(), eol - std::string(kHeader).size());
  for (const auto& rec : Split(text->substr(eol + 1), '\0')) {
    if (rec.empty()) continue;
    // kind exec digest cached size mtime ctime ino path
    std::vector<std::string> f;
    size_t at = 0;
    for (int i = 0; i < 8; ++i) {
      size_t tab = rec.find('\t', at);
      if (tab == std::string::npos) return BaseRecord();
      f.push_back(rec.substr(at, tab - at));
      at = tab + 1;
    }
    std::string path = rec.substr(at);
    Entry e;
    switch (f[0].empty() ? 0 : f[0][0]) {
      case 'f':
        e.version.kind = Version::kFile;
        break;
      case 'l':
        e.version.kind = Version::kSymlink;
        break;
      case 'o':
        e.version.kind = Version::kOther;
        break;
      default:
        e.version.kind = Version::kUnknown;
    }
    e.version.exec = f[1] == "1";
    e.version.digest = f[2];
    e.cached = f[3] == "1";
    auto size = ParseDecimal(f[4]), mtime = ParseDecimal(f[5]), ctime = ParseDecimal(f[6]),
         ino = ParseDecimal(f[7]);
    if (!size || !mtime || !ctime || !ino || !SafeComponents(path)) return BaseRecord();
    e.size = *size;
    e.mtime_ns = *mtime;
    e.ctime_ns = *ctime;
    e.ino = static_cast<uint64_t>(*ino);
    r.entries_[path] = e;
  }
  r.recorded_ = true;
  return r;
}

Version BaseRecord::At(const std::string& path) const {
  Version v;
  if (!recorded_) {
    v.kind = Version::kUnknown;
    return v;
  }
  auto it = entries_.find(path);
  return it == entries_.end() ? v : it->second.version;
}

void BaseRecord::Set(const std::string& path, const Version& v, const struct stat* st) {
  if (v.kind == Version::kAbsent) {
    entries_.erase(path);
    return;
  }
  Entry e;
  e.version = v;
  if (st) {
    e.cached = true;
    e.size = st->st_size;
    e.mtime_ns = platform::ModifiedNs(*st);
    e.ctime_ns = platform::ChangedNs(*st);
    e.ino = st->st_ino;
  }
  entries_[path] = e;
}

void BaseRecord::Save(const std::string& sandbox, const std::string& project) const {
  std::string text = Cat(kHeader, token_, "\n");
  for (const auto& [path, e] : entries_) {
    text += Cat(KindLetter(e.version.kind), "\t", e.version.exec ? "1" : "0", "\t",
                e.version.digest, "\t", e.cached ? "1" : "0", "\t", e.size, "\t", e.mtime_ns, "\t",
                e.ctime_ns, "\t", e.ino, "\t", path);
    text += '\0';
  }
  MakeDirs(Cat(BasesDir(), "/", sandbox), 0700);
  AtomicWrite(PathOf(sandbox, project), text, 0600);
}

BaseRecord BaseRecord::Make(const std::string& host_dir, const std::vector<std::string>& paths,
                            const struct timespec& since, const BaseRecord& previous) {
  BaseRecord r;
  r.recorded_ = true;
  r.token_ = RandomNonce();
  r.Look(host_dir, paths, since, previous, /*named_absent_unknown=*/true);
  return r;
}

void BaseRecord::Refresh(const std::string& host_dir, const std::vector<std::string>& paths,
                         const struct timespec& since) {
  BaseRecord previous = *this;
  Look(host_dir, paths, since, previous, /*named_absent_unknown=*/false);
}

void BaseRecord::Look(const std::string& host_dir, const std::vector<std::string>& paths,
                      const struct timespec& since, const BaseRecord& previous,
                      bool named_absent_unknown) {
  Fd root(::open(host_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok()) {
    throw Error(kExitNoInput, Cat("cannot read ", host_dir, ": ", std::strerror(errno)));
  }
  int64_t since_ns = Nanos(since);
  Version unknown;
  unknown.kind = Version::kUnknown;
  for (const auto& path : paths) {
    auto parts = SafeComponents(path);
    if (!parts || parts->empty()) continue;
    std::string clean = Join(*parts, "/");
    struct stat st {};
    Fd parent = OpenParentBeneath(root.get(), *parts);
    if (!parent.ok() ||
        ::fstatat(parent.get(), parts->back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      // Named by the sandbox but not on the host (now): unknown; deleted by the sync: absent.
      Set(clean, named_absent_unknown ? unknown : Version());
      continue;
    }
    if (platform::ChangedNs(st) >= since_ns) {
      Set(clean, unknown);  // changed while the copy was being made
      continue;
    }
    auto old = previous.entries_.find(clean);
    if (old != previous.entries_.end() && old->second.cached && old->second.size == st.st_size &&
        old->second.mtime_ns == platform::ModifiedNs(st) &&
        old->second.ctime_ns == platform::ChangedNs(st) && old->second.ino == st.st_ino) {
      entries_[clean] = old->second;
      continue;
    }
    struct stat seen {};
    Version v = HostVersion(root.get(), clean, &seen);
    if (v.kind == Version::kAbsent || v.kind == Version::kUnknown ||
        platform::ChangedNs(seen) >= since_ns) {
      Set(clean, v.kind == Version::kAbsent && !named_absent_unknown ? Version() : unknown);
    } else {
      Set(clean, v, &seen);
    }
  }
}

struct timespec CopyStarts() {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &t);
  int64_t ns = Nanos(t) - 20'000'000;  // a margin of a few ticks (4 ms at 250 Hz)
  t.tv_sec = static_cast<time_t>(ns / 1000000000);
  t.tv_nsec = static_cast<long>(ns % 1000000000);
  return t;
}

}  // namespace ss
