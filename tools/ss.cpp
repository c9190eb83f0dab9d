// ss: the dispatcher. `ss VERB ARGS...` execs the binary that owns VERB (git-style); a first
// argument that is not a verb is a project name and goes to ss-attach; an invocation that is not
// ours at all (iproute2's `ss -tlnp`, `ss state established`) is exec'd, argv untouched, to the
// next `ss` on PATH. It exec()s, so the terminal, signals and exit status belong to the target.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <set>

#include "dispatch.hpp"
#include "error.hpp"
#include "folders.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "process.hpp"
#include "shell_init.hpp"
#include "shell_quote.hpp"
#include "strings.hpp"
#include "suggest.hpp"
#include "tool.hpp"
#include "version.hpp"

namespace ss {
namespace {

constexpr const char* kUsage = R"(usage: ss [PROJECT [-t] [-- CMD...]] | ss COMMAND [ARGS...]

Run an AI coding agent with full autonomy inside a sandbox, with your projects on the host.

  ss                      choose a project from a menu (on a terminal)
  ss PROJECT              open the agent in PROJECT's sandbox
  ss PROJECT -t           open a shell in PROJECT instead
  ss . | ss run [DIR]     open the agent on this folder (any folder) in a sandbox of its own
                          (--copy: the folder read-only, the agent in a copy; ss diff, ss apply)

Projects
  new NAME                create a project (--github, --from PATH)
  list                    list projects (--json)
  delete NAME             delete a project (asks first; --yes)

Sandbox
  status                  show the sandbox (--json)
  start | stop | restart  start, stop, or stop and start the sandbox
  reset                   replace the sandbox with a fresh one (asks first; --yes)
  destroy                 delete the sandbox; projects stay (asks first; --yes)
  vm ...                  image build, setup and other sandbox commands

Other
  config [get|set ...]    show or change settings (config.yaml)
  profiles                list the profiles (--json); use one: ss PROJECT --profile NAME
  clean --profile NAME    reset a profile's sandbox (asks first; --yes)
  update                  update ss to the latest release
  commands                list every command, plugins included
  help COMMAND            open the manual page of a command
  init bash|zsh|fish      shell integration, for 'ss cd PROJECT' (see ss(1))

Options
  --sandbox NAME          the sandbox a command works on (before or after the command)
  --profile NAME          the sandbox of a profile, with its settings (see ss profiles)
  --json                  machine-readable output, for commands that have it
  --help                  show this help
  --version               show version, commit and build date

iproute2's socket tool shares the name: an invocation that is not ours (such as
'ss -tlnp') runs it unchanged.
)";

