#include "update.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "config.hpp"
#include "digest.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "http.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "strings.hpp"
#include "version.hpp"

namespace ss {
namespace {

constexpr auto kCheckInterval = std::chrono::hours(24);

std::string FeedUrl(const std::string& feed, std::string_view rest) {
  std::string base = feed;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return Cat(base, "/", rest);
}

[[noreturn]] void BadRelease(const std::string& what, std::vector<std::string> details = {}) {
  throw Error(kExitDataErr, what, std::move(details),
              {"the installed version was not changed; try again later or report it to the "
               "release's publisher"});
}

// Every regular file under dir, relative to it; anything else is a bad release.
void Walk(const std::string& dir, const std::string& rel, std::vector<std::string>& out) {
  DIR* d = ::opendir(Cat(dir, "/", rel).c_str());
  if (!d) BadRelease(Cat("cannot read the unpacked release: ", std::strerror(errno)));
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = rel.empty() ? name : Cat(rel, "/", name);
    struct stat st;
    if (::lstat(Cat(dir, "/", path).c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      Walk(dir, path, out);
    } else if (S_ISREG(st.st_mode)) {
      out.push_back(path);
    } else {
      ::closedir(d);
      BadRelease(Cat("the release archive holds '", path, "', which is not a regular file"));
    }
  }
  ::closedir(d);
}

bool IsReleaseFile(const std::string& rel) {
  if (rel == "bin/ss") return true;
  std::string_view tool = std::string_view(rel).substr(rel.rfind("libexec/ss/", 0) == 0 ? 11 : 0);
  return rel.rfind("libexec/ss/ss-", 0) == 0 &&
         NameOf(tool.substr(3), "a-z", "a-z0-9-", tool.size());
}

// Copies src to dst (created 0755, synced); throws ss::Error(74).
void CopyExecutable(const std::string& src, const std::string& dst) {
  std::string data = ReadFile(src);
  Fd fd(::open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0755));
  if (!fd.ok()) throw Error(kExitIoErr, Cat("cannot write '", dst, "': ", std::strerror(errno)));
  WriteAll(fd.get(), data, dst);
  if (::fchmod(fd.get(), 0755) != 0 || ::fsync(fd.get()) != 0) {
    throw Error(kExitIoErr, Cat("cannot write '", dst, "': ", std::strerror(errno)));
  }
}

void SyncDir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.ok()) ::fsync(fd.get());
}

std::string CurrentVersion() {
  // Tests pretend to be an older release without rebuilding.
  if (const char* v = std::getenv("SS_UPDATE_CURRENT_VERSION"); v && *v) return v;
  return std::string(Version());
}

bool IsNewer(const std::string& candidate) {
  auto a = ParseSemVer(candidate);
  auto b = ParseSemVer(CurrentVersion());
  return a && b && CompareSemVer(*a, *b) > 0;
}

}  // namespace

std::optional<SemVer> ParseSemVer(std::string_view text) {
  std::string_view s = Trim(text);
  if (!s.empty() && s[0] == 'v') s.remove_prefix(1);
  if (auto plus = s.find('+'); plus != std::string_view::npos) {
    if (!NameOf(s.substr(plus + 1), "0-9A-Za-z.-", "0-9A-Za-z.-", s.size())) return std::nullopt;
    s = s.substr(0, plus);
  }
  SemVer v;
  if (auto dash = s.find('-'); dash != std::string_view::npos) {
    v.pre = std::string(s.substr(dash + 1));
    if (!NameOf(v.pre, "0-9A-Za-z.-", "0-9A-Za-z.-", v.pre.size())) return std::nullopt;
    s = s.substr(0, dash);
  }
  auto parts = Split(s, '.');
  if (parts.size() != 3) return std::nullopt;
  int* fields[3] = {&v.major, &v.minor, &v.patch};
  for (size_t i = 0; i < 3; ++i) {
    const std::string& p = parts[i];
    // No leading zeros, at most nine digits.
    if (p.empty() || p.size() > 9 || !OnlyChars(p, "0-9") || (p.size() > 1 && p[0] == '0')) {
      return std::nullopt;
    }
    *fields[i] = std::stoi(p);
  }
  return v;
}

