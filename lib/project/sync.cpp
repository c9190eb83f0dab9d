#include "sync.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <set>

#include "apply_base.hpp"
#include "config.hpp"
#include "crossing.hpp"
#include "digest.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "project.hpp"
#include "rescue.hpp"
#include "resources.hpp"
#include "sandbox.hpp"
#include "ssh.hpp"
#include "strings.hpp"
#include "timefmt.hpp"
#include "transfer.hpp"
#include "working_copy.hpp"

namespace ss {
namespace {

// The most a listing of changed files from the sandbox may hold (a million long names).
constexpr int64_t kMaxListing = 256LL << 20;

ExecResult Checked(SshConnection& conn, const std::vector<std::string>& argv, std::string_view what,
                   const ExecOptions& options = {}) {
  ExecResult r = conn.Exec(argv, options);
  if (r.over_limit) {
    throw Error(kExitRemote,
                Cat(what, ": ", argv[0], " in the sandbox printed more than ",
                    options.max_output >> 20, " MiB"),
                {},
                {"nothing was written on the host; the sandbox's tools may have been replaced"});
  }
  if (r.status != 0) {
    throw Error(
        kExitRemote, Cat(what, ": ", argv[0], " exited with status ", r.status), {},
        {std::string(Trim(r.err)).empty() ? "see the sandbox's logs" : std::string(Trim(r.err))});
  }
  return r;
}

// Every comparison of two trees in the sandbox: what rsync would change to make `to` like `from`
// (a dry run, itemized on stdout). Files are compared by content (--checksum), never by size and
// time alone: a file's time comes from a clock that advances in ticks of milliseconds, so an edit
// of the same size made in the same tick on the other side would look unchanged (and be
// overwritten, or its base misrecorded). Without `only`, the whole tree less the excluded paths;
// with it, only those paths (one missing on a side counts as deleted).
//
// Permissions are compared by the executable bit alone (--executability): that is what apply
// brings, so it is what counts as a change. The listing is bounded (a replaced rsync could print
// without end).
ExecResult Compare(SshConnection& conn, const std::string& from, const std::string& to,
                   std::string_view what, const std::vector<std::string>* only = nullptr) {
  std::vector<std::string> argv = {"rsync",           "-a",         "--no-perms",
                                   "--executability", "--checksum", "--dry-run"};
  ExecOptions o;
  o.max_output = kMaxListing;
  if (only) {
    argv.insert(argv.end(), {"--from0", "--files-from=-", "--delete-missing-args"});
    o.input = "";
    for (const auto& p : *only) *o.input += p + '\0';
  } else {
    argv.insert(argv.end(), {"--delete", Cat("--exclude-from=", kSyncExcludeFile)});
  }
  argv.insert(argv.end(), {"--out-format=%i %n", from + "/", to + "/"});
  return Checked(conn, argv, what, o);
}

// rsync prints a name's unprintable bytes (a line break, say) as \#ooo, in octal.
std::string Unescape(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '\\' && i + 5 <= name.size() && name[i + 1] == '#' &&
        OnlyChars(name.substr(i + 2, 3), "0-7")) {
      out += static_cast<char>(((name[i + 2] - '0') << 6) | ((name[i + 3] - '0') << 3) |
                               (name[i + 4] - '0'));
      i += 4;
    } else {
      out += name[i];
    }
  }
  return out;
}

std::string Plural(size_t n, std::string_view one, std::string_view many) {
  return Cat(n, " ", n == 1 ? one : many);
}

}  // namespace

bool ItemizedChange::mode() const {
  return !directory() && !deleting() && code.size() >= 6 && code[5] == 'p';
}

bool ItemizedChange::content() const {
  if (directory()) return false;
  if (deleting()) return true;
  return !code.empty() && (code[0] == '>' || code[0] == 'c' || code[0] == '<' || code[0] == 'h');
}

std::vector<ItemizedChange> ParseItemized(std::string_view out) {
  std::vector<ItemizedChange> changes;
  for (const auto& line : SplitLines(out)) {
    if (line.size() < 13 || line[11] != ' ') continue;
    ItemizedChange c;
    c.code = std::string(Trim(line.substr(0, 11)));
    c.path = Unescape(line.substr(12));
    if (c.path == "./") continue;
    changes.push_back(std::move(c));
  }
  return changes;
}