// What may name a project: ^[a-z][a-z0-9-]{1,49}$.
bool ProjectNameLike(std::string_view name) {
  return name.size() >= 2 && NameOf(name, "a-z", "a-z0-9-", 50);
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Where our binaries are: $SS_EXEC_PATH, then the install's libexec directory.
std::vector<std::string> ExecDirs() {
  std::vector<std::string> dirs;
  if (const char* p = std::getenv("SS_EXEC_PATH"); p && *p) dirs.emplace_back(p);
  dirs.push_back(ExecutableDir() + "/../libexec/ss");
  return dirs;
}

std::optional<std::string> FindTool(const std::string& binary) {
  for (const auto& dir : ExecDirs()) {
    std::string candidate = Cat(dir, "/", binary);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return FindInPath(binary);
}

[[noreturn]] void ExecTool(const std::string& path, const std::vector<std::string>& argv) {
  if (const char* t = std::getenv("SS_TRACE"); t && *t && std::string_view(t) != "0") {
    std::vector<std::string> shown = argv;
    shown[0] = path;
    Note(Cat("ss: exec: ", ShellJoin(shown)));
  }
  ExecPath(path, argv);
}

// Every copy of this dispatcher carries this mark; iproute2's ss (or any other) does not.
constexpr char kDispatcherMark[] = "ss:dispatcher:4f7a21c9";

// Whether `path` is a copy of this dispatcher (a build tree, ~/.local, /usr/local...).
bool IsOurDispatcher(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  void* map = ::fstat(fd, &st) == 0 && st.st_size > 0
                  ? ::mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
                  : MAP_FAILED;
  ::close(fd);
  if (map == MAP_FAILED) return false;
  bool ours = ::memmem(map, st.st_size, kDispatcherMark, sizeof kDispatcherMark - 1) != nullptr;
  ::munmap(map, st.st_size);
  return ours;
}

// The `ss` that is not ours: the first on PATH that is not a copy of this dispatcher, else the
// usual iproute2 places.
std::optional<std::string> FindOtherSs() {
  const char* path = std::getenv("PATH");
  for (const auto& dir : Split(path ? path : "", ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/ss";
    if (IsExecutableFile(candidate) && !IsOurDispatcher(candidate)) return candidate;
  }
  for (const char* fallback : {"/usr/bin/ss", "/bin/ss", "/usr/sbin/ss", "/sbin/ss"}) {
    if (IsExecutableFile(fallback) && !IsOurDispatcher(fallback)) return std::string(fallback);
  }
  return std::nullopt;
}

[[noreturn]] void PassToIproute2(char** argv, const std::string& why) {
  // Guard against two copies of this dispatcher handing the call to each other forever.
  if (std::getenv("SS_PASSTHROUGH")) {
    throw Error(kExitUsage, Cat(why, ", and no other 'ss' was found"));
  }
  auto other = FindOtherSs();
  if (!other) {
    throw Error(kExitUsage, Cat(why, ", and iproute2's ss was not found"), {},
                {"see 'ss --help' for ss commands"});
  }
  ::setenv("SS_PASSTHROUGH", "1", 1);
  std::vector<std::string> args;
  for (char** a = argv; *a; ++a) args.emplace_back(*a);
  if (const char* t = std::getenv("SS_TRACE"); t && *t && std::string_view(t) != "0") {
    std::vector<std::string> shown = args;
    shown[0] = *other;
    Note(Cat("ss: exec: ", ShellJoin(shown)));
  }
  ExecPath(*other, args);
}

bool ProjectExists(const std::string& name) {
  try {
    return ProjectNameLike(name) && IsDirectory(Cat(ProjectsDir(), "/", name));
  } catch (const Error&) {
    return false;
  }
}

// Every ss-* executable in our directories and on PATH, by verb.
std::map<std::string, std::string> Plugins() {
  std::map<std::string, std::string> found;
  std::vector<std::string> dirs = ExecDirs();
  if (const char* path = std::getenv("PATH")) {
    for (const auto& d : Split(path, ':')) {
      if (!d.empty()) dirs.push_back(d);
    }
  }
  for (const auto& dir : dirs) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("ss-", 0) != 0 || name.size() <= 3) continue;
      std::string full = Cat(dir, "/", name);
      if (IsExecutableFile(full) && !found.count(name.substr(3))) found[name.substr(3)] = full;
    }
    ::closedir(d);
  }
  return found;
}

int ListCommands() {
  auto plugins = Plugins();
  std::set<std::string> binaries_in_table;
  for (const auto& verb : Verbs()) {
    binaries_in_table.insert(verb.binary);
    if (!FindTool(verb.binary)) continue;
    std::cout << verb.name << "\t" << verb.summary << "\n";
  }
  for (const auto& [verb, path] : plugins) {
    if (binaries_in_table.count("ss-" + verb)) continue;
    std::cout << verb << "\tplugin: " << path << "\n";
  }
  return 0;
}

int OpenManual(const std::vector<std::string>& args) {
  std::string page = "ss";
  std::string section = "1";
  if (args.size() > 1) {
    const Verb* verb = FindVerb(args[1]);
    if (!verb) {
      std::vector<std::string> hints;
      if (auto guess = Suggest(args[1], VerbNames()))
        hints.push_back(Cat("did you mean '", *guess, "'?"));
      throw Error(kExitUsage, Cat("no manual page for '", args[1], "': it is not an ss command"),
                  {}, hints);
    }
    page = verb->manual;
    section = verb->manual_section;
  }
  auto man = FindInPath("man");
  if (!man) throw Error(kExitUnavailable, "'man' is not installed", {}, {"install man-db"});
  // Prefer the page shipped beside this binary (a build tree or a prefix outside MANPATH).
  std::string local = Cat(ExecutableDir(), "/../share/man/man", section, "/", page, ".", section);
  std::vector<std::string> argv = IsExecutableFile(local) || PathExists(local)
                                      ? std::vector<std::string>{"man", "-l", local}
                                      : std::vector<std::string>{"man", section, page};
  ExecTool(*man, argv);
}