int CompareSemVer(const SemVer& a, const SemVer& b) {
  if (a.major != b.major) return a.major < b.major ? -1 : 1;
  if (a.minor != b.minor) return a.minor < b.minor ? -1 : 1;
  if (a.patch != b.patch) return a.patch < b.patch ? -1 : 1;
  if (a.pre == b.pre) return 0;
  if (a.pre.empty()) return 1;  // a release is newer than its pre-releases
  if (b.pre.empty()) return -1;
  auto pa = Split(a.pre, '.');
  auto pb = Split(b.pre, '.');
  auto numeric = [](const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  };
  for (size_t i = 0; i < pa.size() && i < pb.size(); ++i) {
    if (pa[i] == pb[i]) continue;
    bool na = numeric(pa[i]), nb = numeric(pb[i]);
    if (na && nb) {
      if (pa[i].size() != pb[i].size()) return pa[i].size() < pb[i].size() ? -1 : 1;
      return pa[i] < pb[i] ? -1 : 1;
    }
    if (na != nb) return na ? -1 : 1;  // numeric identifiers sort first
    return pa[i] < pb[i] ? -1 : 1;
  }
  if (pa.size() == pb.size()) return 0;
  return pa.size() < pb.size() ? -1 : 1;
}

std::string ReleaseArchiveName() { return Cat("ss-linux-", HostMachine(), ".tar.gz"); }

Release FetchLatestRelease(const std::string& feed) {
  HttpRequest req;
  req.url = FeedUrl(feed, "latest");
  req.timeout = std::chrono::seconds(20);
  HttpResponse resp = HttpFetch(req);
  if (resp.status != 200) {
    throw Error(kExitUnavailable,
                Cat("cannot check for updates: ", req.url, " answered HTTP ", resp.status));
  }
  std::string version(Trim(resp.body));
  if (!ParseSemVer(version)) {
    throw Error(
        kExitDataErr,
        Cat("the release feed's latest version is not a version: '", version.substr(0, 40), "'"),
        {}, {Cat("check updates.feed in config.yaml (", feed, ")")});
  }
  Release r;
  r.version = version;
  r.archive_url = FeedUrl(feed, Cat(version, "/", ReleaseArchiveName()));
  r.checksums_url = FeedUrl(feed, Cat(version, "/checksums.txt"));
  return r;
}

std::optional<std::string> ChecksumFor(std::string_view checksums, std::string_view file) {
  for (const auto& line : SplitLines(checksums)) {
    std::string_view l = Trim(line);
    size_t space = l.find(' ');
    if (space == std::string_view::npos) continue;
    std::string_view hex = l.substr(0, space);
    std::string_view name = Trim(l.substr(space));
    if (!name.empty() && name[0] == '*') name.remove_prefix(1);  // binary-mode marker
    if (name == file && hex.size() == 64) return ToLower(hex);
  }
  return std::nullopt;
}

void StageRelease(const Release& r, const std::string& dir) {
  std::string parent = Dirname(dir);
  MakeDirs(parent, 0700);
  TempDir work(parent, "download.");
  std::string archive = Cat(work.path(), "/", ReleaseArchiveName());
  std::string sums = Cat(work.path(), "/checksums.txt");
  HttpDownload(r.checksums_url, sums, std::chrono::minutes(1));
  HttpDownload(r.archive_url, archive);
  auto want = ChecksumFor(ReadFile(sums), ReleaseArchiveName());
  if (!want)
    BadRelease(Cat("checksums.txt of ", r.version, " does not list ", ReleaseArchiveName()));
  std::string got = Sha256FileHex(archive);
  if (got != *want) {
    BadRelease(Cat("checksum mismatch for ", ReleaseArchiveName(), " ", r.version),
               {Cat("  expected ", *want), Cat("  got      ", got)});
  }
  std::string tree = Cat(work.path(), "/tree");
  MakeDirs(tree, 0700);
  ProcessResult x = Run({"tar", "-xzf", archive, "-C", tree, "--no-same-owner"});
  if (!x.ok()) BadRelease(Cat("cannot unpack ", ReleaseArchiveName()), {Cat("  ", Trim(x.err))});
  std::vector<std::string> files;
  Walk(tree, "", files);
  bool has_ss = false;
  for (const auto& f : files) {
    if (!IsReleaseFile(f)) BadRelease(Cat("the release archive holds an unexpected file: ", f));
    if (f == "bin/ss") has_ss = true;
  }
  if (!has_ss) BadRelease("the release archive has no bin/ss");
  ProcessOptions po;
  po.timeout = std::chrono::seconds(10);
  po.unlisted = true;  // the release being installed
  ProcessResult v = Run({Cat(tree, "/bin/ss"), "--version"}, po);
  if (!v.ok() || v.out.rfind(Cat("ss ", r.version, " "), 0) != 0) {
    BadRelease(Cat("the downloaded ss does not run as version ", r.version),
               {Cat("  ss --version: ", Trim(v.out.empty() ? v.err : v.out))});
  }
  AtomicWrite(Cat(tree, "/VERSION"), r.version + "\n", 0600);
  if (::rename(tree.c_str(), dir.c_str()) != 0) {
    throw Error(kExitIoErr, Cat("cannot stage the release in '", dir, "': ", std::strerror(errno)));
  }
}