std::vector<std::string> FindPruneArgs(const std::vector<std::string>& patterns) {
  std::vector<std::string> terms;
  for (std::string p : patterns) {
    bool dir_only = false;
    if (p.size() > 1 && p.back() == '/') {
      p.pop_back();
      dir_only = true;
    }
    // Rules ("+ x", "- x", "!") and anchored or path patterns are left to rsync.
    if (p.empty() || p.find('/') != std::string::npos || p.find("**") != std::string::npos ||
        p.rfind("+ ", 0) == 0 || p.rfind("- ", 0) == 0 || p == "!") {
      continue;
    }
    if (!terms.empty()) terms.push_back("-o");
    if (dir_only) {
      terms.insert(terms.end(), {"(", "-type", "d", "-name", p, ")"});
    } else {
      terms.insert(terms.end(), {"-name", p});
    }
  }
  if (terms.empty()) return {};
  std::vector<std::string> args = {"("};
  args.insert(args.end(), terms.begin(), terms.end());
  args.insert(args.end(), {")", "-prune", "-o"});
  return args;
}

std::vector<std::string> AtRisk(const std::vector<ItemizedChange>& plan,
                                const std::vector<std::string>& changed) {
  std::set<std::string> mine(changed.begin(), changed.end());
  std::vector<std::string> out;
  for (const auto& c : plan) {
    if (!c.change() || (c.created() && !c.deleting())) continue;
    if (mine.count(c.path)) out.push_back(c.path);
  }
  return out;
}

std::vector<std::string> UnappliedChanges(SshConnection& conn, const Config& config,
                                          const std::string& project,
                                          const std::vector<std::string>* only) {
  std::string copy = CopyDir(project), base = BaseDir(project);
  std::vector<std::string> changed;
  if (only && only->empty()) return changed;
  ExcludeRules exclude(SyncExcludes(config));
  auto kept = [&](const std::string& path) {
    auto parts = SafeComponents(path);
    return parts && !parts->empty() && !exclude.Why(*parts, false);
  };
  if (conn.Exec({"test", "-d", base}).status == 0) {
    ExecResult r =
        Compare(conn, copy, base, Cat("cannot compare the working copy of '", project, "'"), only);
    for (const auto& c : ParseItemized(r.out)) {
      if (c.change() && kept(c.path)) changed.push_back(c.path);
    }
    return changed;
  }
  // A copy made by an older ss: what changed since the last sync (all of it, without a record).
  std::string stamp = SyncStamp(project);
  bool have_stamp = conn.Exec({"test", "-e", stamp}).status == 0;
  std::vector<std::string> find = {"find", copy, "-mindepth", "1"};
  for (auto& a : FindPruneArgs(SyncExcludes(config))) find.push_back(a);
  find.insert(find.end(), {"!", "-type", "d"});
  if (have_stamp) find.insert(find.end(), {"-cnewer", stamp});
  find.insert(find.end(), {"-printf", "%P\\0"});
  ExecResult found = Checked(conn, find, Cat("cannot look at the working copy of '", project, "'"));
  for (auto& p : Split(found.out, '\0')) {
    if (!p.empty() && kept(p)) changed.push_back(p);
  }
  return changed;
}

