// ss-attach: sessions in a sandbox. `ss PROJECT` opens the agent in the project (starting the
// sandbox when needed); the verbs of the LXD sandbox tool (shell, root, login, claude,
// claude-run, claude-resume, exec, docker, logs) and `ss ssh-config` live here too.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <set>
#include <thread>

#include "attach_line.hpp"
#include "box.hpp"
#include "browser.hpp"
#include "config.hpp"
#include "egress.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "folders.hpp"
#include "fs_at.hpp"
#include "git_layer.hpp"
#include "held_repository.hpp"
#include "host_exec.hpp"
#include "menu.hpp"
#include "net_inject.hpp"
#include "net_secrets.hpp"
#include "net_store.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "project.hpp"
#include "prompt.hpp"
#include "rescue.hpp"
#include "sandbox.hpp"
#include "session_share.hpp"
#include "share_guard.hpp"
#include "shares.hpp"
#include "shell_quote.hpp"
#include "ssh.hpp"
#include "strings.hpp"
#include "suggest.hpp"
#include "timefmt.hpp"
#include "tool.hpp"
#include "update.hpp"
#include "working_copy.hpp"

namespace ss {
namespace {

std::string ProjectDir(const std::string& project);

// The sandbox of a session: --profile NAME's (the sandbox NAME), else the one --sandbox,
// $SS_SANDBOX or $CLAUDE_SANDBOX names, else for `ss run DIR` the folder's own.
std::string SessionSandbox(const AttachLine& o, const Config& config, const Folder* folder) {
  if (!o.profile.empty()) return ProfileSandbox(config, o.profile, o.sandbox);
  if (folder && o.sandbox.empty()) return folder->sandbox;
  return ResolveSandboxName(o.sandbox);
}

class Session {
 public:
  explicit Session(const AttachLine& o, const Folder* folder = nullptr)
      : o_(o), config_(Config::Load()), folder_(folder), name_(SessionSandbox(o, config_, folder)) {
    if (o.ephemeral) config_.Override(Cat("sandboxes.", name_, ".ephemeral"), *o.ephemeral);
    // Folders asked for are checked before anything starts.
    if (o.no_mount || !o.mounts.empty() || folder) shares_ = RequestedShares();
  }

  // Where the session works: the folder of `ss run` (the home with --no-mount), else `project`'s.
  // In working-copy mode, with the copy in place and the host's folder sent first.
  std::string Dir(const std::string& project) {
    if (folder_) {
      if (o_.no_mount) return "~";
      if (folder_->copy) PrepareWorkingCopy(Connect(), config_, FolderCopy(*folder_), name_);
      return folder_->Target();
    }
    if (o_.no_mount && !project.empty()) {
      throw Error(kExitUsage,
                  Cat("--no-mount shares no folder, and the project '", project, "' is one"), {},
                  {"to work in no host folder: ss shell --no-mount, or ss run --no-mount"});
    }
    if (!project.empty()) {
      if (auto folder = FolderOfSandbox(name_)) {
        throw Error(kExitUsage,
                    Cat("sandbox '", name_, "' belongs to the folder ", folder->path,
                        ": it shares no projects"),
                    {},
                    {Cat("open the project in another sandbox: ss ", project, " --sandbox NAME")});
      }
      if (IsCopyMode(config_, project)) {
        PrepareWorkingCopy(Connect(), config_, ProjectCopy(config_, project), name_);
        return CopyDir(project);
      }
      HoldRepositoryOf(project, PlaceProject(config_, project));
    }
    return ProjectDir(project);
  }

  // A shared project's repository stays on the host (held_repository.hpp); the sandbox has one of
  // its own, brought up to the host's branches before the session.
  void HoldRepositoryOf(const std::string& project, const std::string& dir) {
    if (HoldForUse(dir, project).state == Holding::State::kHeld) {
      RefreshSandboxRepository(Runner(true), project);
    }
  }

  // Commands in the sandbox over its shared connection when there is one, else over the
  // session's own: made (the sandbox started when it is stopped) with `start`, else only when it
  // runs (a command then ends 255).
  SandboxRun Runner(bool start) {
    return [this, start](const std::vector<std::string>& argv, int in, int out, int err) {
      SharedCommand c{argv, "", {}, {in, out, err}};
      if (auto status = RunShared(name_, c)) return *status;
      if (!start && !conn_) conn_ = sandbox().TryConnect();
      if (!start && !conn_) return 255;
      return RunOver(Connect())(argv, in, out, err);
    };
  }

  // The guard of its shared folders runs while it does (share_guard.hpp): started when it is not
  // (a sandbox started before this version of ss, or its guard killed).
  void KeepGuard() {
    if (!ShareGuardRunning(name_)) sandbox().KeepGuard();
  }

  // Starts the sandbox when it is not running (the spec's auto-start), then connects.
  SshConnection& Connect() {
    if (conn_) return *conn_;
    // The session counts from here: an ephemeral sandbox being removed by the last session
    // is waited for, then made afresh.
    if (!lease_) lease_ = sandbox().BeginSession([this] { return KeepReason(); });
    conn_ = sandbox().TryConnect();
    if (conn_) {
      KeepGuard();
      return *conn_;
    }
    if (sandbox().State() != SandboxState::kRunning) Note("Starting VM...");
    Progress progress(Cat("sandbox ", name_));
    conn_ = sandbox().EnsureRunning(progress, o_.timeout > 0 ? std::chrono::seconds(o_.timeout)
                                                             : sandbox().DefaultStartTimeout());
    return *conn_;
  }