std::vector<std::string> StagedFiles(const std::string& dir) {
  std::vector<std::string> files;
  Walk(dir, "", files);
  std::vector<std::string> out;
  for (const auto& f : files) {
    if (IsReleaseFile(f)) out.push_back(f);
  }
  return out;
}

void InstallStaged(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> files = StagedFiles(dir);
  std::vector<std::pair<std::string, std::string>> written;  // temp, target
  try {
    for (const auto& f : files) {
      std::string target = Cat(prefix, "/", f);
      if (!IsDirectory(Dirname(target))) {
        throw Error(kExitIoErr,
                    Cat("cannot install ", f, ": '", Dirname(target), "' is not a directory"));
      }
      std::string temp = Cat(Dirname(target), "/.", Basename(target), ".ss-update");
      written.emplace_back(temp, target);
      CopyExecutable(Cat(dir, "/", f), temp);
    }
  } catch (Error& e) {
    for (const auto& [temp, target] : written) ::unlink(temp.c_str());
    e.Hint("the installed version was not changed");
    if (::access(prefix.c_str(), W_OK) != 0)
      e.Hint(Cat("'", prefix, "' needs root: sudo ss update"));
    throw;
  }
  for (const auto& [temp, target] : written) {
    if (::rename(temp.c_str(), target.c_str()) != 0) {
      throw Error(kExitIoErr, Cat("cannot replace '", target, "': ", std::strerror(errno)));
    }
  }
  for (const auto& [temp, target] : written) SyncDir(Dirname(target));
}

std::string InstallPrefix() {
  std::string dir = ExecutableDir();
  if (Basename(dir) == "ss" && Basename(Dirname(dir)) == "libexec") return Dirname(Dirname(dir));
  return Dirname(dir);
}

std::string UpdateDir() { return StateDir() + "/update"; }

void UpdateOnLaunch(const std::string& ss_update_path) {
  try {
    if (const char* no = std::getenv("SS_NO_UPDATE"); no && *no) return;
    Config config = Config::Load();
    if (!config.UpdatesEnabled()) return;
    std::string dir = UpdateDir();
    std::string staged = dir + "/staged";
    if (auto version = ReadFileIfExists(staged + "/VERSION")) {
      std::string v(Trim(*version));
      auto lock = FileLock::TryLock(dir + "/lock");
      if (lock && !IsNewer(v)) {
        RemoveTree(staged);
      } else if (lock && config.Bool("updates.auto_apply")) {
        try {
          InstallStaged(staged, InstallPrefix());
          Note(Cat("Updated to ", v));
        } catch (const Error& e) {
          Warn(Cat("could not install the update to ", v, ": ", e.what()));
        }
        RemoveTree(staged);
      } else if (IsNewer(v) && !config.Bool("updates.auto_apply")) {
        // Only telling needs no lock: a check still finishing in the background holds it.
        Note(Cat("Update available: ", CurrentVersion(), " -> ", v));
        Note("Run 'ss update' to install.");
      }
    }
    std::string stamp = dir + "/last-check";
    struct stat st;
    if (::stat(stamp.c_str(), &st) == 0) {
      auto last = std::chrono::system_clock::from_time_t(st.st_mtime);
      if (std::chrono::system_clock::now() - last < kCheckInterval) return;
    }
    MakeDirs(dir, 0700);
    // A stamp, not data: touched without the fsyncs of AtomicWrite (they cost the launch).
    Fd fd(::open(stamp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.ok()) return;
    ::futimens(fd.get(), nullptr);
    ProcessOptions o;
    o.new_session = true;
    o.unlisted = true;  // ss-update itself
    Spawn({ss_update_path, "--background"}, dir + "/log", o);
  } catch (const std::exception& e) {
    Debug(Cat("update check on launch: ", e.what()));
  }
}

}  // namespace ss