// `ss init SHELL`: the integration code for the calling shell, on stdout.
int Init(const std::vector<std::string>& args) {
  const std::string usage = Cat("usage: ss init ", Join(InitShells(), "|"));
  const std::string how =
      "bash: eval \"$(ss init bash)\" in ~/.bashrc; zsh: the same in ~/.zshrc; fish: "
      "ss init fish | source in ~/.config/fish/config.fish";
  if (args.size() == 2 && (args[1] == "--help" || args[1] == "-h")) {
    std::cout << usage << "\n\n" << how << "\n";
    return 0;
  }
  if (args.size() != 2) throw UsageError(usage, "ss init", {how});
  auto script = ShellInitScript(args[1], RealPath(platform::ExecutablePath()));
  if (!script) {
    std::vector<std::string> hints;
    if (auto guess = Suggest(args[1], InitShells()))
      hints.push_back(Cat("did you mean '", *guess, "'?"));
    hints.push_back(Cat("shells: ", Join(InitShells(), ", ")));
    throw Error(kExitUsage, Cat("cannot integrate with the shell '", args[1], "'"), {}, hints);
  }
  std::cout << *script;
  return 0;
}

// `ss cd` reached the binary: the shell function of `ss init` is not loaded.
int CdWithoutIntegration(const std::vector<std::string>& args) {
  std::string target = args.size() > 1 ? Cat(" ", ShellQuote(args[1])) : "";
  throw Error(kExitUsage, "'ss cd' changes your shell's directory and needs the shell integration",
              {},
              {"bash or zsh: add eval \"$(ss init bash)\" (or zsh) to your shell's rc file",
               "fish: add 'ss init fish | source' to ~/.config/fish/config.fish",
               Cat("or, once: cd \"$(ss project path", target, ")\"")});
}

// `ss --complete WORD...`: candidates for the last WORD (the one being completed), one per line,
// each followed by a tab and what it is where that helps (the shells that show descriptions, zsh
// and fish, show it; bash drops it). The first word is a verb or a project; later words belong to
// the verb's binary, asked the same way.
int Complete(const std::vector<std::string>& words) {
  if (words.size() <= 1) {
    for (const auto& verb : Verbs()) {
      if (FindTool(verb.binary)) std::cout << verb.name << "\t" << verb.summary << "\n";
    }
    static const std::pair<const char*, const char*> own[] = {
        {"help", "open the manual page of a command"},
        {"commands", "list every command, plugins included"},
        {"init", "shell integration, for 'ss cd PROJECT'"},
        {"cd", "go to a project's folder (with ss init)"}};
    for (const auto& [verb, summary] : own) std::cout << verb << "\t" << summary << "\n";
    for (const auto& [verb, path] : Plugins()) {
      if (!FindVerb(verb)) std::cout << verb << "\tplugin\n";
    }
    DIR* d = ::opendir(ProjectsDir().c_str());
    if (d) {
      while (dirent* e = ::readdir(d)) {
        if (ProjectNameLike(e->d_name)) std::cout << e->d_name << "\tproject\n";
      }
      ::closedir(d);
    }
    return 0;
  }
  if (words[0] == "init") {
    if (words.size() == 2)
      for (const auto& s : InitShells()) std::cout << s << "\n";
    return 0;
  }
  if (words[0] == "help") {
    if (words.size() == 2)
      for (const auto& v : Verbs()) std::cout << v.name << "\t" << v.summary << "\n";
    return 0;
  }
  if (words[0] == "commands") return 0;
  // `ss cd PROJECT` (the shell function of `ss init`) completes like `ss project path`.
  static const Verb project_path{"cd", "ss-project", {"path"}, "", "ss-project"};
  const Verb* verb = words[0] == "cd" ? &project_path : FindVerb(words[0]);
  std::string binary = verb ? verb->binary : "ss-attach";
  auto path = FindTool(binary);
  if (!path) return 0;
  std::vector<std::string> target{binary, "--complete"};
  if (verb) target.insert(target.end(), verb->prefix.begin(), verb->prefix.end());
  target.insert(target.end(), verb ? words.begin() + 1 : words.begin(), words.end());
  ExecTool(*path, target);
}