  // Why an ephemeral sandbox must stay when its last session ends: working copies with changes
  // not yet applied (or no way to tell). Asked over a connection of its own: the session's is
  // closed by then. A sandbox that went down during the session (powered off inside, out of
  // memory, crashed) and holds working copies is started to be asked, never removed blind.
  std::optional<std::string> KeepReason() {
    try {
      std::unique_ptr<SshConnection> conn = sandbox().TryConnect();
      if (!conn) {
        if (CopySourcesIn(config_, name_).empty()) return std::nullopt;
        // Going down takes a moment; asked before it is down, a sandbox answers nothing true.
        SandboxState state = sandbox().State();
        for (int i = 0; i < 60 && state == SandboxState::kRunning; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
          if ((conn = sandbox().TryConnect())) break;
          state = sandbox().State();
        }
        if (state == SandboxState::kNotExists) return std::nullopt;
      }
      if (!conn) {
        Note(Cat("Sandbox '", name_,
                 "' stopped during the session; starting it to look for changes not yet "
                 "applied..."));
        Progress progress(Cat("sandbox ", name_));
        // A machine that has just gone down may refuse to start for a moment (QEMU's supervisor
        // still winding down on a busy host): asked again a little later, a few times.
        for (int attempt = 1;; ++attempt) {
          try {
            conn = sandbox().EnsureRunning(progress, sandbox().DefaultStartTimeout());
            break;
          } catch (const Error&) {
            if (attempt == 3) throw;
            std::this_thread::sleep_for(std::chrono::seconds(5));
          }
        }
      }
      std::vector<std::string> names;
      for (const auto& w : FindUnapplied(*conn, config_, name_)) names.push_back(w.project);
      if (names.empty()) return std::nullopt;
      return Cat("working copies have changes not yet applied (", Join(names, ", "),
                 "); bring them to the host with ss apply, then remove it: ss vm delete --sandbox ",
                 name_, " --force");
    } catch (const Error& e) {
      // The first detail says why ("Reason: ..."), when there is one.
      std::string why = e.what();
      if (!e.details().empty() && e.details()[0].rfind("Reason: ", 0) == 0) {
        why += Cat(": ", e.details()[0].substr(8));
      }
      return Cat("could not look for changes not yet applied in its working copies (", why,
                 "); remove it yourself: ss vm delete --sandbox ", name_, " --force");
    }
  }

  EnvList Secrets() {
    auto left_out = [&](const std::string& name) {
      return std::count(o_.no_secrets.begin(), o_.no_secrets.end(), name) > 0;
    };
    // Secrets injected by ss-net come in as placeholders (set first: they win over --env).
    InjectedSecrets injected = PrepareInjectedSecrets(config_, name_);
    EnvList out;
    for (auto& kv : injected.env) {
      if (!left_out(kv.first)) out.push_back(std::move(kv));
    }
    injecting_ = !out.empty();
    std::vector<std::string> names;
    for (const auto& item : config_.SandboxValue(name_, "secrets"))
      names.push_back(item.get<std::string>());
    names.insert(names.end(), o_.secrets.begin(), o_.secrets.end());
    // The sandbox's (or profile's) env, then --env: NAME=VALUE as written, NAME the host's.
    std::vector<std::string> env;
    for (const auto& item : config_.SandboxValue(name_, "env"))
      env.push_back(item.get<std::string>());
    env.insert(env.end(), o_.env.begin(), o_.env.end());
    for (const auto& entry : env) {
      size_t eq = entry.find('=');
      if (eq == std::string::npos) {
        names.push_back(entry);
      } else if (!left_out(entry.substr(0, eq))) {
        std::erase_if(out, [&](const auto& kv) { return kv.first == entry.substr(0, eq); });
        out.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
      }
    }
    Json sources = config_.SecretSources(name_);
    SecretReader reader;
    for (const auto& name : names) {
      CheckEnvName(name);
      if (left_out(name)) continue;
      if (std::any_of(out.begin(), out.end(), [&](const auto& kv) { return kv.first == name; }))
        continue;
      // Read where config.yaml says (a file, a password manager's command), at each session.
      if (sources.contains(name) && !std::count(env.begin(), env.end(), name)) {
        std::string why;
        auto value = reader.Read(SecretSourceFromJson(sources[name]).value(), &why);
        if (!value) {
          throw Error(kExitConfig, Cat("the secret ", name, " could not be read: ", why), {},
                      {"fix its from: under secrets in config.yaml (ss config get secrets)"});
        }
        out.emplace_back(name, std::move(*value));
        continue;
      }
      const char* v = std::getenv(name.c_str());
      if (!v) {
        Warn(Cat("$", name, " is not set on the host; the session starts without it"));
        continue;
      }
      out.emplace_back(name, v);
    }
    return out;
  }

  // The agent's command line from agent.command (the sandbox's or profile's first), split into
  // words (never given to a shell).
  std::vector<std::string> AgentArgv() {
    std::string key = config_.SandboxKey(name_, "agent.command");
    return ShellSplit(config_.SandboxValue(name_, "agent.command").get<std::string>(),
                      Cat(key.empty() ? std::string("agent.command") : key, " in config.yaml"));
  }

