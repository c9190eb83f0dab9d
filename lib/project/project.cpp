#include "project.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <utility>

#include "digest.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "fs_at.hpp"
#include "held_repository.hpp"
#include "host_commands.hpp"
#include "json_out.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "process.hpp"
#include "resources.hpp"
#include "strings.hpp"
#include "suggest.hpp"
#include "tree_size.hpp"

namespace ss {
namespace {

constexpr size_t kMinNameLength = 2;
constexpr size_t kMaxNameLength = 50;
constexpr const char* kNewPrefix = ".new-";
constexpr const char* kDelPrefix = ".del-";
constexpr const char* kCommitMessage = "Initial commit from Super-Sandbox";
constexpr const char* kFallbackName = "Super-Sandbox";
constexpr const char* kFallbackEmail = "noreply@supersandbox.dev";
constexpr size_t kMaxMetadataBytes = 64 * 1024;
constexpr auto kLockWait = std::chrono::seconds(10);

// Waits for an flock on `fd` (a folder), up to kLockWait.
void LockFd(int fd, const std::string& what) {
  auto deadline = std::chrono::steady_clock::now() + kLockWait;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) PathError("lock", what, errno);
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Error(kExitTempFail,
                  Cat("project '", Basename(what), "' is busy: another ss command holds its lock"),
                  {}, {"try again in a moment"});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// ---------------------------------------------------------------------------------------------
// Metadata on disk

struct MetadataRead {
  MetadataState state = MetadataState::kOk;
  std::optional<ProjectMetadata> metadata;
  std::string problem;
  std::string text;  // what was read (for salvaging fields of a corrupt file)
};

MetadataRead ReadMetadataAt(int project_fd) {
  MetadataRead r;
  Fd ss(OpenDirAt(project_fd, ".ss"));
  if (!ss.ok()) {
    if (errno == ENOENT) {
      r.state = MetadataState::kMissing;
      r.problem = ".ss/metadata.json is missing";
    } else {
      r.state = MetadataState::kCorrupt;
      r.problem = errno == ENOTDIR || errno == ELOOP
                      ? ".ss is not a folder"
                      : Cat("cannot open .ss: ", std::strerror(errno));
    }
    return r;
  }
  std::string problem;
  auto text = ReadSmallFileAt(ss.get(), "metadata.json", kMaxMetadataBytes, &problem);
  if (!text) {
    r.state = MetadataState::kMissing;
    r.problem = ".ss/metadata.json is missing";
    return r;
  }
  if (!problem.empty()) {
    r.state = MetadataState::kCorrupt;
    r.problem = Cat(".ss/", problem);
    return r;
  }
  r.text = *text;
  r.metadata = ParseMetadata(*text, &problem);
  if (!r.metadata) {
    r.state = MetadataState::kCorrupt;
    r.problem = Cat(".ss/metadata.json is corrupt: ", problem);
  }
  return r;
}

// Writes .ss/metadata.json in the project folder atomically. A .ss or metadata.json that is not
// what it should be (a link, a file, a folder) is replaced.
void WriteMetadataAt(int project_fd, const std::string& project_path,
                     const ProjectMetadata& metadata) {
  std::string ss_path = project_path + "/.ss";
  Fd ss(OpenDirAt(project_fd, ".ss"));
  if (!ss.ok()) {
    if (errno == ENOTDIR || errno == ELOOP) {
      if (::unlinkat(project_fd, ".ss", 0) != 0 && errno != ENOENT) {
        PathError("remove", ss_path, errno);
      }
    } else if (errno != ENOENT) {
      PathError("open", ss_path, errno);
    }
    if (::mkdirat(project_fd, ".ss", 0777) != 0 && errno != EEXIST) {
      PathError("create", ss_path, errno);
    }
    ss = Fd(OpenDirAt(project_fd, ".ss"));
    if (!ss.ok()) PathError("open", ss_path, errno);
  }
  std::string tmp = Cat(".metadata.json.", RandomNonce());
  std::string tmp_path = Cat(ss_path, "/", tmp);
  {
    Fd fd(::openat(ss.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   0644));
    if (!fd.ok()) PathError("create", tmp_path, errno);
    try {
      WriteAll(fd.get(), FormatMetadata(metadata), DisplayPath(tmp_path));
      if (::fsync(fd.get()) != 0) PathError("sync", tmp_path, errno);
    } catch (...) {
      ::unlinkat(ss.get(), tmp.c_str(), 0);
      throw;
    }
  }
  if (::renameat(ss.get(), tmp.c_str(), ss.get(), "metadata.json") != 0) {
    int err = errno;
    if (err == EISDIR || err == ENOTEMPTY || err == EEXIST) {
      RemoveDirAt(ss.get(), "metadata.json", ss_path);
      if (::renameat(ss.get(), tmp.c_str(), ss.get(), "metadata.json") == 0) {
        ::fsync(ss.get());
        return;
      }
      err = errno;
    }
    ::unlinkat(ss.get(), tmp.c_str(), 0);
    PathError("replace", ss_path + "/metadata.json", err);
  }
  ::fsync(ss.get());
}

// The GitHub repository of the project's "origin" remote, read from .git/config.
std::string GitHubRepoOfCheckout(int project_fd) {
  Fd git(OpenDirAt(project_fd, ".git"));
  if (!git.ok()) return "";
  std::string problem;
  auto config = ReadSmallFileAt(git.get(), "config", kMaxMetadataBytes, &problem);
  if (!config || !problem.empty()) return "";
  bool in_origin = false;
  for (const auto& raw : SplitLines(*config)) {
    std::string_view line = Trim(raw);
    if (!line.empty() && line.front() == '[') {
      in_origin = line == "[remote \"origin\"]";
      continue;
    }
    if (!in_origin) continue;
    auto eq = line.find('=');
    if (eq == std::string_view::npos || Trim(line.substr(0, eq)) != "url") continue;
    return GitHubRepoFromUrl(Trim(line.substr(eq + 1)));
  }
  return "";
}

// What a rebuild writes: the valid fields of a corrupt file, and for the rest, the folder's
// times and its git remote.
ProjectMetadata EstimateMetadata(int project_fd, const MetadataRead& read) {
  ProjectMetadata m;
  bool have_created = false, have_accessed = false, have_repo = false;
  if (!read.text.empty()) {
    Json doc = Json::parse(read.text, nullptr, false);
    if (doc.is_object()) {
      if (auto it = doc.find("created"); it != doc.end() && it->is_string()) {
        if (auto t = ParseRfc3339(it->get<std::string>())) {
          m.created = *t;
          have_created = true;
        }
      }
      if (auto it = doc.find("lastAccessed"); it != doc.end() && it->is_string()) {
        if (auto t = ParseRfc3339(it->get<std::string>())) {
          m.last_accessed = *t;
          have_accessed = true;
        }
      }
      if (auto it = doc.find("githubRepo"); it != doc.end() && it->is_string()) {
        m.github_repo = it->get<std::string>();
        have_repo = true;
      }
    }
  }
  struct stat st {};
  ::fstat(project_fd, &st);
  SystemTime mtime{std::chrono::seconds(st.st_mtime)};
  SystemTime born = mtime;
  if (auto birth = platform::BirthTime(project_fd)) {
    born = std::min(born, SystemTime{std::chrono::seconds(*birth)});
  }
  if (!have_created) m.created = have_accessed ? std::min(born, m.last_accessed) : born;
  if (!have_accessed) m.last_accessed = std::max(mtime, m.created);
  if (!have_repo) m.github_repo = GitHubRepoOfCheckout(project_fd);
  return m;
}

// ---------------------------------------------------------------------------------------------
// Git

bool EnvSet(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

// git init on branch main, then one commit of everything, by the user's identity or, when
// none is set, by Super-Sandbox.
void InitGit(const std::string& dir, std::string_view project) {
  if (!FindInPath("git")) {
    throw Error(kExitUnavailable, "git is not installed", {},
                {Cat(InstallHint("git"), ", then run the command again")});
  }
  ProcessOptions options;
  options.cwd = dir;
  options.unset_env = GitEnvToUnset();
  std::string what = Cat("cannot create project '", project, "'");
  RunChecked({"git", "init", "--quiet", "--initial-branch=main"}, what, options, kExitCantCreate);

  // The identity git would use, from the user's config or environment.
  ProcessResult ident = Run({"git", "config", "--get-regexp", "^user\\.(name|email)$"}, options);
  bool has_name = EnvSet("GIT_AUTHOR_NAME") && EnvSet("GIT_COMMITTER_NAME");
  bool has_email = (EnvSet("GIT_AUTHOR_EMAIL") && EnvSet("GIT_COMMITTER_EMAIL")) || EnvSet("EMAIL");
  for (const auto& line : SplitLines(ident.out)) {
    auto space = line.find(' ');
    if (space == std::string::npos || Trim(line.substr(space + 1)).empty()) continue;
    std::string key = ToLower(line.substr(0, space));
    if (key == "user.name") has_name = true;
    if (key == "user.email") has_email = true;
  }
  ProcessOptions commit = options;
  if (!has_name || !has_email) {
    commit.env = {{"GIT_AUTHOR_NAME", kFallbackName},
                  {"GIT_AUTHOR_EMAIL", kFallbackEmail},
                  {"GIT_COMMITTER_NAME", kFallbackName},
                  {"GIT_COMMITTER_EMAIL", kFallbackEmail}};
  }
  RunChecked({"git", "add", "--all"}, what, options, kExitCantCreate);
  RunChecked({"git", "commit", "--quiet", "--no-verify", "--message", kCommitMessage}, what, commit,
             kExitCantCreate);
}

// An imported git checkout: keep .ss/ out of `git status` through .git/info/exclude, which is
// not part of the repository's history.
void ExcludeMetadataFromGit(int project_fd) {
  Fd git(OpenDirAt(project_fd, ".git"));
  if (!git.ok()) return;
  if (::mkdirat(git.get(), "info", 0777) != 0 && errno != EEXIST) return;
  Fd info(OpenDirAt(git.get(), "info"));
  if (!info.ok()) return;
  std::string problem;
  auto current = ReadSmallFileAt(info.get(), "exclude", kMaxMetadataBytes, &problem);
  if (current && !problem.empty()) return;  // not a plain file: leave it
  if (current) {
    for (const auto& line : SplitLines(*current)) {
      if (Trim(line) == ".ss/" || Trim(line) == ".ss" || Trim(line) == "/.ss/") return;
    }
  }
  Fd fd(::openat(info.get(), "exclude", O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
                 0666));
  if (!fd.ok()) return;
  std::string add = current && !current->empty() && current->back() != '\n' ? "\n" : "";
  add += "# Super-Sandbox metadata\n.ss/\n";
  ssize_t n = ::write(fd.get(), add.data(), add.size());
  static_cast<void>(n);
}

// ---------------------------------------------------------------------------------------------

bool IsGarbageName(std::string_view name) {
  return name.rfind(kNewPrefix, 0) == 0 || name.rfind(kDelPrefix, 0) == 0;
}

// An open project folder and the stat of it.
struct OpenProject {
  Fd fd;
  struct stat st {};
};

enum class OpenResult { kOk, kMissing, kNotFolder, kLink };

OpenResult OpenProjectAt(int base_fd, const std::string& name, OpenProject& out) {
  out.fd = Fd(OpenDirAt(base_fd, name));
  if (!out.fd.ok()) {
    int err = errno;
    if (err == ENOENT) return OpenResult::kMissing;
    struct stat st;
    if (::fstatat(base_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      return S_ISLNK(st.st_mode) ? OpenResult::kLink : OpenResult::kNotFolder;
    }
    if (errno == ENOENT) return OpenResult::kMissing;
    PathError("open", name, err);
  }
  if (::fstat(out.fd.get(), &out.st) != 0) PathError("open", name, errno);
  return OpenResult::kOk;
}

// The entry at base/name is still the folder we opened (nobody deleted or replaced it).
bool StillThere(int base_fd, const std::string& name, const struct stat& opened) {
  struct stat now;
  return ::fstatat(base_fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && SameFile(now, opened);
}

// An entry with a project's name that is not a folder: ss neither follows nor removes it.
Error NotAProjectError(const std::string& name, const std::string& path, OpenResult r) {
  return Error(kExitNoInput,
               Cat("'", name, "' is not a project: ", DisplayPath(path), " is ",
                   r == OpenResult::kLink ? "a symbolic link" : "not a folder"),
               {}, {"ss does not follow or remove it; move it away yourself"});
}

}  // namespace

std::vector<std::string> GitEnvToUnset() {
  return {"GIT_DIR",
          "GIT_WORK_TREE",
          "GIT_INDEX_FILE",
          "GIT_COMMON_DIR",
          "GIT_OBJECT_DIRECTORY",
          "GIT_ALTERNATE_OBJECT_DIRECTORIES",
          "GIT_NAMESPACE",
          "GIT_PREFIX"};
}

// ---------------------------------------------------------------------------------------------
// Names

std::optional<std::string> ProjectNameProblem(std::string_view name) {
  // Shown in messages: control characters would play tricks on the terminal.
  std::string printable(name);
  for (char& c : printable) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  std::string shown = Quoted(printable);
  if (name.empty()) return std::string("the name is empty");
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (c >= 'A' && c <= 'Z') {
      return Cat(shown, " has an uppercase letter '", name[i], "': use lowercase");
    }
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) {
      std::string ch = c == ' '   ? std::string("a space")
                       : c == '/' ? std::string("'/'")
                       : c < 0x20 || c >= 0x7f
                           ? std::string("a character other than a-z, 0-9 and -")
                           : Cat("'", name[i], "'");
      return Cat(shown, " has ", ch, " at position ", i + 1);
    }
  }
  if (name.front() < 'a' || name.front() > 'z') {
    return Cat(shown, " starts with '", name.front(), "': start with a letter");
  }
  if (name.size() < kMinNameLength || name.size() > kMaxNameLength) {
    return Cat(shown, " has ", name.size(), " character", name.size() == 1 ? "" : "s",
               ": use 2 to 50");
  }
  if (name.find("--") != std::string_view::npos) {
    return Cat(shown, " has '--': use single hyphens");
  }
  return std::nullopt;
}

bool IsValidProjectName(std::string_view name) { return !ProjectNameProblem(name).has_value(); }

void ValidateProjectName(std::string_view name) {
  if (auto problem = ProjectNameProblem(name)) {
    throw Error(kExitDataErr,
                "invalid project name: use lowercase letters, numbers, and hyphens only",
                {*problem},
                {"a name has 2 to 50 characters, starts with a letter and has no '--', "
                 "such as my-app"});
  }
}

// ---------------------------------------------------------------------------------------------
// Metadata format

std::string FormatMetadata(const ProjectMetadata& m) {
  Json doc = Json::object();
  doc["created"] = FormatRfc3339(m.created);
  doc["lastAccessed"] = FormatRfc3339(m.last_accessed);
  if (!m.github_repo.empty()) doc["githubRepo"] = m.github_repo;
  return DumpJson(doc, 2) + "\n";
}

std::optional<ProjectMetadata> ParseMetadata(std::string_view text, std::string* problem) {
  auto fail = [&](std::string why) -> std::optional<ProjectMetadata> {
    if (problem) *problem = std::move(why);
    return std::nullopt;
  };
  Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded()) return fail(text.empty() ? "the file is empty" : "it is not JSON");
  if (!doc.is_object()) return fail("it is not a JSON object");
  ProjectMetadata m;
  for (const auto& [key, field] :
       {std::pair<const char*, SystemTime*>{"created", &m.created},
        std::pair<const char*, SystemTime*>{"lastAccessed", &m.last_accessed}}) {
    auto it = doc.find(key);
    if (it == doc.end()) return fail(Cat("'", key, "' is missing"));
    std::optional<SystemTime> t;
    if (it->is_string()) t = ParseRfc3339(it->get<std::string>());
    if (!t) return fail(Cat("'", key, "' is not an RFC 3339 time"));
    *field = *t;
  }
  if (auto it = doc.find("githubRepo"); it != doc.end() && !it->is_null()) {
    if (!it->is_string()) return fail("'githubRepo' is not a string");
    m.github_repo = it->get<std::string>();
  }
  return m;
}

std::string GitHubRepoFromUrl(std::string_view url) {
  std::string_view rest;
  for (std::string_view prefix :
       {"https://github.com/", "http://github.com/", "ssh://git@github.com/",
        "git@github.com:", "git://github.com/", "ssh://github.com/"}) {
    if (url.rfind(prefix, 0) == 0) {
      rest = url.substr(prefix.size());
      break;
    }
  }
  if (rest.empty()) return "";
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.size() > 4 && rest.substr(rest.size() - 4) == ".git") rest.remove_suffix(4);
  auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= rest.size() ||
      rest.find('/', slash + 1) != std::string_view::npos) {
    return "";
  }
  return std::string(rest);
}