int Dispatch(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    if (StdinIsTty() && StdoutIsTty()) {
      auto attach = FindTool("ss-attach");
      if (attach) ExecTool(*attach, {"ss-attach"});
    }
    // Not a terminal: a script running bare `ss` means iproute2's socket list.
    if (FindOtherSs() && !std::getenv("SS_PASSTHROUGH")) PassToIproute2(argv, "no command given");
    std::cerr << kUsage;
    return kExitUsage;
  }
  // Options of ours before the command (`ss --sandbox X status`, `ss --json list`) go after it,
  // where the command's binary reads them. iproute2's ss has neither option.
  std::vector<std::string> globals;
  while (!args.empty()) {
    if (args[0] == "--json" || args[0].rfind("--sandbox=", 0) == 0 ||
        args[0].rfind("--profile=", 0) == 0) {
      globals.push_back(args[0]);
      args.erase(args.begin());
    } else if (args[0] == "--sandbox" || args[0] == "--profile") {
      if (args.size() < 2) {
        throw Error(
            kExitUsage,
            Cat(args[0], " needs a ", args[0] == "--sandbox" ? "sandbox" : "profile", " name"), {},
            {Cat("such as: ss ", args[0], " NAME status")});
      }
      globals.insert(globals.end(), {args[0], args[1]});
      args.erase(args.begin(), args.begin() + 2);
    } else {
      break;
    }
  }
  if (!globals.empty()) {
    if (args.empty() || args[0][0] == '-' || IsIproute2Word(args[0]) ||
        (!FindVerb(args[0]) && !ProjectNameLike(args[0]) && !IsFolderWord(args[0]) &&
         !FindTool("ss-" + args[0]))) {
      throw Error(kExitUsage,
                  Cat("'", globals[0], "' goes with a command",
                      args.empty() ? std::string() : Cat(", and '", args[0], "' is not one")),
                  {}, {"such as: ss --sandbox NAME status, ss --json list; see 'ss --help'"});
    }
  }
  const std::string first = args[0];
  if (first == "--help") {
    std::cout << kUsage;
    return 0;
  }
  if (first == "--version") {
    std::cout << VersionLine("ss") << "\n";
    return 0;
  }
  if (first == "help") return OpenManual(args);
  if (first == "commands") return ListCommands();
  if (first == "init") return Init(args);
  if (first == "cd") return CdWithoutIntegration(args);
  if (first == "--complete") return Complete({args.begin() + 1, args.end()});
  if (first.size() > 1 && first[0] == '-') {
    PassToIproute2(argv, Cat("'", first, "' is not an ss option"));
  }

  // A path (`ss .`, `ss ../app`, `ss /srv/app`) is a folder to open: `ss run PATH`.
  if (IsFolderWord(first)) args.insert(args.begin(), "run");
  if (const Verb* verb = FindVerb(args[0])) {
    auto path = FindTool(verb->binary);
    if (!path) {
      throw Error(kExitUnavailable,
                  Cat("'", args[0], "' is provided by ", verb->binary, ", which is not installed"),
                  {}, {"reinstall ss: ./install.sh"});
    }
    std::vector<std::string> target{verb->binary};
    target.insert(target.end(), verb->prefix.begin(), verb->prefix.end());
    target.insert(target.end(), globals.begin(), globals.end());
    target.insert(target.end(), args.begin() + 1, args.end());
    ExecTool(*path, target);
  }

  bool is_project = ProjectExists(first);
  if (!is_project) {
    if (auto plugin = FindTool("ss-" + first); plugin && first.find('/') == std::string::npos) {
      std::vector<std::string> target{"ss-" + first};
      target.insert(target.end(), globals.begin(), globals.end());
      target.insert(target.end(), args.begin() + 1, args.end());
      ExecTool(*plugin, target);
    }
    if (IsIproute2Word(first)) PassToIproute2(argv, Cat("'", first, "' is not an ss command"));
    auto guess = Suggest(first, VerbNames());
    if (guess || !ProjectNameLike(first)) {
      std::vector<std::string> details;
      if (guess) details.push_back(Cat("Did you mean '", *guess, "'?"));
      Error e(kExitUsage, Cat("'", first, "' is not an ss command. See 'ss --help'."), details);
      std::cerr << "ss: " << e.what() << "\n";
      for (const auto& d : e.details()) std::cerr << d << "\n";
      return kExitUsage;
    }
  }
  // A project name: open it.
  auto attach = FindTool("ss-attach");
  if (!attach) {
    throw Error(kExitUnavailable, "opening a project needs ss-attach, which is not installed", {},
                {"reinstall ss: ./install.sh"});
  }
  std::vector<std::string> target{"ss-attach"};
  target.insert(target.end(), globals.begin(), globals.end());
  target.insert(target.end(), args.begin(), args.end());
  ExecTool(*attach, target);
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  return ss::RunTool("ss", argc, argv, [&](const ss::Args&) { return ss::Dispatch(argc, argv); });
}