  // With agent.browser auto, Claude Code is started with --chrome when Claude in Chrome is the
  // session's browser path.
  void AddBrowserFlag(std::vector<std::string>& argv, const BrowserBridge* browser) {
    if (!browser || browser->mode() != BrowserMode::kSocket) return;
    if (config_.String("agent.browser") != "auto" || argv.empty()) return;
    if (Basename(argv[0]) != "claude" || std::count(argv.begin(), argv.end(), "--chrome")) return;
    argv.insert(argv.begin() + 1, "--chrome");
  }

  // config.yaml's network counts from the next session: the policy ss-net follows is written
  // again when the file changed since (a fenced sandbox's only).
  void RefreshNetPolicy() {
    if (PathExists(NetPolicyPath(name_))) WriteNetPolicy(name_);
  }

  int Interactive(std::vector<std::string> argv, const std::string& cwd) {
    started_ = true;
    RefreshNetPolicy();
    InteractiveOptions io;
    io.argv = std::move(argv);
    io.cwd = cwd;
    io.secret_env = Secrets();
    SshConnection& conn = Connect();
    if (injecting_) TrustNetCa(conn);
    return conn.RunInteractive(io);
  }

  // A command without a terminal: over the sandbox's shared connection when there is one (see
  // session_share.hpp), else over a connection of its own, leaving a shared one for next time.
  int Stream(const std::vector<std::string>& argv, const std::string& cwd) {
    started_ = true;
    if (o_.force_tty) return Interactive(argv, cwd);
    CheckShares();
    StreamOptions so;
    so.cwd = cwd;
    so.secret_env = Secrets();
    // The shared connection skips the start-up checks; the sandbox's network proxy is still
    // started again when it is gone.
    if (EgressServerGone(name_)) sandbox().KeepEgress();
    KeepGuard();
    RefreshNetPolicy();
    if (auto status = RunShared(name_, {argv, cwd, so.secret_env})) return *status;
    SshConnection& conn = Connect();
    // (A shared connection is started only here, after the CA is in place.)
    if (injecting_) TrustNetCa(conn);
    StartShareMaster(ExecutableDir() + "/ss-attach", name_);
    return conn.ExecStream(argv, so);
  }

  bool AgentLoggedIn() {
    ExecResult r = Connect().Exec({"test", "-s", "/home/sandbox/.claude/.credentials.json"});
    return r.status == 0;
  }

  // The sandbox and its backend are looked at only when needed: bad input is reported first,
  // and a command the shared connection serves never asks the backend anything.
  Sandbox& sandbox() {
    if (!sandbox_) {
      sandbox_ = std::make_unique<Sandbox>(name_, config_);
      if (shares_) sandbox_->set_shares(*shares_);
    }
    return *sandbox_;
  }
  Config& config() { return config_; }
  const std::string& name() const { return name_; }
  // Whether the session's command or agent was started (its folder ready, the sandbox reached).
  bool started() const { return started_; }

 private:
  // What --no-mount, --mount and `ss run DIR` ask the sandbox to share: the sandbox's (or
  // profile's) configured folders, without the projects for a folder's own sandbox.
  Shares RequestedShares() const {
    Shares shares;
    if (o_.no_mount) {
      shares.projects = false;
      return shares;
    }
    shares = ConfiguredShares(config_, name_);
    if (folder_ && name_ == folder_->sandbox) shares.projects = false;
    for (const auto& m : o_.mounts) {
      shares.mounts.push_back(
          {Cat("mount-", shares.mounts.size() + 1),
           ResolveHostFolder(m.host, "mount source", Cat("--mount ", m.host, ":", m.guest),
                             !m.read_only),
           m.guest, m.read_only});
    }
    // Copy mode shares the folder with nothing: ss sends it (working_copy.hpp).
    if (folder_ && !folder_->copy) {
      shares.mounts.push_back({"workspace", folder_->path, folder_->Target(), false});
    }
    std::set<std::string> targets;
    for (const auto& m : shares.mounts) {
      if (!targets.insert(m.target).second) {
        throw Error(kExitUsage, Cat("two folders would be shared at ", m.target), {},
                    {"give each --mount a GUEST of its own"});
      }
    }
    return shares;
  }

  // A session asking for folders the existing sandbox does not share is refused before it
  // connects: the sandbox checks them when they are set (see sandbox()), and the quick path of
  // Stream, which needs no sandbox otherwise, sets them first.
  void CheckShares() {
    if (shares_) sandbox();
  }

