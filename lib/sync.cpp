#include "sync.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "config.hpp"
#include "crossing.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "process.hpp"
#include "rescue.hpp"
#include "sandbox.hpp"
#include "ssh.hpp"
#include "strings.hpp"
#include "timefmt.hpp"
#include "transfer.hpp"
#include "working_copy.hpp"

namespace ss {
namespace {

// diff(1) of each path read from stdin (each ends with a NUL): $1 is the source, $2 the copy. A
// symbolic link is shown by its target, a device, fifo or socket by what it is (apply refuses those
// and links that leave the project), and a change of the executable bit as git shows it.
constexpr const char* kDiffScript = R"sh(src=$1 copy=$2
what() {
  if [ -L "$1" ]; then printf 'symbolic link to %s' "$(readlink -- "$1")"
  elif [ -f "$1" ]; then printf file
  elif [ -d "$1" ]; then printf directory
  elif [ -e "$1" ]; then printf 'special file (not applied)'
  else printf none; fi
}
while IFS= read -r -d '' f; do
  a=$(what "$src/$f") b=$(what "$copy/$f")
  if [ "$a" != file ] && [ "$a" != none ] || [ "$b" != file ] && [ "$b" != none ]; then
    printf -- '--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-%s\n+%s\n' "$f" "$f" "$a" "$b"
    continue
  fi
  if [ "$a" = file ] && [ "$b" = file ]; then
    ma=$(stat -c %a -- "$src/$f") mb=$(stat -c %a -- "$copy/$f")
    [ "$ma" = "$mb" ] || printf 'mode change %s => %s %s\n' "$ma" "$mb" "$f"
  fi
  diff -uN --label "a/$f" --label "b/$f" -- "$src/$f" "$copy/$f"
  [ $? -le 1 ] || exit 2
done
exit 0
)sh";

// Times are compared to the nanosecond (--modify-window=-1): rsync's default, whole seconds, takes
// a file changed within the second of the last sync, at the same size, for unchanged.
std::vector<std::string> Rsync(bool dry_run, const std::string& from, const std::string& to) {
  std::vector<std::string> argv = {"rsync",
                                   "-a",
                                   "--delete",
                                   "--modify-window=-1",
                                   Cat("--exclude-from=", kSyncExcludeFile),
                                   "--out-format=%i %n"};
  if (dry_run) argv.push_back("--dry-run");
  argv.push_back(from + "/");
  argv.push_back(to + "/");
  return argv;
}

ExecResult Checked(SshConnection& conn, const std::vector<std::string>& argv, std::string_view what,
                   const ExecOptions& options = {}) {
  ExecResult r = conn.Exec(argv, options);
  if (r.status != 0) {
    throw Error(
        kExitRemote, Cat(what, ": ", argv[0], " exited with status ", r.status), {},
        {std::string(Trim(r.err)).empty() ? "see the sandbox's logs" : std::string(Trim(r.err))});
  }
  return r;
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
    if (!c.content() || (c.created() && !c.deleting())) continue;
    if (mine.count(c.path)) out.push_back(c.path);
  }
  return out;
}

SyncReport SyncWorkingCopy(Sandbox& sandbox, SshConnection& conn, const Config& config,
                           const std::string& project, const SyncOptions& options) {
  SyncReport report;
  report.created = PrepareWorkingCopy(conn, config, project);
  std::string src = SourceDir(project), copy = CopyDir(project), stamp = SyncStamp(project);

  // Files of the copy that changed since the last sync (or all of them, without a record).
  bool have_stamp = conn.Exec({"test", "-e", stamp}).status == 0;
  std::vector<std::string> find = {"find", copy, "-mindepth", "1"};
  for (auto& a : FindPruneArgs(SyncExcludes(config))) find.push_back(a);
  find.insert(find.end(), {"!", "-type", "d"});
  if (have_stamp) find.insert(find.end(), {"-cnewer", stamp});
  find.insert(find.end(), {"-printf", "%P\\0"});
  ExecResult found = Checked(conn, find, Cat("cannot look at the working copy of '", project, "'"));
  std::vector<std::string> changed;
  for (auto& p : Split(found.out, '\0')) {
    if (!p.empty()) changed.push_back(p);
  }

  if (!changed.empty() || options.dry_run) {
    ExecResult plan =
        Checked(conn, Rsync(true, src, copy), Cat("cannot plan the sync of '", project, "'"));
    report.changes = ParseItemized(plan.out);
    report.at_risk = AtRisk(report.changes, changed);
  }
  if (options.dry_run) return report;
  if (!report.at_risk.empty() && !options.force) {
    std::vector<std::string> details;
    for (size_t i = 0; i < report.at_risk.size() && i < 20; ++i) {
      details.push_back(Cat("  ", report.at_risk[i]));
    }
    if (report.at_risk.size() > 20)
      details.push_back(Cat("  ... and ", report.at_risk.size() - 20, " more"));
    throw Error(
        kExitFailure,
        Cat("sync would delete or overwrite ", Plural(report.at_risk.size(), "file", "files"),
            " changed in the working copy of '", project, "'"),
        details,
        {Cat("see the changes: ss diff ", project),
         Cat("keep them: ss apply ", project, " (copies them to the host project)"),
         Cat("replace them anyway, saved first: ss sync ", project, " --force")});
  }
  if (!report.at_risk.empty()) {
    // Saved on the host before anything is replaced: exactly those files.
    std::vector<std::string> paths;
    for (const auto& f : report.at_risk) paths.push_back(Cat(project, "/", f));
    report.saved_to = RescueToHost(conn, sandbox.name(), Cat(project, "-sync"), paths);
  }
  ExecResult done = Checked(conn, Rsync(false, src, copy), Cat("cannot sync '", project, "'"));
  report.changes = ParseItemized(done.out);
  Checked(conn, {"touch", stamp}, "cannot record the sync");
  return report;
}