SyncReport SyncWorkingCopy(Sandbox& sandbox, SshConnection& conn, const Config& config,
                           const CopySource& source, const SyncOptions& options) {
  const std::string& project = source.name;
  SyncReport report;
  report.created = PrepareWorkingCopy(conn, config, source, sandbox.name());
  std::string src = SourceDir(project), copy = CopyDir(project), stamp = SyncStamp(project);

  // The plan first; the copy's own changes are looked at only where the plan would replace them.
  ExecResult plan = Compare(conn, src, copy, Cat("cannot plan the sync of '", project, "'"));
  report.changes = ParseItemized(plan.out);
  std::vector<std::string> replaced;
  for (const auto& c : report.changes) {
    if (c.change() && !(c.created() && !c.deleting())) replaced.push_back(c.path);
  }
  report.at_risk = AtRisk(report.changes, UnappliedChanges(conn, config, project, &replaced));
  if (options.dry_run) return report;
  if (!report.at_risk.empty() && !options.force) {
    std::vector<std::string> details;
    for (size_t i = 0; i < report.at_risk.size() && i < 20; ++i) {
      details.push_back(Cat("  ", Printable(report.at_risk[i])));
    }
    if (report.at_risk.size() > 20)
      details.push_back(Cat("  ... and ", report.at_risk.size() - 20, " more"));
    throw Error(
        kExitFailure,
        Cat("sync would delete or overwrite ", Plural(report.at_risk.size(), "file", "files"),
            " changed in the working copy of '", project, "'"),
        details,
        {Cat("see the changes: ss diff ", source.word),
         Cat("keep them: ss apply ", source.word, " (brings what only the sandbox changed to the ",
             source.folder() ? "folder)" : "host project)"),
         Cat("replace them anyway, saved first: ss sync ", source.word, " --force")});
  }
  if (!report.at_risk.empty()) {
    // Saved on the host before anything is replaced: exactly those files.
    std::vector<std::string> paths;
    for (const auto& f : report.at_risk) paths.push_back(Cat(project, "/", f));
    report.saved_to = RescueToHost(conn, sandbox.name(), Cat(project, "-sync"), paths);
  }
  const std::string& host_dir = source.host_dir;
  BaseRecord record = CurrentBase(conn, sandbox.name(), project);
  bool base_dir = record.recorded() && conn.Exec({"test", "-d", BaseDir(project)}).status == 0;
  struct timespec since = CopyStarts();
  if (!report.changes.empty()) {
    // Exactly what the plan named, each file copied whatever its time says; what changed on the
    // host since the plan waits for the next sync (its base is not touched either).
    std::vector<std::string> argv = {"rsync",          "-a",
                                     "--ignore-times", "--from0",
                                     "--files-from=-", "--delete-missing-args",
                                     "--force",        "--out-format=%i %n",
                                     src + "/",        copy + "/"};
    ExecOptions o;
    o.input = "";
    for (const auto& c : report.changes) {
      std::string_view path = c.path;
      if (c.directory()) path.remove_suffix(1);  // "dir/" would be a folder to copy into
      *o.input += Cat(path, '\0');
    }
    ExecResult done = conn.Exec(argv, o);
    // 24: a file vanished on the host since the plan; the next sync sees it.
    if (done.status != 0 && done.status != 24) {
      throw Error(
          kExitRemote, Cat("cannot sync '", project, "': rsync exited with status ", done.status),
          {}, {Trim(done.err).empty() ? "see the sandbox's logs" : std::string(Trim(done.err))});
    }
    report.changes = ParseItemized(done.out);
    Checked(conn, {"touch", stamp}, "cannot record the sync");
  }
  if (!base_dir) {
    RecordBase(conn, sandbox.name(), project, host_dir, since);
  } else if (!report.changes.empty()) {
    std::vector<std::string> files, all;
    for (const auto& c : report.changes) {
      std::string_view path = c.path;
      if (c.directory()) path.remove_suffix(1);
      all.emplace_back(path);
      if (!c.directory()) files.push_back(c.path);
    }
    AdvanceSandboxBase(conn, project, all, SourceDir(project));
    record.Refresh(host_dir, files, since);
    record.Save(sandbox.name(), project);
  }
  return report;
}