  const AttachLine& o_;
  Config config_;
  const Folder* folder_;
  std::string name_;
  std::optional<Shares> shares_;
  std::unique_ptr<Sandbox> sandbox_;
  std::unique_ptr<SessionLease> lease_;  // ends after the connection
  std::unique_ptr<SshConnection> conn_;
  bool started_ = false;
  bool injecting_ = false;  // secrets injected by ss-net: the sandbox must trust its CA
};

std::string ProjectDir(const std::string& project) {
  return project.empty() ? "~" : Cat("/home/sandbox/projects/", project);
}

// The browser bridge of a session: its forwards ride the session's connection and end with it.
// No browser is never a reason not to attach: it is said, and the session goes on.
std::unique_ptr<BrowserBridge> StartBrowser(SshConnection& conn, const Config& config) {
  try {
    BrowserSetupOptions options;
    options.cdp_port = static_cast<int>(config.Int("browser.cdp_port"));
    auto browser = BrowserBridge::Start(conn, options);
    for (const auto& w : browser->warnings()) Warn(w);
    std::cerr << browser->Message() << std::flush;
    return browser;
  } catch (const Error& e) {
    if (e.code() == kExitRemote) throw;  // the connection is gone
    Warn(Cat("no browser bridge: ", e.what()));
    return nullptr;
  }
}

// The project must exist on the host (the spec's not-found block otherwise); opening it counts
// as an access (recorded at most once a minute: a script running commands in a loop does not
// rewrite the metadata each time).
void RequireProject(const std::string& name) {
  ProjectStore store;
  ValidateProjectName(name);
  auto project = store.Find(name);
  if (!project) throw store.NotFoundError(name);
  if (project->state != MetadataState::kOk ||
      NowSeconds() - project->metadata.last_accessed > std::chrono::minutes(1)) {
    store.Touch(name);
  }
}

void CheckForUpdates() { UpdateOnLaunch(ExecutableDir() + "/ss-update"); }

// The agent (or a shell, or CMD) in `s`, working in `dir`; `title` heads the banner.
int OpenSession(const AttachLine& o, Session& s, const std::string& title,
                const std::function<std::string()>& dir) {
  if (o.has_command) return s.Stream(o.command, dir());
  if (o.terminal) {
    auto browser = StartBrowser(s.Connect(), s.config());
    return s.Interactive({}, dir());
  }
  std::vector<std::string> agent = s.AgentArgv();  // a bad agent.command fails before connecting
  s.Connect();
  Note("Connecting...");
  auto browser = StartBrowser(s.Connect(), s.config());
  s.AddBrowserFlag(agent, browser.get());
  std::vector<std::string> banner = {Cat("Super-Sandbox · ", title)};
  if (!s.AgentLoggedIn()) banner.insert(banner.end(), {"", "First time? Run: /login"});
  Note(Cat("\n", Box(banner, 55, 2)));
  return s.Interactive(agent, dir());
}

// Runs `session`, then `after` on its way out, however it ends, unless the session never started
// its command (its folder could not be made ready, the sandbox not reached or never made): the
// sandbox then did nothing for it, and holds nothing of it to fetch.
int ThenAlways(Session& s, const std::function<int()>& session,
               const std::function<void()>& after) {
  auto then = [&] {
    if (s.started() && SandboxExists(s.name())) after();
  };
  int status = 0;
  try {
    status = session();
  } catch (...) {
    then();
    throw;
  }
  then();
  return status;
}

// A session in a shared folder (`host_dir`, the host's own; shared project `project`'s, if any):
// on its way out, for whatever reason, it names the files it changed there that the host runs or
// obeys on its own.
int NamingHostExecChanges(Session& s, const std::string& host_dir, const std::string& project,
                          const std::function<int()>& session) {
  // Linux takes change times from its coarse clock (or a finer one, never behind it): a change
  // made after this reads no earlier; one made before reads later only within the same tick.
  auto now = [] {
    struct timespec t {};
#ifdef CLOCK_REALTIME_COARSE
    ::clock_gettime(CLOCK_REALTIME_COARSE, &t);
#else
    ::clock_gettime(CLOCK_REALTIME, &t);
#endif
    return t;
  };
  const struct timespec since = now();
  // And what changed since the last session here named such files: between sessions, what
  // runs in the sandbox without one (ss exec, a process left running) may have changed them.
  struct timespec from = since;
  if (auto named = ShareNamedUntil(s.name(), host_dir); named && !AtOrAfter(*named, since)) {
    from = *named;
  }
  // What the guard did since a session last showed it: during this one, and between (what runs
  // in the sandbox without a session).
  size_t session_from = ShareGuardLogSize(s.name());
  size_t guard_from = std::min(ShareGuardShown(s.name()), session_from);
  auto name_them = [&] {
    size_t upto = ShareGuardLogSize(s.name());
    std::vector<std::string> guarded = ShareGuardSaid(s.name(), guard_from);
    if (!guarded.empty()) {
      Warn(guard_from < session_from
               ? "while the sandbox ran, ss set aside what it put where the host's git reads:"
               : "while the session ran, ss set aside what the sandbox put where the host's git "
                 "reads:");
      // The first ten, and every line that says what the guard could not do (where git must not
      // run), however many came before it.
      size_t shown = 0;
      for (size_t i = 0; i < guarded.size(); ++i) {
        if (i >= 10 && !ShareGuardCouldNot(guarded[i])) continue;
        Note(Cat("  ", guarded[i]));
        ++shown;
      }
      if (shown < guarded.size()) {
        Note(Cat("  and ", guarded.size() - shown, " more, every one in ",
                 DisplayPath(ShareGuardLogPath(s.name()))));
      }
    }
    try {
      ShareGuardMarkShown(s.name(), upto);
    } catch (const Error&) {
      // (Not written, the next session's end shows these lines again.)
    }
    HostExecChanges found;
    const struct timespec looked = now();
    try {
      found = ChangedHostExec(host_dir, from, HostExecRules::From(s.config(), host_dir));
    } catch (const Error&) {
      return;  // a folder that cannot be read is said elsewhere
    }
    std::vector<HostExecChange>& changed = found.files;
    // ss's own .git file, written as a project's repository is first held: not the sandbox's.
    if (!project.empty()) {
      Fd dir(::open(host_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      std::string problem;
      if (dir.ok() &&
          ReadSmallFileAt(dir.get(), ".git", 4096, &problem).value_or("") == HeldGitFile(project)) {
        std::erase_if(changed, [](const HostExecChange& c) { return c.path == ".git"; });
      }
    }
    try {
      ShareMarkNamed(s.name(), host_dir, looked);
    } catch (const Error&) {
      // (Not written: the next session's end names these again.)
    }
    if (found.cut_at > 0) {
      Warn(Cat("ss looked at the first ", found.cut_at, " entries of ", DisplayPath(host_dir),
               " only: files the host runs or obeys further in are not named here"));
    }
    if (changed.empty()) return;
    // 0: changed between sessions; 1: during this one; 2: links to folders, named every time.
    auto group = [&](const HostExecChange& c) {
      return c.link_to_folder ? 2 : AtOrAfter(c.changed, since) ? 1 : 0;
    };
    auto say = [&](int which) {
      size_t n = std::count_if(changed.begin(), changed.end(),
                               [&](const HostExecChange& c) { return group(c) == which; });
      if (n == 0) return;
      std::string files = Cat(n, n == 1 ? " file" : " files", " in ", DisplayPath(host_dir),
                              " that the host runs or obeys on its own");
      Warn(which == 1   ? Cat("the session changed ", files, ":")
           : which == 0 ? Cat("between the last session there and this one, something changed ",
                              files, " (what ran in the sandbox without a session, or you):")
                        : Cat(n, n == 1 ? " link in " : " links in ", DisplayPath(host_dir),
                              n == 1 ? " leads to a folder" : " lead to folders",
                              " the host's tools obey; ss does not look at what is in ",
                              n == 1 ? "it:" : "them:"));
      for (const auto& c : changed) {
        if (group(c) == which) Note(Cat("  ", Printable(c.path), " (", c.what, ")"));
      }
    };
    say(0);
    say(1);
    say(2);
    Note("hint: read them before git, an editor or an agent opens the folder on the host");
  };
  return ThenAlways(s, session, name_them);
}

// What the agent left in the copy without committing it stays there until `ss apply`: said as a
// session ends, counted by git in the sandbox (its words are only counted, never shown).
void SayUncommitted(SshConnection& conn, const CopySource& source) {
  ExecOptions o;
  o.max_output = 64 * 1024;
  ExecResult st = conn.Exec(
      {"git", "-C", CopyDir(source.name), "status", "--porcelain", "--untracked-files=all"}, o);
  if (st.status != 0) return;
  size_t files = std::count(st.out.begin(), st.out.end(), '\n');
  if (files == 0) return;
  Note(Cat("Not committed in the working copy: ", st.over_limit ? "more than " : "", files,
           files == 1 ? " file" : " files", "; see them: ss diff ", source.word,
           ", bring them: ss apply ", source.word));
}

// A session in a working copy: on its way out, for whatever reason, the commits made in the
// copy's own repository come to the host's (git_layer.hpp), before an ephemeral sandbox goes.
int FetchingCommits(Session& s, const CopySource& source, const std::function<int()>& session) {
  auto fetch = [&] {
    try {
      std::unique_ptr<SshConnection> conn = s.sandbox().TryConnect();
      if (!conn) {
        Warn(Cat("the commits of the working copy of ", source.word, " were not fetched: sandbox '",
                 s.sandbox().name(), "' cannot be reached; they stay there: ss fetch ", source.word,
                 " once it runs"));
        return;
      }
      FetchReport report = FetchGitLayer(*conn, s.config(), CopyLayer(source), s.sandbox().name());
      for (const auto& line : FetchLines(report)) Note(Cat("Fetched from the sandbox: ", line));
      if (report.repository) SayUncommitted(*conn, source);
    } catch (const Error& e) {
      Warn(Cat("the commits of the working copy of ", source.word, " were not fetched: ", e.what(),
               "; try again: ss fetch ", source.word));
    }
  };
  return ThenAlways(s, session, fetch);
}

// A session in shared project `name` (its folder `dir`): on its way out, its .git file is put
// back if the sandbox changed it, and the commits of the sandbox's repository of it come to the
// host's (held_repository.hpp).
int FetchingSharedCommits(Session& s, const std::string& name, const std::string& dir,
                          const std::function<int()>& session) {
  auto fetch = [&] {
    try {
      if (HoldForUse(dir, name).state != Holding::State::kHeld) return;
      // Asked first over the connection the session has, or the sandbox's shared one.
      LayerPlace place = SharedLayer(name, dir);
      SandboxOutput listed = RunCaptured(s.Runner(false), LayerBranchesArgv(place));
      if (listed.status == 0 && NothingToFetch(place, listed.out)) return;
      std::unique_ptr<SshConnection> conn = s.sandbox().TryConnect();
      if (!conn) {
        Warn(Cat("the commits of project '", name, "' were not fetched: sandbox '",
                 s.sandbox().name(), "' cannot be reached; they stay there: ss fetch ", name,
                 " once it runs"));
        return;
      }
      FetchReport report = FetchGitLayer(*conn, s.config(), place, s.sandbox().name());
      for (const auto& line : FetchLines(report)) Note(Cat("Fetched from the sandbox: ", line));
    } catch (const Error& e) {
      Warn(Cat("the commits of project '", name, "' were not fetched: ", e.what(),
               "; try again: ss fetch ", name));
    }
  };
  return ThenAlways(s, session, fetch);
}

// A session in project `name` (none: the home directory), then what follows it however it
// ends: a working copy's commits come to the host; a shared project's too, and its changes to
// files the host runs or obeys are named.
int InProject(Session& s, const std::string& name, const std::function<int()>& session) {
  if (name.empty()) return session();
  if (IsCopyMode(s.config(), name)) {
    return FetchingCommits(s, ProjectCopy(s.config(), name), session);
  }
  std::string dir = PlaceProject(s.config(), name);
  return NamingHostExecChanges(s, dir, name,
                               [&] { return FetchingSharedCommits(s, name, dir, session); });
}

int OpenProject(const AttachLine& o) {
  const std::string& name = o.words.empty() ? std::string() : o.words[0];
  if (o.words.size() > 1) {
    throw Error(kExitUsage, Cat("unexpected argument '", o.words[1], "'"), {},
                {"to run a command: ss PROJECT -- CMD ARGS..."});
  }
  RequireProject(name);
  if (!o.has_command) CheckForUpdates();
  Session s(o);
  return InProject(s, name, [&] { return OpenSession(o, s, name, [&] { return s.Dir(name); }); });
}

// --copy and --no-copy: the folder's mode, recorded while its sandbox is not made (the mode
// decides what it shares). A folder in copy mode opens in its own sandbox only, with its share.
// A git repository is in copy mode unless told otherwise; shared, each session says what that
// exposes.
void ChooseFolderMode(const AttachLine& o, Folder& folder) {
  std::string word = ShellQuote(folder.path);
  auto made = [&] {
    auto known = KnownSandboxes();
    return std::find(known.begin(), known.end(), folder.sandbox) != known.end();
  };
  if (o.copy && *o.copy != folder.copy) {
    if (made()) {
      throw Error(
          kExitUsage,
          Cat("the folder ", folder.path, " is open ", folder.copy ? "in copy mode" : "read-write",
              " in sandbox '", folder.sandbox, "'"),
          {"the mode decides what its sandbox shares, which is fixed when the sandbox is made"},
          {Cat("to switch: ", folder.copy ? Cat("ss apply ", word, ", then ") : "",
               "ss vm delete --sandbox ", folder.sandbox, ", then ss run ", word,
               *o.copy ? " --copy" : " --no-copy")});
    }
    folder.copy = *o.copy;
    RecordFolder(folder);
  }
  bool by_default = folder.first_use && !o.copy;
  if (!folder.copy) {
    if (!o.no_mount && HoldsRepository(folder.path)) {
      Warn(Cat(folder.path,
               " is a git repository shared read-write: the sandbox can change its .git (hooks, "
               "settings), which git on this machine obeys; to keep it out of reach: ",
               made() ? Cat("ss vm delete --sandbox ", folder.sandbox, ", then ") : "", "ss run ",
               word, " --copy"));
    }
    return;
  }
  if (!o.sandbox.empty() || !o.profile.empty()) {
    throw Error(kExitUsage,
                Cat("the folder ", folder.path,
                    by_default ? " is a git repository, in copy mode" : " is in copy mode",
                    ": it opens in its own sandbox only"),
                {},
                {Cat("leave out ", o.profile.empty() ? "--sandbox" : "--profile",
                     by_default ? ", or share it read-write there: --no-copy" : "")});
  }
  if (o.no_mount && !by_default) {
    throw Error(kExitUsage, "--no-mount shares no folder, and copy mode needs the folder's", {},
                {"to work in no host folder: ss shell --no-mount, or ss run --no-mount"});
  }
  if (by_default && !o.no_mount) {
    Note(Cat(folder.path,
             " is a git repository: the agent works in a copy of it, the folder shared with "
             "nothing."));
    Note("Its commits come back when a session ends; other changes with ss diff and ss apply.");
    Note(Cat("To share it read-write instead: ss run ", word, " --no-copy"));
  }
}

// `ss run [DIR]`, `ss .`: any folder of the host, in its own sandbox (or --profile's).
int RunFolder(const AttachLine& o) {
  if (o.words.size() > 1) {
    throw UsageError(Cat("unexpected argument '", o.words[1], "'"), "ss run",
                     {"usage: ss run [DIR] [-t | -- CMD [ARGS...]]"});
  }
  Folder folder = OpenFolder(o.words.empty() ? "." : o.words[0]);
  ChooseFolderMode(o, folder);
  if (!o.has_command) CheckForUpdates();
  Session s(o, &folder);
  auto session = [&] { return OpenSession(o, s, folder.name, [&] { return s.Dir(""); }); };
  if (o.no_mount) return session();
  if (folder.copy) return FetchingCommits(s, FolderCopy(folder), session);
  return NamingHostExecChanges(s, folder.path, "", session);
}

// Opens `name` as `ss NAME` does.
int Attach(const std::string& name) {
  AttachLine o;
  o.words = {name};
  return OpenProject(o);
}

// Asks for a project name inside the first-run box until one is created; nullopt at end of
// input. The answer is drawn back into the box (the cursor goes up over the typed line).
std::optional<std::string> CreateFirstProject() {
  std::cout << "\n" << FirstRunTop();
  ProjectStore store;
  while (true) {
    std::cout << "│  Project name: " << std::flush;
    std::string name;
    if (!std::getline(std::cin, name)) {
      std::cout << "\n" << FirstRunBottom();
      return std::nullopt;
    }
    name = std::string(Trim(name));
    std::cout << "\x1b[1A\r" << FirstRunLine(Cat("Project name: ", name));
    std::string problem;
    if (name.empty()) {
      problem = "Type a name, such as my-first-project.";
    } else if (!IsValidProjectName(name)) {
      problem = "Use 2-50 lowercase letters, digits and hyphens.";
    } else {
      try {
        Project p = store.Create(name);
        std::cout << FirstRunBottom() << "\nCreated: " << DisplayPath(p.path) << "\n\n"
                  << std::flush;
        return name;
      } catch (const Error& e) {
        problem = e.what();
      }
    }
    if (DisplayWidth(problem) > kMenuWidth - 4) problem = problem.substr(0, kMenuWidth - 7) + "...";
    std::cout << FirstRunLine(problem) << FirstRunLine("");
  }
}

// Bare `ss` on a terminal: the spec's project menu (or the first-run box when there are no
// projects). Choosing a project opens it; [s] runs the Settings menu of `ss config`.
int Menu() {
  CheckForUpdates();
  while (true) {
    ProjectStore store;
    std::vector<Project> projects = store.List();
    if (projects.empty()) {
      auto name = CreateFirstProject();
      if (!name) return 0;
      return Attach(*name);
    }
    std::sort(projects.begin(), projects.end(), [](const Project& a, const Project& b) {
      if (a.metadata.last_accessed != b.metadata.last_accessed)
        return a.metadata.last_accessed > b.metadata.last_accessed;
      return a.name < b.name;
    });
    SystemTime now = NowSeconds();
    std::vector<MenuProject> items;
    for (const auto& p : projects)
      items.push_back({p.name, FormatAgoShort(p.metadata.last_accessed, now)});
    std::cout << "\n" << ProjectMenu(items) << "\n";
    bool redraw = false;
    while (!redraw) {
      auto answer = ReadLine(ProjectMenuPrompt(items.size()));
      if (!answer) return 0;
      MenuChoice c = ParseMenuChoice(*answer, items.size(), "nsq");
      if (c.number > 0) return Attach(items[c.number - 1].name);
      if (c.letter == 'q') return 0;
      if (c.letter == 's') {
        ProcessOptions po;
        po.inherit_stdin = true;
        po.capture_stdout = po.capture_stderr = false;
        po.unlisted = true;
        ss::Run({ExecutableDir() + "/ss-config"}, po);
        redraw = true;
      } else if (c.letter == 'n') {
        while (true) {
          auto name = ReadLine("Project name: ");
          if (!name) return 0;
          std::string n(Trim(*name));
          if (n.empty()) {
            redraw = true;
            break;
          }
          std::optional<Project> created;
          try {
            ValidateProjectName(n);
            created = store.Create(n);
          } catch (const Error& e) {
            PrintError(e);
            continue;
          }
          std::cout << "Created: " << DisplayPath(created->path) << "\n\n" << std::flush;
          return Attach(n);
        }
      } else {
        Note(Cat("Invalid choice '", Trim(*answer), "'. ",
                 items.size() == 1 ? "Enter 1" : Cat("Enter a number from 1 to ", items.size()),
                 ", n, s or q."));
      }
    }
  }
}

// [PROJECT] as the first word of a verb, when it names a project.
std::string OptionalProject(const AttachLine& o, size_t max_words) {
  if (o.words.size() > max_words) {
    throw UsageError(Cat("unexpected argument '", o.words[max_words], "'"), "ss attach");
  }
  if (o.words.empty()) return "";
  RequireProject(o.words[0]);
  return o.words[0];
}

int SshConfig(const AttachLine& o) {
  if (o.words.size() > 1) throw UsageError("usage: ss ssh-config [SANDBOX]", "ss ssh-config");
  AttachLine copy = o;
  if (!o.words.empty()) copy.sandbox = o.words[0];
  Session s(copy);
  if (s.sandbox().State() != SandboxState::kRunning) {
    throw Error(kExitUnavailable, Cat("sandbox '", s.sandbox().name(), "' is not running"), {},
                {Cat("start it first: ss vm start --sandbox ", s.sandbox().name())});
  }
  SshEndpoint e = s.sandbox().Endpoint();
  std::cout << "Host ss-" << s.sandbox().name() << "\n"
            << "  HostName " << e.host << "\n"
            << "  Port " << e.port << "\n"
            << "  User " << e.user << "\n"
            << "  IdentityFile " << e.identity_file << "\n"
            << "  IdentitiesOnly yes\n"
            << "  UserKnownHostsFile " << e.known_hosts_file << "\n"
            << "  StrictHostKeyChecking yes\n"
            << "  PasswordAuthentication no\n"
            << "  KbdInteractiveAuthentication no\n";
  return 0;
}

int RunOptions(const AttachLine& o) {
  if (o.help) {
    std::cout << kAttachUsage;
    return 0;
  }
  if (o.verb.empty()) {
    if (o.words.empty() && !o.has_command && !o.terminal) {
      // The menu waits for an answer: only on a terminal.
      if (StdinIsTty() && StdoutIsTty()) return Menu();
      std::cerr << kAttachUsage;
      return kExitUsage;
    }
    if (o.words.empty()) {
      std::cerr << kAttachUsage;
      return kExitUsage;
    }
    return OpenProject(o);
  }
  if (o.verb == "ssh-config") return SshConfig(o);
  if (o.verb == "run") return RunFolder(o);
  if (o.verb == "shell") {
    OptionalProject(o, 0);
    Session s(o);
    if (o.has_command) return s.Stream(o.command, "~");
    return s.Interactive({"bash", "-l"}, "~");
  }
  if (o.verb == "root") {
    OptionalProject(o, 0);
    Session s(o);
    if (o.has_command) {
      std::vector<std::string> argv{"sudo", "--"};
      argv.insert(argv.end(), o.command.begin(), o.command.end());
      return s.Stream(argv, "~");
    }
    return s.Interactive({"sudo", "-i"}, "");
  }
  if (o.has_command && o.verb != "exec" && o.verb != "docker") {
    throw Error(kExitUsage, Cat("ss ", o.verb, " takes no command after '--'"), {},
                {"to run a command: ss exec [PROJECT] -- CMD"});
  }
  // The agent's interactive verbs get the browser bridge, as `ss PROJECT` does.
  if (o.verb == "login") {
    OptionalProject(o, 0);
    Session s(o);
    auto browser = StartBrowser(s.Connect(), s.config());
    return s.Interactive({"claude"}, "~");
  }
  if (o.verb == "claude" || o.verb == "claude-resume") {
    std::string project = OptionalProject(o, 1);
    Session s(o);
    std::vector<std::string> argv = s.AgentArgv();
    if (o.verb == "claude-resume") argv.push_back("--continue");
    return InProject(s, project, [&] {
      auto browser = StartBrowser(s.Connect(), s.config());
      s.AddBrowserFlag(argv, browser.get());
      return s.Interactive(argv, s.Dir(project));
    });
  }
  if (o.verb == "claude-run") {
    if (o.words.empty() || o.words.size() > 2) {
      throw UsageError("usage: ss claude-run [PROJECT] PROMPT", "ss claude-run",
                       {"quote the prompt: ss claude-run my-app 'fix the tests'"});
    }
    std::string project;
    if (o.words.size() == 2) {
      RequireProject(o.words[0]);
      project = o.words[0];
    }
    Session s(o);
    std::vector<std::string> argv = s.AgentArgv();
    argv.insert(argv.end(), {"-p", o.words.back()});
    return InProject(s, project, [&] { return s.Stream(argv, s.Dir(project)); });
  }
  if (o.verb == "exec") {
    if (!o.has_command || o.command.empty()) {
      throw UsageError("usage: ss exec [PROJECT] -- CMD [ARGS...]", "ss exec");
    }
    std::string project = OptionalProject(o, 1);
    Session s(o);
    return s.Stream(o.command, s.Dir(project));
  }
  if (o.verb == "docker") {
    std::vector<std::string> argv{"docker"};
    argv.insert(argv.end(), o.words.begin(), o.words.end());
    if (o.has_command) {
      argv.push_back("--");
      argv.insert(argv.end(), o.command.begin(), o.command.end());
    }
    Session s(o);
    return s.Stream(argv, "");
  }
  // logs
  Session s(o);
  if (!o.words.empty()) {
    std::vector<std::string> argv{"docker", "logs"};
    argv.insert(argv.end(), o.words.begin(), o.words.end());
    return s.Stream(argv, "");
  }
  ExecResult ps = s.Connect().Exec({"docker", "ps", "--format", "{{.Names}}"});
  if (ps.status != 0) {
    throw Error(kExitUnavailable, "cannot list the sandbox's containers",
                {Cat("  ", Trim(ps.err))});
  }
  int status = 0;
  for (const auto& name : SplitLines(ps.out)) {
    std::cout << "==> " << name << " <==\n" << std::flush;
    int rc = s.Stream({"docker", "logs", "--tail", "100", name}, "");
    if (rc != 0) status = rc;
  }
  if (ps.out.empty()) Note("no containers are running in the sandbox");
  return status;
}

int Complete(const Args& words) {
  if (words.size() <= 1) {
    for (const auto& n : ProjectStore().Names()) std::cout << n << "\n";
    for (const auto& v : AttachVerbs()) std::cout << v << "\n";
    return 0;
  }
  const std::string& prev = words[words.size() - 2];
  if (prev == "--sandbox") {
    for (const auto& n : KnownSandboxes()) std::cout << n << "\n";
  } else if (prev == "--profile") {
    for (const auto& n : Config::Load().ProfileNames()) std::cout << n << "\n";
  } else if (prev == "--mount" || prev == "--env" || prev == "--secret" || prev == "--no-secret" ||
             (words[0] == "run" && words.size() == 2 && !words[1].starts_with("-"))) {
    // A path or a name of the user's: the shell's own completion.
  } else if (words.size() == 2 && (words[0] == "claude" || words[0] == "claude-run" ||
                                   words[0] == "claude-resume" || words[0] == "exec")) {
    for (const auto& n : ProjectStore().Names()) std::cout << n << "\n";
  } else if (words[0] == "ssh-config" && words.size() == 2) {
    for (const auto& n : KnownSandboxes()) std::cout << n << "\n";
  } else {
    for (const char* f : {"-t", "--terminal", "--shell", "--env", "--secret", "--no-secret",
                          "--profile", "--sandbox", "--mount", "--no-mount", "--ephemeral",
                          "--keep", "--timeout", "--help", "--"}) {
      std::cout << f << "\n";
    }
    if (words[0] == "run") std::cout << "--copy\n--no-copy\n";
  }
  return 0;
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  // Sessions are what users type all day: messages say "ss", not the binary's name.
  return ss::RunTool("ss", argc, argv, [](const ss::Args& args) {
    if (!args.empty() && args[0] == "--complete") {
      return ss::Complete({args.begin() + 1, args.end()});
    }
    // The background holder of a sandbox's shared connection (see session_share.hpp).
    if (args.size() == 2 && args[0] == "--share-master") {
      ss::Sandbox sandbox(args[1], ss::Config::Load());
      return ss::ServeShared(sandbox);
    }
    return ss::RunOptions(ss::ParseAttachLine(args));
  });
}