// ---------------------------------------------------------------------------------------------
// The store

ProjectStore::ProjectStore() : ProjectStore(ProjectsDir(), CopyProjectsDir()) {}
ProjectStore::ProjectStore(std::string base_dir, std::string copy_dir)
    : base_dir_(std::move(base_dir)), copy_dir_(std::move(copy_dir)) {}

std::vector<std::string> ProjectStore::Bases() const {
  if (copy_dir_.empty()) return {base_dir_};
  return {base_dir_, copy_dir_};
}

const std::string& ProjectStore::BaseOf(std::string_view name) const {
  struct stat st;
  if (!copy_dir_.empty() && ::lstat(Cat(copy_dir_, "/", name).c_str(), &st) == 0 &&
      S_ISDIR(st.st_mode)) {
    return copy_dir_;
  }
  return base_dir_;
}

std::string ProjectStore::ProjectPath(std::string_view name) const {
  ValidateProjectName(name);
  return Cat(BaseOf(name), "/", name);
}

bool ProjectStore::Exists(std::string_view name) const {
  if (!IsValidProjectName(name)) return false;
  struct stat st;
  return ::lstat(Cat(BaseOf(name), "/", name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> ProjectStore::Names() const {
  std::vector<std::string> names;
  for (const std::string& base_dir : Bases()) {
    Fd base(::open(base_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (base.ok()) NamesIn(base.get(), names);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

void ProjectStore::NamesIn(int base_fd, std::vector<std::string>& names) {
  for (const auto& [name, type] : ReadDirAt(base_fd)) {
    if (!IsValidProjectName(name)) continue;
    if (type == DT_UNKNOWN) {
      struct stat st;
      if (::fstatat(base_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
        continue;
      }
    } else if (type != DT_DIR) {
      continue;
    }
    names.push_back(name);
  }
}

std::vector<Project> ProjectStore::List(std::vector<std::string>* skipped) {
  std::vector<Project> out;
  bool garbage = false;
  if (base_dir_ == ProjectsDir()) {
    try {
      SettleStagedRepositories();  // a maker's, killed before its project's repository was in place
    } catch (const Error&) {
    }
  }
  for (const std::string& base_dir : Bases()) ListIn(base_dir, out, skipped, garbage);
  if (skipped) std::sort(skipped->begin(), skipped->end());
  std::sort(out.begin(), out.end(), [](const Project& a, const Project& b) {
    if (a.metadata.last_accessed != b.metadata.last_accessed) {
      return a.metadata.last_accessed > b.metadata.last_accessed;
    }
    return a.name < b.name;
  });
  if (garbage) {
    try {
      CollectGarbage();
    } catch (const Error&) {
      // Best effort: the next run tries again.
    }
  }
  return out;
}

void ProjectStore::ListIn(const std::string& base_dir, std::vector<Project>& out,
                          std::vector<std::string>* skipped, bool& garbage) {
  Fd base(::open(base_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!base.ok()) {
    if (errno == ENOENT) return;
    PathError("read", base_dir, errno);
  }
  for (const auto& [name, type] : ReadDirAt(base.get())) {
    if (name[0] == '.') {
      garbage = garbage || IsGarbageName(name);
      continue;
    }
    bool valid = IsValidProjectName(name);
    if (!valid && type != DT_DIR && type != DT_UNKNOWN) continue;  // a stray file
    if (type != DT_DIR && type != DT_UNKNOWN && type != DT_LNK) continue;
    OpenProject p;
    OpenResult r = OpenProjectAt(base.get(), name, p);
    if (r == OpenResult::kMissing) continue;  // deleted meanwhile
    std::string shown = DisplayPath(Cat(base_dir, "/", name));
    if (r == OpenResult::kLink) {
      if (valid && skipped) {
        skipped->push_back(Cat("skipping ", Quoted(shown),
                               ": a symbolic link, not a project folder (links are not followed)"));
      }
      continue;
    }
    if (r == OpenResult::kNotFolder) continue;
    if (!valid) {
      if (skipped) {
        skipped->push_back(Cat("skipping ", Quoted(shown), ": ", *ProjectNameProblem(name)));
      }
      continue;
    }
    Project project;
    project.name = name;
    project.path = Cat(base_dir, "/", name);
    MetadataRead read = ReadMetadataAt(p.fd.get());
    project.state = read.state;
    project.problem = read.problem;
    project.metadata =
        read.metadata ? std::move(*read.metadata) : EstimateMetadata(p.fd.get(), read);
    out.push_back(std::move(project));
  }
}

std::vector<int64_t> ProjectStore::Sizes(const std::vector<Project>& projects) const {
  std::vector<int64_t> sizes(projects.size(), -1);
  Fd base(::open(base_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd copies(copy_dir_.empty() ? -1 : ::open(copy_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::vector<TreeRoot> roots;
  std::vector<size_t> at;
  for (size_t i = 0; i < projects.size(); ++i) {
    const Fd& dir = Dirname(projects[i].path) == copy_dir_ ? copies : base;
    if (!dir.ok()) continue;
    roots.push_back(TreeRoot{dir.get(), projects[i].name});
    at.push_back(i);
  }
  std::vector<int64_t> found = TreeSizes(roots);
  for (size_t k = 0; k < at.size(); ++k) sizes[at[k]] = found[k];
  return sizes;
}

Error ProjectStore::NotFoundError(std::string_view name) {
  std::vector<std::string> details;
  std::vector<Project> projects;
  try {
    projects = List();
  } catch (const Error&) {
  }
  std::vector<std::string> names;
  for (const auto& p : projects) names.push_back(p.name);
  if (auto guess = Suggest(name, names)) {
    details.emplace_back("");
    details.push_back(Cat("Did you mean '", *guess, "'?"));
  }
  if (!projects.empty()) {
    details.emplace_back("");
    details.emplace_back("Available projects:");
    for (const auto& p : projects) details.push_back(Cat("  ", p.name));
  }
  details.emplace_back("");
  details.emplace_back("Create a new project:");
  details.push_back(Cat("  ss new ", name));
  Error e(kExitNoInput, Cat("Project '", name, "' not found"), details);
  e.AsBlock();
  return e;
}

Error ProjectStore::AlreadyExistsError(std::string_view name) const {
  Error e(kExitCantCreate, Cat("Project '", name, "' already exists"),
          {"", "Open it:", Cat("  ss ", name), "",
           "Or choose a different name:", Cat("  ss new ", SuggestFreeName(name))});
  e.AsBlock();
  return e;
}

std::string ProjectStore::SuggestFreeName(std::string_view name) const {
  std::string stem(name);
  int next = 2;
  auto v = stem.rfind("-v");
  if (v != std::string::npos && v + 2 < stem.size() &&
      stem.find_first_not_of("0123456789", v + 2) == std::string::npos && stem.size() - v < 8) {
    next = std::stoi(stem.substr(v + 2)) + 1;
    stem.resize(v);
  }
  for (int n = next; n < next + 1000; ++n) {
    std::string suffix = Cat("-v", n);
    std::string base = stem.substr(0, kMaxNameLength - suffix.size());
    while (!base.empty() && base.back() == '-') base.pop_back();
    std::string candidate = base + suffix;
    if (IsValidProjectName(candidate) && !Exists(candidate)) return candidate;
  }
  return Cat(stem, "-v", next);
}

int ProjectStore::CollectGarbage() const {
  int removed = 0;
  for (const std::string& base_dir : Bases()) removed += CollectGarbageIn(base_dir);
  return removed;
}

int ProjectStore::CollectGarbageIn(const std::string& base_dir) {
  Fd base(::open(base_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!base.ok()) return 0;
  // Creators hold the folder's lock (shared) from making their hidden folder until they hold
  // that folder's own lock; taking it here (exclusive) means every hidden folder seen is
  // either locked by a live process or abandoned.
  if (::flock(base.get(), LOCK_EX) != 0) return 0;
  std::vector<std::pair<std::string, Fd>> abandoned;
  for (const auto& [name, type] : ReadDirAt(base.get())) {
    if (!IsGarbageName(name)) continue;
    Fd fd(OpenDirAt(base.get(), name));
    if (!fd.ok()) {
      if (errno == ENOTDIR || errno == ELOOP) ::unlinkat(base.get(), name.c_str(), 0);
      continue;
    }
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // in use
    abandoned.emplace_back(name, std::move(fd));
  }
  ::flock(base.get(), LOCK_UN);
  int removed = 0;
  for (auto& [name, fd] : abandoned) {
    RemoveStagedRepository(Cat(RepositoriesDir(), "/", name));  // first: see StageRepository
    RemoveDirAt(base.get(), name, base_dir);
    ++removed;
  }
  return removed;
}

namespace {

// Run as root, ss writes a new project as root and imports keep their files' owners: the
// projects folder's owner (see ProjectsOwner) gets every file, so that git on the host trusts
// the repository and the agent can work in it.
void GiveToProjectsOwner(int base_fd, const std::string& tmp_path) {
  struct stat base_st;
  if (::geteuid() != 0 || ::fstat(base_fd, &base_st) != 0) return;
  ChownTree(tmp_path, base_st.st_uid, base_st.st_gid);
}

}  // namespace

Project ProjectStore::Create(std::string_view name_view, const CreateOptions& options) {
  std::string name(name_view);
  ValidateProjectName(name);
  if (Exists(name)) throw AlreadyExistsError(name);
  const std::string& base_dir = options.copy && !copy_dir_.empty() ? copy_dir_ : base_dir_;
  std::string path = Cat(base_dir, "/", name);

  std::string from;
  if (!options.from.empty()) {
    from = RealPath(options.from);
    if (from.empty() || !IsDirectory(from)) {
      throw Error(kExitNoInput, Cat("cannot import '", options.from,
                                    "': ", from.empty() ? std::strerror(errno) : "not a folder"));
    }
  }

  if (base_dir == ProjectsDir()) {
    EnsureProjectsDir();
  } else if (base_dir == CopyProjectsDir()) {
    EnsureCopyProjectsDir();
  } else {
    MakeDirs(base_dir);
  }
  Fd base(::open(base_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!base.ok()) PathError("open", base_dir, errno);
  struct stat st;
  if (::fstatat(base.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) throw AlreadyExistsError(name);
    throw Error(kExitCantCreate,
                Cat("cannot create project '", name, "': ", DisplayPath(path), " exists and is ",
                    S_ISLNK(st.st_mode) ? "a symbolic link" : "not a folder"),
                {}, {"move it away, or choose another name"});
  }
  if (!from.empty()) {
    std::string real_base = RealPath(base_dir);
    if (real_base == from || real_base.rfind(from + "/", 0) == 0 || from == "/") {
      throw Error(kExitDataErr,
                  Cat("cannot import '", options.from, "': it contains the projects folder"));
    }
  }
  // A shared project is built where no sandbox reaches (the copy-mode folder, on the same
  // filesystem), its repository held from there (held_repository.hpp), and only then moved into
  // the projects folder, whole: a sandbox watching that folder never meets it half made.
  bool shared = base_dir == ProjectsDir();
  std::string build_dir = base_dir;
  Fd build_fd;
  if (shared) {
    struct stat a, b;
    EnsureCopyProjectsDir();
    if (::stat(CopyProjectsDir().c_str(), &a) == 0 && ::fstat(base.get(), &b) == 0 &&
        a.st_dev == b.st_dev) {
      build_dir = CopyProjectsDir();
      build_fd = Fd(::open(build_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!build_fd.ok()) PathError("open", build_dir, errno);
    }
  }
  int build = build_fd.ok() ? build_fd.get() : base.get();
  try {
    CollectGarbageIn(build_dir);
  } catch (const Error&) {
  }

  // The hidden folder the project is built in, locked before anyone can see it unlocked.
  std::string tmp_name;
  Fd tmp;
  if (::flock(build, LOCK_SH) != 0) PathError("lock", build_dir, errno);
  for (int attempt = 0; attempt < 100 && !tmp.ok(); ++attempt) {
    tmp_name = Cat(kNewPrefix, name, ".", RandomNonce());
    if (::mkdirat(build, tmp_name.c_str(), 0777) != 0) {
      if (errno == EEXIST) continue;
      int err = errno;
      ::flock(build, LOCK_UN);
      PathError("create a folder in", build_dir, err);
    }
    tmp = Fd(OpenDirAt(build, tmp_name));
    if (!tmp.ok() || ::flock(tmp.get(), LOCK_EX) != 0) {
      int err = errno;
      ::flock(build, LOCK_UN);
      PathError("open", Cat(build_dir, "/", tmp_name), err);
    }
  }
  ::flock(build, LOCK_UN);
  std::string tmp_path = Cat(build_dir, "/", tmp_name);
  std::string staged;   // its repository, beside the held ones until the project is in place
  bool placed = false;  // the project is in its folder: what is staged is its repository
  std::vector<std::string> not_imported;

  try {
    if (from.empty()) {
      std::pair<const char*, const char*> files[] = {{"lib/templates/AGENTS.md", "AGENTS.md"},
                                                     {"lib/templates/README.md", "README.md"},
                                                     {"lib/templates/gitignore", ".gitignore"}};
      for (const auto& [resource, file] : files) {
        CreateFileAt(tmp.get(), file, RenderTemplate(RequireResource(resource), {{"name", name}}),
                     tmp_path);
      }
      InitGit(tmp_path, name);
    } else {
      // Files, folders and links; device nodes, fifos and sockets are left out, and named.
      std::string out =
          RunChecked({"rsync", "-a", "--no-D", "--", from + "/", tmp_path + "/"},
                     Cat("cannot create project '", name, "': cannot copy '", options.from, "'"),
                     {}, kExitCantCreate);
      for (const auto& line : SplitLines(out)) {
        const std::string prefix = "skipping non-regular file ";
        if (line.rfind(prefix, 0) != 0) continue;
        std::string file = line.substr(prefix.size());
        if (file.size() >= 2 && file.front() == '"' && file.back() == '"') {
          file = file.substr(1, file.size() - 2);
        }
        not_imported.push_back(file);
      }
      ExcludeMetadataFromGit(tmp.get());
    }
    ProjectMetadata metadata;
    metadata.created = metadata.last_accessed = NowSeconds();
    WriteMetadataAt(tmp.get(), tmp_path, metadata);
    GiveToProjectsOwner(base.get(), tmp_path);
    if (shared && IsDirectory(tmp_path + "/.git")) staged = StageRepository(tmp_path, name);
    ::fsync(tmp.get());
    if (!RenameNoReplace(base.get(), build_dir == base_dir ? tmp_name : tmp_path,
                         build_dir == base_dir ? name : path)) {
      throw AlreadyExistsError(name);
    }
    placed = true;
    ::fsync(base.get());
    if (!staged.empty()) InstallStagedRepository(staged, name);
    Project project;
    project.name = name;
    project.path = path;
    project.metadata = metadata;
    project.not_imported = not_imported;
    return project;
  } catch (...) {
    try {
      if (!placed && !staged.empty()) RemoveStagedRepository(staged);
      RemoveDirAt(build, tmp_name, build_dir);
    } catch (const Error&) {
      // Left for the next CollectGarbage, hidden from List.
    }
    throw;
  }
}

Project ProjectStore::Delete(std::string_view name_view) {
  std::string name(name_view);
  ValidateProjectName(name);
  const std::string& base_dir = BaseOf(name);
  for (int attempt = 0; attempt < 5; ++attempt) {
    Fd base(::open(base_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!base.ok()) {
      if (errno == ENOENT) throw NotFoundError(name);
      PathError("open", base_dir, errno);
    }
    OpenProject p;
    OpenResult r = OpenProjectAt(base.get(), name, p);
    std::string path = Cat(base_dir, "/", name);
    if (r == OpenResult::kMissing) throw NotFoundError(name);
    if (r != OpenResult::kOk) throw NotAProjectError(name, path, r);
    LockFd(p.fd.get(), path);
    if (!StillThere(base.get(), name, p.st)) continue;  // deleted or replaced meanwhile
    Project project;
    project.name = name;
    project.path = path;
    MetadataRead read = ReadMetadataAt(p.fd.get());
    project.state = read.state;
    project.problem = read.problem;
    project.metadata = read.metadata ? *read.metadata : EstimateMetadata(p.fd.get(), read);

    std::string trash;
    bool moved = false;
    for (int i = 0; i < 100 && !moved; ++i) {
      trash = Cat(kDelPrefix, name, ".", RandomNonce());
      if (RenameNoReplace(base.get(), name, trash)) {
        moved = true;
      } else if (!StillThere(base.get(), name, p.st)) {
        break;
      }
    }
    if (!moved) continue;
    ::fsync(base.get());
    // Gone from the list now; the files follow, under our lock on the folder, and its held
    // repository with them.
    RemoveDirAt(base.get(), trash, base_dir);
    if (base_dir == ProjectsDir() || base_dir == CopyProjectsDir()) RemoveHeldRepository(name);
    return project;
  }
  throw NotFoundError(name);
}

namespace {

// Reads, changes and writes a project's metadata under the project's lock. `change` may be
// null (just repair).
Project UpdateMetadata(ProjectStore& store, const std::string& base_dir, const std::string& name,
                       const std::function<void(ProjectMetadata&)>& change) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    Fd base(::open(base_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!base.ok()) {
      if (errno == ENOENT) throw store.NotFoundError(name);
      PathError("open", base_dir, errno);
    }
    OpenProject p;
    std::string path = Cat(base_dir, "/", name);
    OpenResult r = OpenProjectAt(base.get(), name, p);
    if (r == OpenResult::kMissing) throw store.NotFoundError(name);
    if (r != OpenResult::kOk) throw NotAProjectError(name, path, r);
    Project project;
    project.name = name;
    project.path = path;
    MetadataRead read = ReadMetadataAt(p.fd.get());
    if (read.metadata && !change) {
      project.metadata = *read.metadata;
      return project;
    }
    LockFd(p.fd.get(), path);
    if (!StillThere(base.get(), name, p.st)) continue;
    read = ReadMetadataAt(p.fd.get());  // again, under the lock
    project.state = read.state;
    project.problem = read.problem;
    project.metadata = read.metadata ? *read.metadata : EstimateMetadata(p.fd.get(), read);
    if (change) change(project.metadata);
    WriteMetadataAt(p.fd.get(), path, project.metadata);
    project.rebuilt = read.state != MetadataState::kOk;
    return project;
  }
  throw store.NotFoundError(name);
}

}  // namespace

std::optional<Project> ProjectStore::Find(std::string_view name_view) const {
  std::string name(name_view);
  ValidateProjectName(name);
  const std::string& base_dir = BaseOf(name);
  Fd base(::open(base_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!base.ok()) {
    if (errno == ENOENT) return std::nullopt;
    PathError("open", base_dir, errno);
  }
  std::string path = Cat(base_dir, "/", name);
  OpenProject p;
  OpenResult r = OpenProjectAt(base.get(), name, p);
  if (r == OpenResult::kMissing) return std::nullopt;
  if (r != OpenResult::kOk) throw NotAProjectError(name, path, r);
  Project project;
  project.name = name;
  project.path = path;
  MetadataRead read = ReadMetadataAt(p.fd.get());
  project.state = read.state;
  project.problem = read.problem;
  project.metadata = read.metadata ? *read.metadata : EstimateMetadata(p.fd.get(), read);
  return project;
}

Project ProjectStore::Get(std::string_view name) {
  ValidateProjectName(name);
  return UpdateMetadata(*this, BaseOf(name), std::string(name), nullptr);
}

Project ProjectStore::Touch(std::string_view name) {
  ValidateProjectName(name);
  SystemTime now = NowSeconds();
  return UpdateMetadata(*this, BaseOf(name), std::string(name),
                        [now](ProjectMetadata& m) { m.last_accessed = now; });
}

Project ProjectStore::SetGitHubRepo(std::string_view name, std::string_view repo) {
  ValidateProjectName(name);
  std::string value(repo);
  return UpdateMetadata(*this, BaseOf(name), std::string(name),
                        [value](ProjectMetadata& m) { m.github_repo = value; });
}

}  // namespace ss