std::vector<ItemizedChange> CopyChanges(SshConnection& conn, const std::string& project) {
  ExecResult r = Checked(conn, Rsync(true, CopyDir(project), SourceDir(project)),
                         Cat("cannot compare the working copy of '", project, "'"));
  std::vector<ItemizedChange> out;
  for (auto& c : ParseItemized(r.out)) {
    if (c.content()) out.push_back(std::move(c));
  }
  return out;
}

std::string CopyDiff(SshConnection& conn, const std::string& project,
                     const std::vector<ItemizedChange>& changes) {
  if (changes.empty()) return "";
  ExecOptions o;
  o.input = "";
  for (const auto& c : changes) *o.input += c.path + '\0';
  ExecResult r =
      Checked(conn, {"bash", "-c", kDiffScript, "ss-diff", SourceDir(project), CopyDir(project)},
              Cat("cannot diff the working copy of '", project, "'"), o);
  return r.out;
}

std::string DiffStat(std::string_view diff) {
  struct Entry {
    std::string path;
    int add = 0, del = 0;
    bool binary = false;
  };
  std::vector<Entry> entries;
  for (const auto& line : SplitLines(diff)) {
    if (line.rfind("+++ b/", 0) == 0) {
      if (!entries.empty()) entries.back().path = line.substr(6);
    } else if (line.rfind("--- a/", 0) == 0) {
      entries.push_back({line.substr(6)});
    } else if (line.rfind("Binary files a/", 0) == 0) {
      auto end = line.find(" and b/");
      entries.push_back({line.substr(15, end == std::string::npos ? std::string::npos : end - 15)});
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
    out += Cat(total, " ", std::string(e.add / scale, '+'), std::string(e.del / scale, '-'), "\n");
    adds += e.add;
    dels += e.del;
  }
  out += Cat(" ", Plural(entries.size(), "file changed", "files changed"), ", ",
             Plural(adds, "insertion(+)", "insertions(+)"), ", ",
             Plural(dels, "deletion(-)", "deletions(-)"), "\n");
  return out;
}

CrossingReport ApplyChanges(SshConnection& conn, const std::string& project,
                            const std::vector<ItemizedChange>& changes, const std::string& host_dir,
                            const std::string& source) {
  std::set<std::string> files;
  std::vector<std::string> deleted;
  CrossingReport report;
  for (const auto& c : changes) {
    auto parts = SafeComponents(c.path);
    if (!parts || parts->empty()) {
      report.refused.push_back({c.path, "an absolute name or one with '..'"});
      continue;
    }
    if (c.deleting()) {
      deleted.push_back(c.path);
    } else {
      files.insert(Join(*parts, "/"));
    }
  }
  if (!IsDirectory(host_dir)) {
    throw Error(kExitNoInput, Cat("cannot read ", host_dir, ": no such directory"));
  }
  if (!files.empty()) {
    std::string list;
    for (const auto& f : files) list += f + '\0';
    // POSIX format: times keep their nanoseconds, so an applied file matches its copy for the
    // next comparison (which is to the nanosecond).
    ReceivedArchive archive(
        conn,
        {"tar", "-C", CopyDir(project), "--format=posix", "--hard-dereference", "-cf", "-",
         "--no-recursion", "--null", "--verbatim-files-from", "-T", "-"},
        list);
    if (archive.status() != 0) {
      std::string said(Trim(archive.error()));
      bool changing = said.find("No such file") != std::string::npos ||
                      said.find("file changed as we read it") != std::string::npos;
      throw Error(changing ? kExitTempFail : kExitRemote,
                  changing ? Cat("the working copy of '", project, "' changed while it was read")
                           : Cat("cannot read the changed files of '", project,
                                 "' (tar exited with status ", archive.status(), ")"),
                  {},
                  {changing       ? Cat("nothing was applied; run ss apply ", project, " again")
                   : said.empty() ? "see the sandbox's logs"
                                  : said});
    }
    CrossingOptions options;
    options.only = &files;
    CrossingReport written = CrossInto(archive.fd(), archive.Index(source), host_dir, options);
    report.written = std::move(written.written);
    report.bytes = written.bytes;
    report.refused.insert(report.refused.end(), written.refused.begin(), written.refused.end());
  }
  for (const auto& f : deleted) {
    if (RemoveBeneath(host_dir, f)) report.written.push_back(f);
  }
  return report;
}

}  // namespace ss