namespace {

// What changed in the copy against the source, as rsync sees it (excluded paths left out, if
// the sandbox's rsync obeys): created, modified and deleted files, and changes of the executable
// bit.
std::vector<ItemizedChange> CopyChanges(SshConnection& conn, const std::string& project) {
  ExecResult r = Compare(conn, CopyDir(project), SourceDir(project),
                         Cat("cannot compare the working copy of '", project, "'"));
  std::vector<ItemizedChange> out;
  for (auto& c : ParseItemized(r.out)) {
    if (c.change()) out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::string DiffStat(std::string_view diff) {
  struct Entry {
    std::string path;
    int add = 0, del = 0;
    bool binary = false;
    bool mode_only = false;  // until a diff of its content follows
  };
  std::vector<Entry> entries;
  for (const auto& line : SplitLines(diff)) {
    if (line.rfind("+++ b/", 0) == 0) {
      if (!entries.empty()) entries.back().path = line.substr(6);
    } else if (line.rfind("--- a/", 0) == 0) {
      if (entries.empty() || !entries.back().mode_only || entries.back().path != line.substr(6)) {
        entries.push_back({line.substr(6)});
      }
      entries.back().mode_only = false;
    } else if (line.rfind("mode change ", 0) == 0) {
      // "mode change 644 => 755 PATH": a file of its own until its content's lines follow.
      auto words = Split(line, ' ');
      if (words.size() >= 6) {
        size_t at = Cat("mode change ", words[2], " => ", words[4], " ").size();
        entries.push_back({line.substr(at)});
        entries.back().mode_only = true;
      }
    } else if (line.rfind("Binary files a/", 0) == 0) {
      auto end = line.find(" and b/");
      std::string path = line.substr(15, end == std::string::npos ? std::string::npos : end - 15);
      if (entries.empty() || !entries.back().mode_only || entries.back().path != path) {
        entries.push_back({path});
      }
      entries.back().mode_only = false;
      entries.back().binary = true;
    } else if (!entries.empty() && !line.empty() && line[0] == '+') {
      ++entries.back().add;
    } else if (!entries.empty() && !line.empty() && line[0] == '-') {
      ++entries.back().del;
    }
  }
  size_t width = 0;
  int adds = 0, dels = 0;
  for (const auto& e : entries) width = std::max(width, e.path.size());
  std::string out;
  for (const auto& e : entries) {
    out += Cat(" ", e.path, std::string(width - e.path.size(), ' '), " | ");
    if (e.binary) {
      out += "Bin\n";
      continue;
    }
    int total = e.add + e.del, scale = std::max(1, (total + 39) / 40);
    out += Cat(total, total ? " " : "", std::string(e.add / scale, '+'),
               std::string(e.del / scale, '-'), "\n");
    adds += e.add;
    dels += e.del;
  }
  out += Cat(" ", Plural(entries.size(), "file changed", "files changed"), ", ",
             Plural(adds, "insertion(+)", "insertions(+)"), ", ",
             Plural(dels, "deletion(-)", "deletions(-)"), "\n");
  return out;
}

char PlannedChange::Mark() const {
  if (action == Action::kConflict) return 'C';
  if (copy.kind == Version::kAbsent) return 'D';
  if (host.kind == Version::kAbsent) return 'A';
  return 'M';
}

size_t ApplyPlan::Count(Action a) const {
  return static_cast<size_t>(std::count_if(changes.begin(), changes.end(),
                                           [a](const PlannedChange& c) { return c.action == a; }));
}

ApplyPlan PlanApply(SshConnection& conn, const Config& config, const std::string& sandbox,
                    const CopySource& copy, const std::string& source) {
  const std::string &project = copy.name, &host_dir = copy.host_dir;
  ApplyPlan plan;
  plan.host_dir = host_dir;
  plan.exclude = ExcludeRules(SyncExcludes(config));
  plan.limit = {config.Int("sync.max_size"), source};
  Fd root(::open(host_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok()) throw Error(kExitNoInput, Cat("cannot read ", host_dir, ": no such directory"));
  plan.base = CurrentBase(conn, sandbox, project);
  std::set<std::string> files;
  for (const auto& c : CopyChanges(conn, project)) {
    auto parts = SafeComponents(c.path);
    if (!parts || parts->empty()) {
      plan.refused.push_back({c.path, "an absolute name or one with '..'"});
      continue;
    }
    // Deletions too: the host's .git and excluded files are not the copy's to remove.
    if (auto why = plan.exclude.Why(*parts, false)) {
      plan.refused.push_back({c.path, *why});
      continue;
    }
    PlannedChange p;
    p.path = Join(*parts, "/");
    if (!c.deleting()) files.insert(p.path);
    p.copy.kind = c.deleting() ? Version::kAbsent : Version::kUnknown;  // until it arrives
    plan.changes.push_back(std::move(p));
  }
  if (!files.empty()) {
    std::string list;
    for (const auto& f : files) list += f + '\0';
    // POSIX format: times keep their nanoseconds, so an applied file matches its copy for the
    // next comparison (which is to the nanosecond). Sparse files cross as their data and a map.
    plan.archive = std::make_unique<ReceivedArchive>(
        conn,
        std::vector<std::string>{"tar", "-C", CopyDir(project), "--format=posix",
                                 "--hard-dereference", "--sparse", "-cf", "-", "--no-recursion",
                                 "--null", "--verbatim-files-from", "-T", "-"},
        list, plan.limit);
    if (plan.archive->status() != 0) {
      std::string said(Trim(plan.archive->error()));
      bool changing = said.find("No such file") != std::string::npos ||
                      said.find("file changed as we read it") != std::string::npos;
      throw Error(changing ? kExitTempFail : kExitRemote,
                  changing ? Cat("the working copy of '", project, "' changed while it was read")
                           : Cat("cannot read the changed files of '", project,
                                 "' (tar exited with status ", plan.archive->status(), ")"),
                  {},
                  {changing       ? Cat("nothing was applied; run ss apply ", copy.word, " again")
                   : said.empty() ? "see the sandbox's logs"
                                  : said});
    }
    plan.entries = plan.archive->Index(source);
  }
  // The copy's versions, from what arrived (the last entry of a name wins, as when written).
  std::map<std::string, Version> arrived;
  for (const auto& e : plan.entries) {
    auto parts = SafeComponents(e.path);
    if (!parts || parts->empty()) continue;
    Version v;
    if (e.type == TarEntry::kFile) {
      v.kind = Version::kFile;
      v.exec = (e.mode & 0111) != 0;
      v.digest = EntrySha256Hex(plan.archive->fd(), e, "the archive");
    } else if (e.type == TarEntry::kSymlink) {
      v.kind = Version::kSymlink;
      v.digest = Sha256Hex(e.link);
    } else {
      v.kind = Version::kOther;
    }
    arrived[Join(*parts, "/")] = v;
  }
  std::vector<PlannedChange> changes;
  for (auto& p : plan.changes) {
    if (auto it = arrived.find(p.path); it != arrived.end()) p.copy = it->second;
    if (p.copy.kind == Version::kUnknown) {
      plan.refused.push_back({p.path, "asked for, but not in the sandbox's archive"});
      continue;
    }
    p.host = HostVersion(root.get(), p.path);
    p.base = plan.base.At(p.path);
    p.action = Decide(p.base, p.host, p.copy);
    changes.push_back(std::move(p));
  }
  plan.changes = std::move(changes);
  return plan;
}

namespace {

bool LooksBinary(std::string_view data) {
  return data.substr(0, 8000).find('\0') != std::string_view::npos;
}

// Reads `n` bytes of `fd` from `offset`.
std::string ReadRange(int fd, int64_t offset, int64_t n) {
  std::string out(static_cast<size_t>(n), '\0');
  int64_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, out.data() + done, static_cast<size_t>(n - done), offset + done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw Error(kExitIoErr, "cannot read the archive from the sandbox");
    done += r;
  }
  return out;
}

std::optional<std::string> ReadBeneath(int root, const std::string& path, struct stat* st) {
  auto parts = SafeComponents(path);
  if (!parts || parts->empty()) return std::nullopt;
  Fd parent = OpenParentBeneath(root, *parts);
  if (!parent.ok()) return std::nullopt;
  Fd fd(::openat(parent.get(), parts->back().c_str(),
                 O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.ok() || ::fstat(fd.get(), st) != 0 || !S_ISREG(st->st_mode)) return std::nullopt;
  return ReadRange(fd.get(), 0, st->st_size);
}

// Merges the conflicts of `plan` it can (three text files: base, host, copy) into the host
// project with git merge-file; the base comes from the sandbox and is used only when its digest
// is the recorded one. Returns the paths written, each with whether it holds conflict markers.
std::vector<std::pair<std::string, bool>> MergeConflicts(SshConnection& conn,
                                                         const std::string& project,
                                                         const ApplyPlan& plan, int root,
                                                         const std::string& host_dir,
                                                         const std::string& source) {
  std::map<std::string, const TarEntry*> copies;
  for (const auto& e : plan.entries) {
    auto parts = SafeComponents(e.path);
    if (parts && !parts->empty()) copies[Join(*parts, "/")] = &e;
  }
  std::vector<const PlannedChange*> wanted;
  std::string list;
  for (const auto& p : plan.changes) {
    if (p.action != Action::kConflict || p.base.kind != Version::kFile ||
        p.host.kind != Version::kFile || p.copy.kind != Version::kFile || !copies.count(p.path) ||
        copies[p.path]->sparse) {
      continue;
    }
    wanted.push_back(&p);
    list += p.path + '\0';
  }
  std::vector<std::pair<std::string, bool>> out;
  if (wanted.empty()) return out;
  ReceivedArchive bases(
      conn,
      {"tar", "-C", BaseDir(project), "--format=posix", "-cf", "-", "--no-recursion", "--null",
       "--verbatim-files-from", "--ignore-failed-read", "-T", "-"},
      list, plan.limit);
  std::map<std::string, std::string> base_text;
  for (const auto& e : bases.Index(source)) {
    auto parts = SafeComponents(e.path);
    if (!parts || parts->empty() || e.type != TarEntry::kFile || e.sparse) continue;
    base_text[Join(*parts, "/")] = ReadRange(bases.fd(), e.data_offset, e.size);
  }
  TempDir work;
  for (const PlannedChange* p : wanted) {
    auto b = base_text.find(p->path);
    if (b == base_text.end() || Sha256Hex(b->second) != p->base.digest) continue;
    const TarEntry& ce = *copies[p->path];
    std::string theirs = ReadRange(plan.archive->fd(), ce.data_offset, ce.size);
    struct stat st {};
    auto ours = ReadBeneath(root, p->path, &st);
    if (!ours || Sha256Hex(*ours) != p->host.digest) continue;  // changed since it was looked at
    if (LooksBinary(b->second) || LooksBinary(theirs) || LooksBinary(*ours)) continue;
    AtomicWrite(work.path() + "/host", *ours, 0600);
    AtomicWrite(work.path() + "/base", b->second, 0600);
    AtomicWrite(work.path() + "/sandbox", theirs, 0600);
    ProcessResult r = Run({"git", "merge-file", "-p", "-L", "host", "-L", "base", "-L", "sandbox",
                           work.path() + "/host", work.path() + "/base", work.path() + "/sandbox"});
    if (r.timed_out || r.status > 127) continue;  // git's own failure: left as a conflict
    // Written as the host file was (its mode), through the crossing, beside it and renamed over.
    AtomicWrite(work.path() + "/merged", r.out, 0600);
    Fd merged(::open((work.path() + "/merged").c_str(), O_RDONLY | O_CLOEXEC));
    TarEntry e;
    e.path = p->path;
    e.type = TarEntry::kFile;
    e.typeflag = '0';
    e.mode = st.st_mode & 0777;
    e.size = static_cast<int64_t>(r.out.size());
    ::clock_gettime(CLOCK_REALTIME, &e.mtime);
    CrossingReport w = CrossInto(merged.get(), {e}, host_dir, {});
    if (!w.written.empty()) out.emplace_back(p->path, r.status != 0);
  }
  return out;
}

}  // namespace

namespace {

// One side of a path for the diff: a file's bytes written to `file`, or what it is otherwise
// ("symbolic link to X", "directory", "special file (not applied)", "none"), as ss showed it.
struct DiffSide {
  std::string what = "none";
  std::string file;  // a file's bytes, for diff(1)
  mode_t mode = 0;
};

DiffSide HostSide(int root, const std::string& path, const std::string& file) {
  DiffSide side;
  auto parts = SafeComponents(path);
  if (!parts || parts->empty()) return side;
  Fd parent = OpenParentBeneath(root, *parts);
  if (!parent.ok()) return side;
  const char* name = parts->back().c_str();
  struct stat st {};
  if (::fstatat(parent.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) return side;
  side.mode = st.st_mode & 07777;
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = ::readlinkat(parent.get(), name, target, sizeof target);
    side.what = Cat("symbolic link to ", std::string_view(target, n > 0 ? n : 0));
  } else if (S_ISDIR(st.st_mode)) {
    side.what = "directory";
  } else if (!S_ISREG(st.st_mode)) {
    side.what = "special file (not applied)";
  } else {
    struct stat read {};
    auto data = ReadBeneath(root, path, &read);
    if (!data) return side;
    AtomicWrite(file, *data, 0600);
    side.what = "file";
    side.file = file;
  }
  return side;
}

DiffSide CopySide(int archive, const TarEntry* e, const std::string& file) {
  DiffSide side;
  if (!e) return side;
  side.mode = e->mode & 07777;
  if (e->type == TarEntry::kSymlink) {
    side.what = Cat("symbolic link to ", e->link);
  } else if (e->type == TarEntry::kDirectory) {
    side.what = "directory";
  } else if (e->type != TarEntry::kFile) {
    side.what = "special file (not applied)";
  } else {
    Fd out(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!out.ok()) throw Error(kExitIoErr, Cat("cannot write ", file, ": ", std::strerror(errno)));
    ForEachRun(
        *e,
        [&](int64_t at, int64_t from, int64_t n) {
          std::string data = ReadRange(archive, from, n);
          if (::pwrite(out.get(), data.data(), data.size(), at) != static_cast<ssize_t>(n)) {
            throw Error(kExitIoErr, Cat("cannot write ", file, ": ", std::strerror(errno)));
          }
        },
        [](int64_t, int64_t) {});
    if (::ftruncate(out.get(), e->size) != 0) {
      throw Error(kExitIoErr, Cat("cannot write ", file, ": ", std::strerror(errno)));
    }
    side.what = "file";
    side.file = file;
  }
  return side;
}

}  // namespace

std::string PlanDiff(const ApplyPlan& plan) {
  std::map<std::string, const TarEntry*> copies;  // the last entry of a name wins
  for (const auto& e : plan.entries) {
    if (auto parts = SafeComponents(e.path); parts && !parts->empty()) {
      copies[Join(*parts, "/")] = &e;
    }
  }
  Fd root(::open(plan.host_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok()) {
    throw Error(kExitNoInput, Cat("cannot read ", plan.host_dir, ": no such directory"));
  }
  TempDir work(SpoolDir(), "diff.");
  std::string out;
  int n = 0;
  for (const auto& p : plan.changes) {
    if (p.action != Action::kTake && p.action != Action::kConflict) continue;
    // Names as the terminal shows them: a line break in one would make a header of its own.
    const std::string shown = Printable(p.path);
    if (p.action == Action::kConflict) {
      out += Cat("# conflict: ", shown,
                 " changed on the host and in the sandbox since the last sync\n");
    }
    auto copy = copies.find(p.path);
    DiffSide a = HostSide(root.get(), p.path, Cat(work.path(), "/a", n));
    DiffSide b = CopySide(plan.archive ? plan.archive->fd() : -1,
                          copy == copies.end() ? nullptr : copy->second, Cat(work.path(), "/b", n));
    ++n;
    if ((a.what != "file" && a.what != "none") || (b.what != "file" && b.what != "none")) {
      out +=
          Cat("--- a/", shown, "\n+++ b/", shown, "\n@@ -1 +1 @@\n-", a.what, "\n+", b.what, "\n");
    } else {
      if (a.what == "file" && b.what == "file" && a.mode != b.mode) {
        char line[64];
        std::snprintf(line, sizeof line, "mode change %o => %o ", a.mode, b.mode);
        out += Cat(line, shown, "\n");
      }
      std::string absent = Cat(work.path(), "/absent");
      ProcessResult r =
          Run({"diff", "-uN", "--label", Cat("a/", shown), "--label", Cat("b/", shown), "--",
               a.file.empty() ? absent : a.file, b.file.empty() ? absent : b.file});
      if (r.status > 1) {
        throw Error(kExitIoErr, Cat("cannot diff ", p.path, ": diff exited with status ", r.status),
                    {}, {std::string(Trim(r.err))});
      }
      out += r.out;
      for (const std::string& f : {a.file, b.file}) {
        if (!f.empty()) ::unlink(f.c_str());
      }
    }
    if (plan.limit.bytes >= 0 && static_cast<int64_t>(out.size()) > plan.limit.bytes) {
      throw TooLarge(plan.limit, "a diff");
    }
  }
  return out;
}

ApplyReport ApplyPlanned(SshConnection& conn, const std::string& sandbox,
                         const std::string& project, ApplyPlan& plan, const std::string& host_dir,
                         Resolution resolution, const std::string& source) {
  ApplyReport report;
  report.crossing.refused = plan.refused;
  Fd root(::open(host_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok()) throw Error(kExitNoInput, Cat("cannot read ", host_dir, ": no such directory"));
  auto taken = [&](const PlannedChange& p) {
    return p.action == Action::kTake ||
           (p.action == Action::kConflict && resolution == Resolution::kTheirs);
  };
  std::set<std::string> files, asked;
  std::vector<std::string> deleted;
  for (const auto& p : plan.changes) {
    if (p.copy.kind != Version::kAbsent) asked.insert(p.path);
    if (!taken(p)) continue;
    if (p.copy.kind == Version::kAbsent) {
      deleted.push_back(p.path);
    } else {
      files.insert(p.path);
    }
  }
  // What was asked for and stays on the host is left out; anything else the sandbox sent is
  // refused (and listed) by the crossing.
  std::vector<TarEntry> entries;
  for (const auto& e : plan.entries) {
    auto parts = SafeComponents(e.path);
    std::string clean = parts ? Join(*parts, "/") : "";
    if (asked.count(clean) && !files.count(clean)) continue;
    entries.push_back(e);
  }
  std::set<std::string> done;
  if (!entries.empty()) {  // also when nothing is taken: what the sandbox sent unasked is listed
    CrossingOptions options;
    options.only = &files;
    options.exclude = &plan.exclude;
    options.exec_bit_only = true;
    CrossingReport written = CrossInto(plan.archive->fd(), entries, host_dir, options);
    report.crossing.written = std::move(written.written);
    report.crossing.bytes = written.bytes;
    report.crossing.refused.insert(report.crossing.refused.end(), written.refused.begin(),
                                   written.refused.end());
    done.insert(report.crossing.written.begin(), report.crossing.written.end());
  }
  for (const auto& f : deleted) {
    if (RemoveBeneath(host_dir, f)) report.crossing.written.push_back(f);
    if (HostVersion(root.get(), f).kind == Version::kAbsent) done.insert(f);
  }
  std::map<std::string, bool> merged;
  if (resolution == Resolution::kMerge) {
    for (auto& [path, marked] : MergeConflicts(conn, project, plan, root.get(), host_dir, source)) {
      merged[path] = marked;
      (marked ? report.marked : report.merged).push_back(path);
    }
  }
  // The base follows: what was taken is now the host's; what both sides agree on, too; a
  // conflict resolved for the host or merged has the copy's version as its base, so the next
  // sync may replace the copy.
  std::vector<std::string> advanced;
  for (const auto& p : plan.changes) {
    bool ours = p.action == Action::kConflict && resolution == Resolution::kOurs;
    if (done.count(p.path) || p.action == Action::kSame) {
      struct stat st {};
      Version now = HostVersion(root.get(), p.path, &st);
      plan.base.Set(p.path, now, now.kind == Version::kAbsent ? nullptr : &st);
      advanced.push_back(p.path);
    } else if (ours || merged.count(p.path)) {
      plan.base.Set(p.path, p.copy);
      advanced.push_back(p.path);
    } else if (p.action == Action::kConflict) {
      report.conflicts.push_back(p.path);
    }
  }
  if (plan.base.recorded()) {
    plan.base.Save(sandbox, project);
    report.base_advanced = AdvanceSandboxBase(conn, project, advanced, CopyDir(project));
  }
  return report;
}

}  // namespace ss
